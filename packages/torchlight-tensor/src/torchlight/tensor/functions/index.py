"""Indexing: basic indexing is a view; advanced indexing (integer tensors, boolean masks) gathers.

Basic indices (ints, slices, ``None``, ``...``) only change ``(shape, strides, offset)``, and the
gradient is written back into a zero tensor through the same view (kept unbuilt, as an
:class:`IndexedGradient`, so that a tensor read piece by piece sums its pieces' gradients into one
buffer). Advanced indices select
arbitrary elements, so the gradient *scatter-adds* into the input: an element picked twice
receives both gradients (this is also why an embedding's repeated tokens accumulate).
"""

import numpy as np

from torchlight.autograd import Function, PartialGradient
from torchlight.autograd.grad_mode import GradMode

from .. import dtypes
from ..backend.bounds import value_range
from ..base import TensorBase
from ..creation import filled, from_numpy_on
from ..dispatch import (
    alloc,
    broadcast_shape,
    index_range,
    item_of,
    scalar_like,
    set_index_range,
    view_of,
    where_op,
)
from ..errors import DTypeError, ShapeError, TensorIndexError
from ..recorders import capturing
from .gathering import IndexSelect, add_at_index
from .pointwise import where_in_backward
from .positions import host_positions

__all__ = [
    "getitem",
    "basic_view",
    "records_view",
    "BasicIndex",
    "BasicIndexBackward",
    "IndexedGradient",
    "AdvancedIndex",
    "masked_fill",
    "expand_index",
    "nonzero",
    "masked_select",
]


_ALL = slice(None)  # x[:]: the whole of a dimension


def expand_index(x, index):
    """Normalise ``index`` to a tuple with Ellipsis expanded; report whether it is basic only.

    A 0-d int64 tensor is read as the int it holds, as PyTorch does: ``x[i]`` is then a view
    (select), not a gather. Not while a tape is being traced, where the tensor must stay an input
    so that a replay indexes with its new value (PyTorch's tracer makes the same exception).
    """
    if type(index) is int and x._td.shape:  # x[i], the commonest index: nothing to expand
        return (index,), False
    if not isinstance(index, tuple):
        index = (index,)
    advanced = False
    used = 0
    ellipses = 0
    items = None
    for k, item in enumerate(index):
        if type(item) is int or type(item) is slice:  # the usual items, before the checks below
            used += 1
            continue
        if (
            isinstance(item, TensorBase)
            and not item.shape
            and item.dtype is dtypes.int64
            and not Function.tracers
        ):
            if items is None:
                items = list(index)
            items[k] = _scalar_value(item)
            used += 1
        elif isinstance(item, (TensorBase, list, np.ndarray)):
            advanced = True
            is_bool = (
                (item.dtype is dtypes.bool_)
                if isinstance(item, TensorBase)
                else np.asarray(item).dtype == bool
            )
            used += (
                np.ndim(item.numpy() if isinstance(item, TensorBase) else item) if is_bool else 1
            )
        elif item is None:
            continue
        elif item is Ellipsis:
            ellipses += 1
        elif isinstance(item, (bool, np.bool_)):
            # x[True] adds a dim of 1, x[False] one of 0: a 0-d mask, as in PyTorch and numpy
            # (not the index 1 or 0, which bool's being an int would make it)
            if items is None:
                items = list(index)
            items[k] = from_numpy_on(np.array(item), x.backend, like=x)
            advanced = True
        elif isinstance(item, (int, np.integer, slice)):
            used += 1
        else:
            raise DTypeError(
                f"unsupported index type {type(item).__name__}: use ints, slices, None, ..., int64 or bool tensors"
            )
    if items is not None:
        index = tuple(items)
    if ellipses > 1:
        raise TensorIndexError("an index can only have a single ellipsis ('...')")
    if used > x.ndim:
        raise TensorIndexError(f"too many indices for tensor of dimension {x.ndim} (got {used})")
    if ellipses:
        k = next(k for k, i in enumerate(index) if i is Ellipsis)
        index = index[:k] + (slice(None),) * (x.ndim - used) + index[k + 1 :]
    return index, advanced


def _scalar_value(t):
    # A view keeps its base's bounds, so only a single-valued record is this tensor's value.
    lo, hi = index_range(t)
    return lo if lo == hi else item_of(t)


def basic_view(td, index):
    """Apply a basic index (ints, slices, None) to a TensorData; returns the new view."""
    if len(index) <= len(td.shape):
        ints_only = True
        for item in index:
            if type(item) is not int:
                if item != _ALL:
                    break
                ints_only = False
        else:  # ints and whole dims (x[i, j], x[i, 0, :, p] in a batch loop): one view
            return td.select_leading(index) if ints_only else td.select_ints(index)
    dim = 0
    for item in index:
        if item is None:
            td = td.unsqueeze(dim)
            dim += 1
        elif isinstance(item, slice):
            if item != _ALL:  # a full slice (x[:, i]) leaves its dim as it is
                td = td.slice(dim, item.start, item.stop, item.step)
            dim += 1
        else:
            td = td.select(dim, int(item))  # which checks the index
    return td


