"""``DistributedSampler``: each rank's disjoint shard of a map-style dataset, epoch after epoch.

The order of epoch ``k`` follows torchlight-data's seeding story (:mod:`torchlight.data.seeding`):
with ``shuffle=True`` it is the permutation drawn from ``default_rng([seed, k, 0])`` — a pure
function of ``(seed, epoch)``, the same on every rank without any communication. Each rank then
takes every ``num_replicas``-th index starting at its ``rank``.

As in PyTorch:

* without ``drop_last`` the permutation is padded by repeating its beginning until its length is a
  multiple of ``num_replicas``, so every rank gets ``ceil(n / num_replicas)`` indices (a few samples
  are seen twice per epoch);
* with ``drop_last`` the tail is dropped instead: ``floor(n / num_replicas)`` each, all distinct;
* unlike the samplers of torchlight-data the epoch does **not** advance by itself on ``iter()``:
  call ``set_epoch(epoch)`` at the start of every epoch (all ranks must agree on it), otherwise
  every epoch repeats the same order. ``seed`` must be the same on every rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

import numpy as np

from torchlight.data.sampler import Sampler
from torchlight.data.seeding import check_seed_args, epoch_rng

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of ``dataset`` that rank ``rank`` of ``num_replicas`` visits this epoch.

    ``num_replicas`` / ``rank`` default to :func:`~torchlight.distributed.world_size` /
    :func:`~torchlight.distributed.rank` (which start MPI). Pass them explicitly to use the
    sampler without MPI (tests, or sharding by hand).
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ):
        if num_replicas is None or rank is None:
            from . import comm

            num_replicas = comm.world_size() if num_replicas is None else num_replicas
            rank = comm.rank() if rank is None else rank
        for name, v in (("num_replicas", num_replicas), ("rank", rank)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {type(v).__name__}")
        if num_replicas < 1:
            raise ValueError(f"num_replicas must be >= 1, got {num_replicas}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"invalid rank {rank}: it must be in [0, {num_replicas - 1}]")
        check_seed_args(seed, None)
        if seed is None:
            raise ValueError("DistributedSampler needs an int seed (the same on every rank)")
        self.dataset = dataset
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0

    @property
    def num_samples(self) -> int:
        """Indices per rank per epoch (read lazily: the dataset may grow)."""
        n = len(self.dataset)
        if self.drop_last:
            return n // self.num_replicas
        return math.ceil(n / self.num_replicas)

    @property
    def total_size(self) -> int:
        """``num_samples * num_replicas``: the padded (or trimmed) number of indices shared out
        across the ranks each epoch.
        """
        return self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Use the order of ``epoch`` for the following ``iter()`` calls (call it every epoch)."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise ValueError(f"epoch must be a non-negative int, got {epoch!r}")
        self.epoch = int(epoch)

    def global_order(self) -> np.ndarray:
        """This epoch's order of all ``total_size`` indices (padded or cut), before sharding."""
        n = len(self.dataset)
        if self.shuffle:
            order = epoch_rng(self.seed, self.epoch).permutation(n)
        else:
            order = np.arange(n)
        total = self.total_size
        if total <= n:
            return order[:total]
        if n == 0:
            return order
        reps = -(-total // n)
        return np.tile(order, reps)[:total]

    def __iter__(self) -> Iterator[int]:
        return iter(self.global_order()[self.rank : self.total_size : self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples

    def __repr__(self):
        return (
            f"DistributedSampler(n={len(self.dataset)}, rank={self.rank}/{self.num_replicas}, "
            f"shuffle={self.shuffle}, seed={self.seed}, epoch={self.epoch}, "
            f"drop_last={self.drop_last})"
        )
