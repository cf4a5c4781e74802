"""Moving and repeating elements along a dim: ``roll``, ``flip``, ``repeat_interleave``,
``unbind``, ``select``, and the running sum ``cumsum``.

``roll`` is one copy (its two pieces joined, :func:`~.concat.join_views`) whose gradient is the
opposite roll. The others are composites of differentiable ops (``index_select``, ``matmul``), so
their gradients need no code of their own: ``flip``'s is a flip, ``repeat_interleave``'s sums the
copies (``index_select``'s scatter-add), and ``cumsum``'s is the reversed running sum (the
transpose of the triangular matrix it multiplies by).
"""

import numpy as np

from torchlight.autograd import Function

from .. import dtypes
from ..creation import from_numpy_on
from ..dispatch import keep_index_range, normalize_dim, view_of
from ..errors import ShapeError
from .concat import join_views
from .index import BasicIndex, records_view

__all__ = ["Roll", "roll", "flip", "repeat_interleave", "unbind", "select", "cumsum"]


def _host_index(values, like):
    return from_numpy_on(np.asarray(values, dtype=np.int64), like.backend, dtypes.int64, like=like)


def roll(x, shifts, dims=None):
    """Shift elements along ``dims`` by ``shifts``, wrapping around (``np.roll``).

    With ``dims=None`` the tensor is rolled as if flattened, then restored to its shape.

    >>> import torchlight as tl
    >>> tl.roll(tl.tensor([1, 2, 3, 4]), 1).tolist()
    [4, 1, 2, 3]
    >>> tl.tensor([[1, 2], [3, 4]]).roll(shifts=(1, 1), dims=(0, 1)).tolist()
    [[4, 3], [2, 1]]
    """
    if dims is None:
        if isinstance(shifts, (tuple, list)):
            if len(shifts) != 1:
                raise ShapeError(f"roll: without dims, shifts must be one number, got {shifts}")
            shifts = shifts[0]
        return roll(x.reshape(-1), shifts, 0).reshape(x.shape)
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    out = x
    for shift, dim in zip(shifts, dims):
        d = normalize_dim(dim, x.ndim)
        n = x.shape[d] if x.ndim else 1
        s = int(shift) % n if n else 0
        if s:
            out = Roll.apply(out, s, d)
    return out if out is not x else x.clone()


class Roll(Function):
    """``x`` rolled by ``shift`` (``0 < shift < n``) along ``dim`` of size ``n``: its last
    ``shift`` elements joined in front of the first ``n - shift``, in one copy; the gradient is
    rolled back by ``n - shift``."""

    direct_forward = True

    @staticmethod
    def forward(ctx, x, shift, dim):
        ctx.shift, ctx.dim = shift, dim
        td, n = x._td, x._td.shape[dim]
        head, tail = td.slice(dim, n - shift, n, 1), td.slice(dim, 0, n - shift, 1)
        out = join_views([head, tail], dim, False, x, x.backend)
        keep_index_range(x, out)  # the same values: index checks of the result read nothing
        return out

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, g.shape[ctx.dim] - ctx.shift, ctx.dim), None, None


def flip(x, dims):
    """Reverse the order of elements along each dim in ``dims``.

    >>> import torchlight as tl
    >>> tl.flip(tl.tensor([[1, 2], [3, 4]]), [1]).tolist()
    [[2, 1], [4, 3]]
    """
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    out = x
    for dim in {normalize_dim(d, x.ndim) for d in dims}:
        out = out.index_select(dim, _host_index(np.arange(x.shape[dim] - 1, -1, -1), x))
    return out if out is not x else x.clone()


def repeat_interleave(x, repeats, dim=None):
    """Repeat each element ``repeats`` times (an int, or one count per element) along ``dim``.

    With ``dim=None`` the input is flattened first.

    >>> import torchlight as tl
    >>> tl.tensor([1, 2]).repeat_interleave(2).tolist()
    [1, 1, 2, 2]
    >>> tl.tensor([[1, 2], [3, 4]]).repeat_interleave(tl.tensor([1, 2]), dim=0).tolist()
    [[1, 2], [3, 4], [3, 4]]
    """
    if dim is None:
        x, dim = x.reshape(-1), 0
    dim = normalize_dim(dim, x.ndim)
    n = x.shape[dim]
    counts = repeats.to_numpy() if hasattr(repeats, "to_numpy") else np.asarray(repeats)
    counts = np.broadcast_to(
        counts.astype(np.int64).reshape(-1) if counts.ndim else counts.astype(np.int64), (n,)
    )
    if counts.shape != (n,) or np.any(counts < 0):
        raise ShapeError(
            f"repeat_interleave: repeats must be a non-negative int or {n} counts, got {repeats}"
        )
    return x.index_select(dim, _host_index(np.repeat(np.arange(n), counts), x))


def select(x, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed): ``x.select(1, 0) == x[:, 0]``.

    >>> import torchlight as tl
    >>> tl.tensor([[1, 2], [3, 4]]).select(1, 0).tolist()
    [1, 3]
    """
    dim = normalize_dim(dim, x.ndim)
    return BasicIndex.apply_unary(x, (slice(None),) * dim + (int(index),))


def unbind(x, dim=0):
    """All slices along ``dim``, as a tuple of tensors with that dim removed.

    >>> import torchlight as tl
    >>> [t.tolist() for t in tl.tensor([[1, 2], [3, 4]]).unbind(1)]
    [[1, 3], [2, 4]]
    """
    dim = normalize_dim(dim, x.ndim)
    if not records_view(x):  # the slices as views in one pass, no index expanded per slice
        return tuple([view_of(x, td) for td in x._td.pieces(dim, None)])
    return tuple(select(x, dim, i) for i in range(x.shape[dim]))


def cumsum(x, dim, dtype=None):
    """Running sum along ``dim``: ``out[..., i] = x[..., 0] + ... + x[..., i]``.

    Floating tensors multiply by an upper-triangular matrix of ones (``x U``, ``U[j, i] = 1``
    for ``j <= i``): a single product on the tensor's device, differentiable with ``g Uᵀ``.
    Integer and bool tensors (no gradient) are summed exactly on the host.

    >>> import torchlight as tl
    >>> tl.cumsum(tl.tensor([1.0, 2.0, 3.0]), dim=0).tolist()
    [1.0, 3.0, 6.0]
    """
    if dtype is not None:
        x = x.to(dtype)
    if x.ndim == 0:
        normalize_dim(dim, 0)
        return x.clone() if x.dtype is not dtypes.bool_ else x.long()
    dim = normalize_dim(dim, x.ndim)
    if not x.dtype.is_floating_point:
        arr = np.cumsum(x.backend.to_numpy(x._td), axis=dim, dtype=np.int64)
        return from_numpy_on(np.ascontiguousarray(arr), x.backend, dtypes.int64, like=x)
    n = x.shape[dim]
    upper = from_numpy_on(np.triu(np.ones((n, n))), x.backend, x.dtype, like=x)
    return (x.transpose(dim, -1) @ upper).transpose(dim, -1)
