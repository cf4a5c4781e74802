"""Samplers: which dataset indices a loader visits, and in what order.

A sampler is any iterable of indices with a ``__len__``; a batch sampler is an iterable of lists of
indices. The random ones follow the epoch story of :mod:`torchlight.data.seeding`: with ``seed=``
each ``iter()`` is a new epoch whose order is a pure function of ``(seed, epoch)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized

import numpy as np

from .seeding import EpochRandomness

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]

_CHUNK = 4096  # indices drawn at once by RandomSampler(replacement=True): bounded memory, few numpy calls


class Sampler:
    """Base class: subclasses implement ``__iter__`` (and ``__len__`` when the length is known)."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def set_epoch(self, epoch: int) -> None:
        """Jump to ``epoch`` (a no-op for deterministic samplers)."""


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``, every epoch.

    >>> from torchlight.data import SequentialSampler
    >>> list(SequentialSampler(range(3)))
    [0, 1, 2]
    """

    def __init__(self, data_source: Sized):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class _RandomBase(Sampler):
    """Shared epoch bookkeeping of the random samplers."""

    def __init__(self, seed, generator):
        self._randomness = EpochRandomness(seed, generator)

    @property
    def seed(self) -> int | None:
        return self._randomness.seed

    @property
    def epoch(self) -> int:
        """The epoch the next ``iter()`` will produce."""
        return self._randomness.epoch

    def set_epoch(self, epoch: int) -> None:
        self._randomness.set_epoch(epoch)


class RandomSampler(_RandomBase):
    """A random permutation of the dataset each epoch (or draws with replacement).

    ``num_samples`` defaults to ``len(data_source)``; without replacement, a larger value chains
    several independent permutations (as PyTorch does). Indices are drawn lazily while iterating,
    so memory stays bounded however large ``num_samples`` is.

    >>> from torchlight.data import RandomSampler
    >>> sorted(RandomSampler(range(5), seed=0))
    [0, 1, 2, 3, 4]
    >>> s = RandomSampler(range(10), replacement=True, num_samples=10**10, seed=0)
    >>> it = iter(s); idx = [next(it) for _ in range(5)]
    >>> len(s), all(0 <= i < 10 for i in idx)
    (10000000000, True)
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        *,
        seed: int | None = None,
        generator=None,
    ):
        super().__init__(seed, generator)
        self.data_source = data_source
        self.replacement = bool(replacement)
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")

    @property
    def num_samples(self) -> int:
        """How many indices one epoch yields (``len(data_source)`` unless ``num_samples`` was given)."""
        # Read lazily: the dataset may grow between construction and iteration.
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # The epoch's stream is taken now (iter() starts an epoch); the indices are drawn lazily,
        # a chunk at a time, so num_samples may be far larger than memory (e.g. 10**10 draws).
        return self._draw(self._randomness.next_epoch(), len(self.data_source), self.num_samples)

    def _draw(self, rng, n: int, k: int) -> Iterator[int]:
        if n == 0:
            return
        if self.replacement:
            for start in range(0, k, _CHUNK):
                yield from rng.integers(0, n, size=min(_CHUNK, k - start)).tolist()
        else:
            for start in range(0, k, n):
                yield from rng.permutation(n)[: k - start].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_RandomBase):
    """The given indices in a random order each epoch.

    >>> from torchlight.data import SubsetRandomSampler
    >>> sorted(SubsetRandomSampler([2, 5, 7], seed=0))
    [2, 5, 7]
    """

    def __init__(self, indices, *, seed: int | None = None, generator=None):
        super().__init__(seed, generator)
        self.indices = list(indices)

    def __iter__(self) -> Iterator[int]:
        perm = self._randomness.next_epoch().permutation(len(self.indices))
        return iter([self.indices[i] for i in perm.tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_RandomBase):
    """``num_samples`` indices ``i`` drawn with probability ``weights[i] / sum(weights)``.

    Weights need not sum to one. Without replacement, at most as many samples as there are
    non-zero weights can be drawn. Typical use: rebalancing classes with weights ``1 / count``.

    >>> from torchlight.data import WeightedRandomSampler
    >>> list(WeightedRandomSampler([0.0, 1.0, 0.0], num_samples=3, seed=0))
    [1, 1, 1]
    """

    def __init__(
        self,
        weights,
        num_samples: int,
        replacement: bool = True,
        *,
        seed: int | None = None,
        generator=None,
    ):
        super().__init__(seed, generator)
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1 or w.size == 0:
            raise ValueError(f"weights must be a non-empty 1-D sequence, got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite and non-negative")
        if w.sum() <= 0:
            raise ValueError("weights must not all be zero")
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(
                f"cannot draw {num_samples} samples without replacement from "
                f"{np.count_nonzero(w)} non-zero weights"
            )
        self.weights = w
        self.num_samples = num_samples
        self.replacement = bool(replacement)

    def __iter__(self) -> Iterator[int]:
        rng = self._randomness.next_epoch()
        p = self.weights / self.weights.sum()
        return iter(
            rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist()
        )

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    The last, short batch is kept unless ``drop_last``; ``len()`` is
    ``floor(n / batch_size)`` with ``drop_last`` and ``ceil(n / batch_size)`` without.

    >>> from torchlight.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"drop_last must be a bool, got {drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    # a sampler of batches (PyTorch's Sampler[list[int]]), where Sampler yields indices
    def __iter__(self) -> Iterator[list[int]]:  # type: ignore[override]
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)
