"""Ordering along a dim: ``sort``, ``argsort``, ``topk``.

The order is computed on the host (``np.argsort``; one device→host read of the input), and the
values are then *gathered* from the input with those indices. So the values are differentiable
for free: the gradient of ``gather`` scatters ``dL/dvalues`` back to the positions they came
from, which is exactly the derivative of a permutation (or a selection, for ``topk``).
NaN sorts as the largest value, as in PyTorch.
"""

from collections import namedtuple

import numpy as np

from .. import dtypes
from ..creation import from_numpy_on
from ..dispatch import normalize_dim, set_index_range
from ..errors import TensorIndexError

__all__ = ["SortResult", "TopKResult", "sort", "argsort", "topk"]

# The class names are PyTorch's (``torch.return_types.sort`` reprs as ``sort(values=..., ...)``).
SortResult = namedtuple("sort", ["values", "indices"])  # type: ignore[name-match]
SortResult.__doc__ = "``(values, indices)`` returned by :func:`sort` (unpackable, or by name)."
TopKResult = namedtuple("topk", ["values", "indices"])  # type: ignore[name-match]
TopKResult.__doc__ = "``(values, indices)`` returned by :func:`topk` (unpackable, or by name)."


def _order(arr, axis, descending, stable):
    """Indices that sort ``arr`` along ``axis``; descending keeps equal elements in order."""
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int8)
    if not descending:
        return np.argsort(arr, axis=axis, kind="stable" if stable else None)
    # Stable descending: sort the reversed array ascending (ties: later first), map back to
    # original positions, reverse: largest first, ties in their original order.
    n = arr.shape[axis]
    rev = np.argsort(np.flip(arr, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - rev, axis)


def _indices_tensor(idx, like, size):
    t = from_numpy_on(
        np.ascontiguousarray(idx, dtype=np.int64), like.backend, dtypes.int64, like=like
    )
    if idx.size:
        set_index_range(t, 0, size - 1)
    return t


def _sorted_indices(x, dim, descending, stable):
    arr = x.backend.to_numpy(x._td)
    return _indices_tensor(_order(arr, dim, descending, stable), x, x.shape[dim])


def sort(x, dim=-1, descending=False, stable=False):
    """Sort ``x`` along ``dim``: ``(values, indices)`` with ``values == x.gather(dim, indices)``.

    ``descending=True`` puts the largest first. Equal elements keep their original order
    (the sort is always stable, which ``stable=True`` promises). Values carry gradients.

    >>> import torchlight as tl
    >>> v, i = tl.sort(tl.tensor([3.0, 1.0, 2.0]))
    >>> v.tolist(), i.tolist()
    ([1.0, 2.0, 3.0], [1, 2, 0])
    """
    if x.ndim == 0:
        normalize_dim(dim, 0)
        return SortResult(x.clone(), _indices_tensor(np.zeros((), np.int64), x, 1))
    dim = normalize_dim(dim, x.ndim)
    idx = _sorted_indices(x, dim, descending, stable)
    return SortResult(x.gather(dim, idx), idx)


def argsort(x, dim=-1, descending=False, stable=False):
    """The int64 indices that sort ``x`` along ``dim`` (``sort(...).indices``).

    >>> import torchlight as tl
    >>> tl.argsort(tl.tensor([[3, 1, 2]]), dim=1, descending=True).tolist()
    [[0, 2, 1]]
    """
    return sort(x, dim, descending, stable).indices


def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's parameter name
    """The ``k`` largest (``largest=False``: smallest) elements along ``dim``.

    Returns ``(values, indices)``, each of ``x``'s shape with ``dim`` of size ``k``; values are
    in sorted order (largest first for ``largest=True``; ``sorted=False`` gives the same order,
    which PyTorch allows). Values carry gradients: each selected element receives its own.

    >>> import torchlight as tl
    >>> r = tl.tensor([1.0, 5.0, 3.0, 4.0]).topk(2)
    >>> r.values.tolist(), r.indices.tolist()
    ([5.0, 4.0], [1, 3])
    """
    k = int(k)
    size = x.shape[normalize_dim(dim, x.ndim)] if x.ndim else 1
    if not 0 <= k <= size:
        raise TensorIndexError(
            f"topk: k={k} is out of range for a dimension of size {size} (need 0 <= k <= {size})"
        )
    if x.ndim == 0:
        if k:
            return TopKResult(*sort(x, dim))
        return TopKResult(x.reshape(1)[:0], _indices_tensor(np.zeros(0, np.int64), x, 1))
    dim = normalize_dim(dim, x.ndim)
    arr = x.backend.to_numpy(x._td)
    order = _order(arr, dim, largest, True)
    idx = _indices_tensor(np.take(order, np.arange(k), axis=dim), x, size)
    return TopKResult(x.gather(dim, idx), idx)