def records_view(x):
    """Whether a view of ``x`` must be recorded (a node for its gradient, or an op on a trace's
    tape); when not, a view is :func:`~torchlight.tensor.dispatch.view_of` alone."""
    return x.requires_grad and GradMode.enabled or bool(Function.tracers)


def _basic(x, index):
    """``x[index]`` for an expanded basic index: a view of ``x``, with no node."""
    return view_of(x, basic_view(x._td, index))


class BasicIndex(Function):
    """``x[index]`` for an expanded basic ``index`` (ints, slices, ``None``): a view; the
    gradient is written back at the same view of zeros (:class:`BasicIndexBackward`).

    Handed the partial gradient of ``x[i][j]`` (``partial_grad``) when ``index`` is ints only,
    its gradient is that of ``x[i, j]``: the indices chain (the ints consume the leading dims, so
    ``j`` indexes what is left), and no zeros of ``x[i]``'s size are built in between.
    """

    direct_forward = True

    partial_grad = True

    @staticmethod
    def forward(ctx, x, index):
        ctx.shape, ctx.index = x.shape, index
        return _basic(x, index)

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, PartialGradient):
            if isinstance(g, IndexedGradient) and all(type(i) is int for i in ctx.index):
                return IndexedGradient(g.g, ctx.shape, ctx.index + g.index), None
            g = g.dense()
        if GradMode.enabled:  # create_graph: a recorded node, differentiable again
            return BasicIndexBackward.apply(g, ctx.shape, ctx.index), None
        return IndexedGradient(g, ctx.shape, ctx.index), None


def _scattered(g, shape, index):
    """``g`` written into zeros of ``shape`` at the basic ``index``."""
    out = filled(shape, 0, g.dtype, g.backend, like=g)
    g.backend.map("copy", g._td, basic_view(out._td, index))
    return out


class IndexedGradient(PartialGradient):
    """The gradient of ``x[index]`` (a basic index) with respect to ``x``: ``g`` at ``index``,
    zeros elsewhere, not built until needed (see :mod:`torchlight.autograd.accumulation`).

    The engine adds it into the part of a gradient buffer that ``index`` views, so ``x[0]``,
    ``x[1]``, ... of one ``x`` sum into one buffer instead of a zero tensor of ``x``'s size each.

    >>> x = tl.zeros(3, requires_grad=True)
    >>> (x[0] * 2 + x[2] * 5 + x[0]).backward()
    >>> x.grad
    tensor([3., 0., 5.])
    """

    __slots__ = ("g", "shape", "index")

    def __init__(self, g, shape, index):
        self.g, self.shape, self.index = g, shape, index

    def dense(self):
        """The whole gradient: zeros of ``x``'s shape with ``g`` at ``index``."""
        return _scattered(self.g, self.shape, self.index)

    def add_into(self, buffer):
        """``buffer[index] += g`` in place (``buffer`` a gradient of ``x``'s shape that the engine
        owns); a new sum where the dtypes or shapes differ, so nothing is cast or broadcast."""
        g = self.g
        if buffer.dtype is not g.dtype or buffer._td.shape != self.shape:
            return buffer + self.dense()
        part = basic_view(buffer._td, self.index)
        g.backend.zip("add", part, g._td, part)
        return buffer


class BasicIndexBackward(Function):
    """The adjoint of :class:`BasicIndex`: ``g`` written into zeros of ``shape`` at ``index``.

    A Function of its own so that a gradient taken with ``create_graph=True`` stays
    differentiable (its backward reads the same view back); in a plain backward nothing
    records it, and ``apply`` runs its forward alone.
    """

    @staticmethod
    def forward(ctx, g, shape, index):
        ctx.index = index
        return _scattered(g, shape, index)

    @staticmethod
    def backward(ctx, gg):
        return BasicIndex.apply(gg, ctx.index), None, None


class AdvancedIndex(Function):
    """Gather by flat positions (numpy computes which elements any advanced index selects).

    ``index`` is the expanded index tuple (tensors included): the positions are computed inside
    forward, so a traced tape recomputes them from the replayed index tensors."""

    @staticmethod
    def forward(ctx, x, index):
        positions = _positions(x, index)
        ctx.shape = x.shape
        ctx.save_for_backward(positions)
        flat = x.reshape(-1)
        pos = positions.reshape(-1)  # take's index is 1-D (the contract)
        out = alloc(pos.shape, x.dtype, x.backend, x)
        x.backend.take(flat._td, 0, pos._td, out._td)
        return out.reshape(positions.shape)

    @staticmethod
    def backward(ctx, g):
        (positions,) = ctx.saved_tensors
        n = 1
        for s in ctx.shape:
            n *= s
        flat = g.contiguous().reshape(-1)
        out = add_at_index(flat, (n,), 0, positions.reshape(-1), "put_add")
        return out.reshape(ctx.shape), None


