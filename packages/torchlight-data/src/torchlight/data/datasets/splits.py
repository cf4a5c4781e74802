"""Deterministic train/validation splits of corpora.

Both helpers are pure functions of their arguments: the same input and seed give the same split
on every machine, so a validation score is comparable across runs and across people.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

__all__ = ["train_val_split", "split_text"]

T = TypeVar("T")


def _val_count(n: int, val_fraction: float) -> int:
    if not 0.0 <= val_fraction <= 1.0:
        raise ValueError(f"val_fraction must be in [0, 1], got {val_fraction}")
    return int(round(n * val_fraction))


def train_val_split(
    items: Sequence[T], val_fraction: float = 0.1, seed: int = 0
) -> tuple[list[T], list[T]]:
    """Shuffle ``items`` with ``numpy.random.default_rng(seed)`` and cut off ``val_fraction``.

    Returns ``(train, val)`` as lists, both in the shuffled order; ``len(val)`` is
    ``round(len(items) * val_fraction)``. Shuffling first matters for files sorted by length or
    grouped by source (eng-fra is both sorted by length; sentiment is grouped by site).
    """
    n = len(items)
    n_val = _val_count(n, val_fraction)
    perm = np.random.default_rng(seed).permutation(n).tolist()
    return [items[i] for i in perm[n_val:]], [items[i] for i in perm[:n_val]]


def split_text(text: str, val_fraction: float = 0.1) -> tuple[str, str]:
    """``(text[:cut], text[cut:])`` with the last ``val_fraction`` of the characters for validation.

    A contiguous cut, not a shuffle: a language model validated on held-out *passages* measures
    generalization; one validated on shuffled windows of the training text does not.
    """
    cut = len(text) - _val_count(len(text), val_fraction)
    return text[:cut], text[cut:]
