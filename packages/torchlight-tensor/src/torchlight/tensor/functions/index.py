"""Indexing: basic indexing is a view; advanced indexing (integer tensors, boolean masks) gathers.

Basic indices (ints, slices, ``None``, ``...``) only change ``(shape, strides, offset)``, and the
gradient is written back into a zero tensor through the same view. Advanced indices select
arbitrary elements, so the gradient *scatter-adds* into the input: an element picked twice
receives both gradients (this is also why an embedding's repeated tokens accumulate).
"""

import numpy as np

from torchlight.autograd import Function

from .. import dtypes
from ..base import TensorBase
from ..creation import filled, from_numpy_on
from ..dispatch import (
    alloc,
    broadcast_shape,
    index_range,
    normalize_dim,
    same_backend,
    scalar_like,
    view_of,
    where_op,
)
from ..errors import DTypeError, ShapeError, TensorIndexError
from .pointwise import where_in_backward

__all__ = [
    "getitem",
    "basic_view",
    "BasicIndex",
    "BasicIndexBackward",
    "AddAtIndex",
    "IndexSelect",
    "Gather",
    "ScatterAdd",
    "index_select",
    "gather",
    "scatter_add",
    "masked_fill",
    "embedding",
    "check_index",
    "expand_index",
    "host_positions",
    "scatter",
    "nonzero",
    "masked_select",
]


def check_index(index, size, what="index"):
    """Integer index tensor of ``index_select``/``gather``/``scatter_add``: int64, values within
    ``[0, size)``. As in PyTorch these take no negative indices (``x[idx]`` does: it wraps them
    itself); a negative one would otherwise read from the end without a word."""
    if index.dtype is not dtypes.int64:
        raise DTypeError(
            f"{what}: indices must be an int64 tensor, got {index.dtype} "
            "(use .long() to convert; boolean masks index with x[mask])"
        )
    if index.numel():
        lo, hi = index_range(index)  # no device read when the bounds are on record
        if lo < 0 or hi >= size:
            bad = hi if hi >= size else lo
            hint = " (negative indices are not accepted here: add the size to count from the end)"
            raise TensorIndexError(
                f"{what}: index {bad} is out of range for a dimension of size {size}"
                + (hint if bad < 0 else "")
            )
    return index


def expand_index(x, index):
    """Normalise ``index`` to a tuple with Ellipsis expanded; report whether it is basic only.

    A 0-d int64 tensor is read as the int it holds, as PyTorch does: ``x[i]`` is then a view
    (select), not a gather. Not while a tape is being traced, where the tensor must stay an input
    so that a replay indexes with its new value (PyTorch's tracer makes the same exception).
    """
    if not isinstance(index, tuple):
        index = (index,)
    advanced = False
    used = 0
    ellipses = 0
    items = None
    for k, item in enumerate(index):
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
    return lo if lo == hi else int(t.backend.to_numpy(t._td))


def basic_view(td, index):
    """Apply a basic index (ints, slices, None) to a TensorData; returns the new view."""
    dim = 0
    for item in index:
        if item is None:
            td = td.unsqueeze(dim)
            dim += 1
        elif isinstance(item, slice):
            td = td.slice(dim, item.start, item.stop, item.step)
            dim += 1
        else:
            size = td.shape[dim]
            if not -size <= int(item) < size:
                raise TensorIndexError(
                    f"index {int(item)} is out of range for dimension {dim} with size {size}"
                )
            td = td.select(dim, int(item))
    return td


class BasicIndex(Function):
    """``x[index]`` for an expanded basic ``index`` (ints, slices, ``None``): a view; the
    gradient is written back at the same view of zeros (:class:`BasicIndexBackward`)."""

    @staticmethod
    def forward(ctx, x, index):
        ctx.shape, ctx.index = x.shape, index
        return view_of(x, basic_view(x._td, index))

    @staticmethod
    def backward(ctx, g):
        return BasicIndexBackward.apply(g, ctx.shape, ctx.index), None


class BasicIndexBackward(Function):
    """The adjoint of :class:`BasicIndex`: ``g`` written into zeros of ``shape`` at ``index``.

    A Function of its own so that a gradient taken with ``create_graph=True`` stays
    differentiable (its backward reads the same view back); a plain backward pays one node.
    """

    @staticmethod
    def forward(ctx, g, shape, index):
        ctx.index = index
        out = filled(shape, 0, g.dtype, g.backend, like=g)
        g.backend.map("copy", g._td, basic_view(out._td, index))
        return out

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
        out = AddAtIndex.apply(flat, (n,), 0, positions.reshape(-1), "put_add")
        return out.reshape(ctx.shape), None