def getitem(x, index):
    """``x[index]`` with numpy's rules: basic indexing (ints, slices, ``None``, ``...``) returns a view;
    advanced indexing (int or bool tensors, lists) gathers a copy. Gradients flow either way.
    """
    index, advanced = expand_index(x, index)
    if not advanced:
        if not records_view(x):
            return _basic(x, index)  # nothing records it: BasicIndex's forward alone
        return BasicIndex.apply_unary(x, index)
    rows = _rows(x, index)
    if rows is not None:
        return rows
    return AdvancedIndex.apply(x, index)


def _rows(x, index):
    """``x[idx]`` as :class:`~torchlight.tensor.functions.gathering.IndexSelect` along dim 0 when
    ``idx`` is an int64 tensor of in-range rows followed by full slices only (a batch drawn from a
    dataset, a lookup table's rows); None otherwise.

    The general gather computes the flat position of every element it selects; whole rows need
    only the row numbers (measured: 64 rows of a 5000-element tensor 46 -> 20 µs). A negative or
    out-of-range index, a mix of backends, or a trace (whose replay may see other values) takes
    the general path, which wraps negatives and reports a bad index.
    """
    idx = index[0]
    if (
        not isinstance(idx, TensorBase)
        or idx.dtype is not dtypes.int64
        or not idx.shape
        or idx.backend is not x.backend
        or Function.tracers
    ):
        return None
    for item in index[1:]:
        if not isinstance(item, slice) or item != _ALL:
            return None
    td = idx._td
    if len(td.shape) == 1:
        flat = idx
    elif td.is_contiguous():  # the index needs no node of its own: it has no gradient
        flat = view_of(idx, td.reshaped((td.size,)))
    else:
        flat = idx.reshape(-1)
    if td.size:
        if capturing():  # a read is refused there: the record (a replay's kernel checks anew)
            lo, hi = index_range(idx)
        else:
            # the values as they are now, not the recorded range: x[idx] has always read its
            # index back (one changed behind the core's back through a shared numpy view included)
            lo, hi = value_range(idx.backend.to_numpy(td))
        if lo < 0 or hi >= x.shape[0]:
            return None
        set_index_range(flat, lo, hi)  # IndexSelect's check then reads nothing again
    rows = IndexSelect.apply(x, 0, flat)
    return rows if flat is idx else rows.reshape(idx.shape + x.shape[1:])


def _positions(x, index):
    """The flat positions (an int64 tensor) that an expanded advanced ``index`` selects in ``x``."""
    # np.array(order="C"), not np.ascontiguousarray, which turns a 0-d result into shape (1,)
    return from_numpy_on(np.array(host_positions(x, index), order="C"), x.backend, like=x)


def nonzero(x, as_tuple=False):
    """Indices of the non-zero elements: an int64 ``(count, ndim)`` tensor in row-major order,
    or with ``as_tuple=True`` one 1-D index tensor per dim (usable as ``x[...]``).

    >>> import torchlight as tl
    >>> tl.tensor([[0, 3], [5, 0]]).nonzero().tolist()
    [[0, 1], [1, 0]]
    """
    arr = x.backend.to_numpy(x._td)
    if arr.ndim == 0:  # PyTorch: shape (1, 0) or (0, 0)
        count = int(bool(arr))
        if as_tuple:
            return (from_numpy_on(np.zeros(count, dtype=np.int64), x.backend, like=x),)
        return from_numpy_on(np.zeros((count, 0), dtype=np.int64), x.backend, like=x)
    found = np.nonzero(arr)
    if as_tuple:
        return tuple(
            from_numpy_on(np.ascontiguousarray(i, dtype=np.int64), x.backend, like=x) for i in found
        )
    return from_numpy_on(
        np.ascontiguousarray(np.stack(found, 1), dtype=np.int64), x.backend, like=x
    )


def masked_select(x, mask):
    """The elements of ``x`` where ``mask`` (bool, broadcastable) is True, as a 1-D tensor.

    >>> import torchlight as tl
    >>> x = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> tl.masked_select(x, x > 2).tolist()
    [3.0, 4.0]
    """
    if mask.dtype is not dtypes.bool_:
        raise DTypeError(f"masked_select: mask must be a bool tensor, got {mask.dtype}")
    shape = broadcast_shape(x.shape, mask.shape, "masked_select")
    return getitem(x.expand(shape), mask.expand(shape))


class MaskedFill(Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        ctx.shape = x.shape
        out = where_op(mask, scalar_like(value, x), x)
        if out.shape != x.shape:
            raise ShapeError(
                f"masked_fill: mask of shape {mask.shape} would broadcast the input {x.shape} to {out.shape}"
            )
        return out

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return where_in_backward(mask, scalar_like(0, g), g), None, None


def masked_fill(x, mask, value):
    """``x`` with ``value`` where ``mask`` is true; behind :func:`torchlight.masked_fill`."""
    if mask.dtype is not dtypes.bool_:
        raise DTypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype}")
    if hasattr(value, "item"):
        value = value.item()
    return MaskedFill.apply(x, mask, value)
