"""Datasets: what a DataLoader reads samples from.

A *map-style* dataset has ``__getitem__(i)`` and ``__len__``; an *iterable* dataset has
``__iter__`` (a stream: a file read line by line, a generator of synthetic samples). Anything with
those methods works, subclassing :class:`Dataset` / :class:`IterableDataset` only adds ``+``
(concatenation) and makes the intent explicit.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

import torchlight as tl

from .seeding import as_numpy_rng, check_seed_args, fresh_seed

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "random_split",
    "gathers_batches",
]


class Dataset:
    """Base class of map-style datasets: subclasses implement ``__getitem__`` and ``__len__``.

    >>> from torchlight.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, i):
    ...         return i * i
    >>> [Squares()[i] for i in range(4)]
    [0, 1, 4, 9]
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Base class of stream datasets: subclasses implement ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset; use
    :func:`torchlight.data.get_worker_info` inside ``__iter__`` to give each worker a different
    shard, or every sample is produced ``num_workers`` times (as in PyTorch).

    >>> from torchlight.data import DataLoader, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self):
    ...         return iter(range(3))
    >>> list(DataLoader(Count(), batch_size=2))
    [tensor([0, 1]), tensor([2])]
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        raise TypeError("IterableDataset does not support + (concatenation needs random access)")


def _as_index(index, n: int, what: str) -> int:
    """A bounds-checked non-negative int index (negative ones count from the end, like lists)."""
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"{what} indices must be integers, not {type(index).__name__}")
    i = int(index)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"{what} index {int(index)} is out of range for length {n}")
    return i


class TensorDataset(Dataset):
    """Samples are the rows of equally long tensors: ``ds[i] == (t0[i], t1[i], ...)``.

    Numpy arrays are accepted and wrapped without copying (``tl.from_numpy``). Indexing returns
    views of row ``i``; the whole tensor is never copied per sample. ``ds.tensors`` gives the full
    tensors back (full-batch training).

    >>> from torchlight.data import TensorDataset
    >>> ds = TensorDataset(tl.arange(10.0).view(5, 2), tl.tensor([0, 1, 0, 1, 1]))
    >>> len(ds), ds[1]
    (5, (tensor([2., 3.]), tensor(1)))
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        converted = []
        for k, t in enumerate(tensors):
            if isinstance(t, np.ndarray):
                t = tl.from_numpy(t)
            elif not isinstance(t, tl.Tensor):
                raise TypeError(
                    f"TensorDataset argument {k} is a {type(t).__name__}, not a tensor "
                    "or numpy array"
                )
            if len(t.shape) == 0:
                raise ValueError(f"TensorDataset argument {k} is a 0-d tensor; samples are rows")
            converted.append(t)
        sizes = [t.shape[0] for t in converted]
        if len(set(sizes)) != 1:
            raise ValueError(
                f"TensorDataset tensors must have the same first dimension, got {sizes}"
            )
        self.tensors: tuple = tuple(converted)

    def __getitem__(self, index):
        i = _as_index(index, len(self), "TensorDataset")
        return tuple(t[i] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def gather(self, indices: Sequence[int]) -> tuple:
        """Rows ``indices`` of each tensor, as one gather per tensor.

        Equal to stacking ``ds[i]`` for each ``i`` (what default collation does) but one indexing
        op instead of ``len(indices)`` views plus a stack; the DataLoader uses it when it can.
        """
        n = len(self)
        idx = tl.tensor([_as_index(i, n, "TensorDataset") for i in indices], dtype=tl.int64)
        return tuple(t[idx] for t in self.tensors)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    >>> from torchlight.data import Subset
    >>> Subset(["a", "b", "c", "d"], [3, 0])[0]
    'd'
    """

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, index):
        return self.dataset[self.indices[_as_index(index, len(self.indices), "Subset")]]

    def __len__(self) -> int:
        return len(self.indices)

    def gather(self, indices: Sequence[int]) -> tuple:
        """Samples ``indices`` as the underlying dataset's :meth:`TensorDataset.gather` of the
        rows they stand for (a ``random_split`` of a TensorDataset batches in one gather too);
        only for a dataset that :func:`gathers_batches`."""
        n = len(self.indices)
        return self.dataset.gather([self.indices[_as_index(i, n, "Subset")] for i in indices])


def gathers_batches(dataset) -> bool:
    """True when ``dataset.gather(indices)`` gives what default collation of ``dataset[i]`` for
    each index would: a :class:`TensorDataset`, or a :class:`Subset` of one (exactly those
    classes: a subclass may override ``__getitem__``)."""
    while type(dataset) is Subset:
        dataset = dataset.dataset
    return type(dataset) is TensorDataset


class ConcatDataset(Dataset):
    """Several map-style datasets, one after the other.

    >>> from torchlight.data import ConcatDataset
    >>> ds = ConcatDataset([[1, 2], [3, 4, 5]])
    >>> len(ds), ds[2]
    (5, 3)
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes: list[int] = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        i = _as_index(index, len(self), "ConcatDataset")
        which = bisect.bisect_right(self.cumulative_sizes, i)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][i - start]


def _split_lengths(n: int, lengths: Sequence[float]) -> list[int]:
    if lengths and all(
        isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in lengths
    ):
        if any(x < 0 for x in lengths) or sum(lengths) != n:
            raise ValueError(
                f"random_split lengths {list(lengths)} must be non-negative and sum to "
                f"the dataset length {n}"
            )
        return [int(x) for x in lengths]
    if (
        not lengths
        or any(not 0 <= x <= 1 for x in lengths)
        or not math.isclose(sum(lengths), 1.0, abs_tol=1e-6)
    ):
        raise ValueError(
            f"random_split lengths {list(lengths)} must be ints summing to {n} or "
            "fractions in [0, 1] summing to 1"
        )
    # Fractions: floor each, then hand the remainder out one by one from the first split (PyTorch).
    counts = [int(math.floor(n * f)) for f in lengths]
    for k in range(n - sum(counts)):
        counts[k % len(counts)] += 1
    return counts


def random_split(
    dataset, lengths: Sequence[float], generator=None, *, seed: int | None = None
) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random :class:`Subset` of the given ``lengths``.

    ``lengths`` are counts summing to ``len(dataset)`` or fractions summing to 1. The same
    ``seed`` always gives the same split; without seed or generator the split is drawn from
    torchlight's global random state (``tl.manual_seed``).

    >>> from torchlight.data import random_split
    >>> train, val = random_split(range(10), [0.8, 0.2], seed=0)
    >>> len(train), len(val), sorted([*train, *val]) == list(range(10))
    (8, 2, True)
    """
    check_seed_args(seed, generator)
    n = len(dataset)
    counts = _split_lengths(n, lengths)
    if seed is not None:
        rng = np.random.default_rng(seed)
    elif generator is not None:
        rng = as_numpy_rng(generator)
    else:
        rng = np.random.default_rng(fresh_seed())
    perm = rng.permutation(n).tolist()
    out, start = [], 0
    for c in counts:
        out.append(Subset(dataset, perm[start : start + c]))
        start += c
    return out