class AddAtIndex(Function):
    """The adjoint of a gathering op: ``g`` added into zeros of ``shape`` at ``index`` along
    ``dim`` by the backend primitive ``put`` (``"put_add"``, the adjoint of ``index_select``;
    ``"scatter_add"``, of ``gather``). A Function of its own so that a gradient taken with
    ``create_graph=True`` stays differentiable: its backward gathers again."""

    @staticmethod
    def forward(ctx, g, shape, dim, index, put):
        ctx.dim, ctx.put = dim, put
        ctx.save_for_backward(index)
        out = filled(shape, 0, g.dtype, g.backend, like=g)
        getattr(g.backend, put)(out._td, dim, index._td, g._td)
        return out

    @staticmethod
    def backward(ctx, gg):
        (index,) = ctx.saved_tensors
        gather = IndexSelect if ctx.put == "put_add" else Gather
        return gather.apply(gg, ctx.dim, index), None, None, None, None


def _host_index(item, x_shape_dim=None):
    if isinstance(item, TensorBase):
        if not (item.dtype is dtypes.int64 or item.dtype is dtypes.bool_):
            raise DTypeError(f"tensors used as indices must be int64 or bool, got {item.dtype}")
        return item.backend.to_numpy(item._td)
    arr = np.asarray(item)
    if arr.dtype != bool and arr.dtype.kind not in "iu":
        raise DTypeError(f"index arrays must be integer or bool, got {arr.dtype}")
    return arr


def getitem(x, index):
    """``x[index]`` with numpy's rules: basic indexing (ints, slices, ``None``, ``...``) returns a view;
    advanced indexing (int or bool tensors, lists) gathers a copy. Gradients flow either way.
    """
    index, advanced = expand_index(x, index)
    if not advanced:
        return BasicIndex.apply(x, index)
    return AdvancedIndex.apply(x, index)


def _positions(x, index):
    """The flat positions (an int64 tensor) that an expanded advanced ``index`` selects in ``x``."""
    # np.array(order="C"), not np.ascontiguousarray, which turns a 0-d result into shape (1,)
    return from_numpy_on(np.array(host_positions(x, index), order="C"), x.backend, like=x)


def host_positions(x, index):
    """The flat positions (an ndarray) that an expanded advanced ``index`` selects in ``x``, every
    index checked against its dimension first (``TensorIndexError``)."""
    host = []
    dim = 0
    for item in index:
        if item is None:
            host.append(None)
            continue
        if isinstance(item, (int, np.integer, slice)):
            host.append(item)
            dim += 1
            continue
        arr = _host_index(item)
        if arr.dtype == bool:
            want = x.shape[dim : dim + arr.ndim]
            if arr.shape != want:
                raise TensorIndexError(
                    f"boolean mask of shape {arr.shape} does not match the indexed dims {want} of shape {x.shape}"
                )
            dim += arr.ndim
        else:
            size = x.shape[dim]
            if arr.size and (arr.max() >= size or arr.min() < -size):
                bad = arr.max() if arr.max() >= size else arr.min()
                raise TensorIndexError(
                    f"index {int(bad)} is out of range for dimension {dim} with size {size}"
                )
            dim += 1
        host.append(arr)
    return np.arange(x.numel(), dtype=np.int64).reshape(x.shape)[tuple(host)]


class IndexSelect(Function):
    """``x.index_select(dim, index)``. Like every indexing Function here it validates its index in
    ``forward``, which both eager calls (``apply``) and tape replays (``tl.jit``) run."""

    @staticmethod
    def forward(ctx, x, dim, index):
        if index.ndim != 1:
            raise ShapeError(f"index_select: index must be 1-D, got shape {index.shape}")
        same_backend(x, index)
        index = check_index(index, x.shape[dim], "index_select")
        ctx.shape, ctx.dim = x.shape, dim
        ctx.save_for_backward(index)
        shape = x.shape[:dim] + (index.shape[0],) + x.shape[dim + 1 :]
        out = alloc(shape, x.dtype, x.backend, x)
        x.backend.take(x._td, dim, index._td, out._td)
        return out

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        return AddAtIndex.apply(g, ctx.shape, ctx.dim, index, "put_add"), None, None


def index_select(x, dim, index):
    """The slices of ``x`` at ``index`` along ``dim``; behind :func:`torchlight.index_select`."""
    return IndexSelect.apply(x, normalize_dim(dim, x.ndim), index)


class Gather(Function):
    """Autograd function of :func:`gather`: backward scatter-adds the gradient."""

    @staticmethod
    def forward(ctx, x, dim, index):
        _check_gather_shapes("gather", x, dim, index)
        same_backend(x, index)
        index = check_index(index, x.shape[dim], "gather")
        ctx.shape, ctx.dim = x.shape, dim
        ctx.save_for_backward(index)
        out = alloc(index.shape, x.dtype, x.backend, x)
        x.backend.gather(x._td, dim, index._td, out._td)
        return out

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        return AddAtIndex.apply(g, ctx.shape, ctx.dim, index, "scatter_add"), None, None


