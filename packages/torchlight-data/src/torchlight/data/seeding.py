"""Where the randomness of samplers, splits and workers comes from.

Every random component of :mod:`torchlight.data` takes either ``seed=`` (an int) or
``generator=`` (a ``tl.Generator`` or ``numpy.random.Generator``), never both:

* ``seed=s`` — **reproducible, and different every epoch.** The order of epoch ``k`` is drawn from
  ``numpy.random.default_rng([s, k, stream])``: a pure function of ``(seed, epoch)``. Two loaders built
  with the same seed replay the same sequence of epoch orders, each epoch differs from the last,
  and ``set_epoch(k)`` jumps straight to epoch ``k`` (resuming a run, or keeping the replicas of a
  data-parallel job in step).
* ``generator=g`` — the caller's stateful generator is consumed: each epoch draws a seed from it
  and so differs. Reproducible exactly when ``g`` was seeded.
* neither — each epoch takes a fresh seed from torchlight's global random state, so
  ``tl.manual_seed(0)`` at the top of a script makes the whole run repeatable (as in PyTorch).
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_seed_args", "as_numpy_rng", "fresh_seed", "epoch_rng", "EpochRandomness"]


def check_seed_args(seed, generator) -> None:
    """Reject ambiguous or mistyped randomness arguments early, with a message saying why."""
    if seed is not None and generator is not None:
        raise ValueError("pass either seed= or generator=, not both")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed is not None and seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    if generator is not None and not isinstance(as_numpy_rng(generator), np.random.Generator):
        raise TypeError(
            "generator must be a torchlight.Generator or a numpy.random.Generator (e.g. "
            f"tl.Generator().manual_seed(0)); got {type(generator).__name__}. To seed with an int, "
            "pass seed= instead."
        )


def as_numpy_rng(generator):
    """The numpy stream behind ``generator`` (``tl.Generator`` keeps one in ``.rng``).

    Looked up at each use, because ``tl.Generator.manual_seed`` replaces that stream.
    """
    return getattr(generator, "rng", generator)


# Fallback global state, used only when torchlight's own is unavailable. It is module-level so that
# successive fresh seeds differ within one process.
_FALLBACK = np.random.default_rng()


def fresh_seed() -> int:
    """A 63-bit seed from torchlight's global random state (what ``tl.manual_seed`` sets)."""
    try:
        import torchlight as tl

        gen = getattr(tl, "default_generator", None)
        if gen is None:  # not re-exported at the top level: take it from its defining module
            from torchlight.tensor import random as tl_random

            gen = getattr(tl_random, "default_generator", None)
        rng = as_numpy_rng(gen)
        if isinstance(rng, np.random.Generator):
            return int(rng.integers(0, 2**63 - 1))
    except Exception:  # noqa: BLE001 - an unusable global state falls back, it never fails a load
        pass
    return int(_FALLBACK.integers(0, 2**63 - 1))


def epoch_rng(seed: int, epoch: int, stream: int = 0) -> np.random.Generator:
    """The generator for ``(seed, epoch)``; ``stream`` separates independent uses in one epoch."""
    return np.random.default_rng([int(seed), int(epoch), int(stream)])


class EpochRandomness:
    """The per-epoch generator of one random component (a sampler, a loader's worker seeds).

    Each call to :meth:`next_epoch` returns the generator for the next epoch and advances the
    epoch counter; :meth:`set_epoch` moves the counter (only meaningful with ``seed=``).
    """

    def __init__(self, seed: int | None = None, generator=None):
        check_seed_args(seed, generator)
        self.seed = None if seed is None else int(seed)
        self.generator = generator
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Make the next :meth:`next_epoch` produce the randomness of epoch ``epoch`` (to resume a run)."""
        if epoch < 0:
            raise ValueError(f"epoch must be non-negative, got {epoch}")
        self.epoch = int(epoch)

    def next_epoch(self, stream: int = 0) -> np.random.Generator:
        """A numpy generator for the current epoch (and ``stream``), then move to the next epoch.
        With a ``seed`` it depends only on ``(seed, epoch, stream)``, so a resumed run repeats it.
        """
        epoch = self.epoch
        self.epoch += 1
        if self.seed is not None:
            return epoch_rng(self.seed, epoch, stream)
        if self.generator is not None:
            # Spawning a child keeps the caller's generator advancing once per epoch, however many
            # numbers the epoch itself consumes.
            return np.random.default_rng(as_numpy_rng(self.generator).integers(0, 2**63 - 1))
        return np.random.default_rng(fresh_seed())

    def __repr__(self):
        src = (
            f"seed={self.seed}"
            if self.seed is not None
            else ("generator" if self.generator is not None else "global")
        )
        return f"EpochRandomness({src}, epoch={self.epoch})"