def _check_gather_shapes(name, x, dim, index):
    if index.ndim != x.ndim:
        raise ShapeError(
            f"{name}: index must have as many dims as the input ({x.ndim}), got shape {index.shape}"
        )
    for d in range(x.ndim):
        if d != dim and index.shape[d] > x.shape[d]:
            raise ShapeError(
                f"{name}: index shape {index.shape} exceeds input shape {x.shape} at dim {d}"
            )


def gather(x, dim, index):
    """``out[i][j] = x[i][index[i][j]]`` (for dim=1): PyTorch's gather."""
    return Gather.apply(x, normalize_dim(dim, x.ndim), index)


class ScatterAdd(Function):
    """Autograd function of :func:`scatter_add`: the gradient of ``x`` passes through, that of ``src``
    is gathered at ``index``.
    """

    @staticmethod
    def forward(ctx, x, dim, index, src):
        _check_gather_shapes("scatter_add", x, dim, index)
        if src.ndim != index.ndim or any(i > n for i, n in zip(index.shape, src.shape)):
            raise ShapeError(
                f"scatter_add: src of shape {src.shape} must be at least as large as the "
                f"index {index.shape} in every dim"
            )
        same_backend(x, index)
        same_backend(x, src)
        index = check_index(index, x.shape[dim], "scatter_add")
        ctx.dim = dim
        ctx.save_for_backward(index)
        ctx.src_shape = src.shape
        out = x.clone()
        x.backend.scatter_add(out._td, dim, index._td, src._td)
        return out

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        gsrc = None
        if ctx.needs_input_grad[3]:
            gsrc = g.gather(ctx.dim, index)
            if gsrc.shape != ctx.src_shape:
                full = filled(ctx.src_shape, 0, g.dtype, g.backend, like=g)
                full[tuple(slice(0, n) for n in index.shape)] = gsrc
                gsrc = full
        return g, None, None, gsrc


def scatter_add(x, dim, index, src):
    """``x`` with ``src`` added at ``index`` along ``dim``; behind :func:`torchlight.scatter_add`."""
    dim = normalize_dim(dim, x.ndim)
    same_backend(x, src)
    if src.dtype is not x.dtype:
        src = src.to(x.dtype)
    return ScatterAdd.apply(x, dim, index, src)


def scatter(x, dim, index, src):
    """``x`` with ``out[i][index[i][j]] = src[i][j]`` (for dim=1): PyTorch's ``scatter``.

    ``src`` is a tensor (as large as ``index`` in every dim) or a number. Built from
    ``scatter_add``: the written positions are those that receive a count, and the value there is
    the mean of what was scattered to it — exactly ``src``'s value unless an index repeats, where
    PyTorch leaves the winner unspecified. Differentiable in ``x`` (zero where overwritten) and
    ``src``. Integer tensors go through float64, exact up to 2**53.

    >>> import torchlight as tl
    >>> tl.zeros(2, 3).scatter(1, tl.tensor([[2], [0]]), 1.0).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    dim = normalize_dim(dim, x.ndim)
    if not isinstance(src, TensorBase):
        src = scalar_like(src, x).expand(index.shape)
    elif src.shape != index.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]
    counts = filled(
        x.shape, 0, x.dtype if x.dtype.is_floating_point else dtypes.float64, x.backend, like=x
    )
    counts = scatter_add(counts, dim, index, counts.new_ones(index.shape))
    placed = scatter_add(
        x.detach().new_zeros(x.shape, dtype=counts.dtype), dim, index, src.to(counts.dtype)
    )
    written = counts > 0
    value = placed / counts.clamp(min=1.0)
    return value.to(x.dtype).where(written, x)


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


def embedding(indices, weight, padding_idx=None):
    """Rows of ``weight`` picked by ``indices``; repeated indices accumulate in the gradient.

    With ``padding_idx`` the gradient of that row is zero (the row stays as initialised).
    """
    if not isinstance(indices, TensorBase):
        raise DTypeError(
            f"embedding: indices must be an int64 tensor, got {type(indices).__name__}"
        )
    flat = indices.reshape(-1)
    if padding_idx is not None and weight.requires_grad:
        keep = flat != padding_idx
        rows = index_select(weight, 0, flat)
        rows = rows * keep.unsqueeze(1).to(weight.dtype) + rows.detach() * (~keep).unsqueeze(1).to(
            weight.dtype
        )
    else:
        rows = index_select(weight, 0, flat)
    return rows.reshape(indices.shape + (weight.shape[1],))
