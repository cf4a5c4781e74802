"""Layout operations. Forward is metadata only (a view sharing storage); backward undoes the
layout change on the gradient: ``permute`` by the inverse permutation, ``expand`` by summing the
broadcast dims, ``view`` by a reshape, a slice by writing the gradient into a zero tensor.
"""

import numpy as np

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from ..creation import filled, from_numpy_on
from ..dispatch import contiguous, normalize_dim, sum_to, view_of
from ..errors import ShapeError
from ..storage import TensorData, infer_shape
from .index import BasicIndex

__all__ = [
    "View",
    "Permute",
    "Expand",
    "Restride",
    "Unfold",
    "UnfoldBackward",
    "reshape",
    "view",
    "permute",
    "transpose",
    "expand",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unfold",
    "tril",
    "triu",
    "pad",
    "narrow",
    "meshgrid",
]


class View(Function):
    """A view of ``x`` with ``shape`` (resolved: no -1); the layout is derived from ``x`` inside
    forward (so a traced tape recomputes it for the replayed tensor)."""

    direct_forward = True

    @staticmethod
    def forward(ctx, x, shape):
        td = x._td.reshaped(shape)
        if td is None:
            raise ShapeError(
                f"view size {tuple(shape)} is not compatible with input of shape {x.shape} and strides "
                f"{x._td.strides}: the merged dimensions are not contiguous; use .reshape(...) instead"
            )
        ctx.shape = x.shape
        return view_of(x, td)

    @staticmethod
    def backward(ctx, g):
        if not GradMode.enabled:  # nothing to record: the view of g built directly
            td = g._td.reshaped(ctx.shape)
            if td is not None:
                return view_of(g, td), None
        return g.reshape(ctx.shape), None


def view(x, shape):
    """``x`` seen with ``shape`` (a tuple, one entry may be -1) without copying; the function behind
    :meth:`Tensor.view`.
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return View.apply_unary(x, infer_shape(shape, x._td.size, x.shape))


def reshape(x, shape):
    """A view when the layout allows it, otherwise a contiguous copy (PyTorch's reshape)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    shape = infer_shape(shape, x._td.size, x.shape)
    if shape == x.shape:
        return x
    td = x._td
    if not td.is_contiguous() and td.reshaped(shape) is None:
        x = x.contiguous()
    return View.apply_unary(x, shape)


class Permute(Function):
    """Autograd function of :func:`permute`: backward applies the inverse permutation."""

    direct_forward = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return view_of(x, x._td.permute(dims))

    @staticmethod
    def backward(ctx, g):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return g.permute(*inverse), None


def permute(x, *dims):
    """A view of ``x`` with its dimensions reordered; the function behind :meth:`Tensor.permute`."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    dims = tuple(normalize_dim(d, x.ndim) for d in dims)
    if len(dims) != x.ndim or len(set(dims)) != x.ndim:
        raise ShapeError(
            f"permute: {dims} is not a permutation of the {x.ndim} dims of shape {x.shape}"
        )
    return Permute.apply_unary(x, dims)


def transpose(x, d0, d1):
    """A view of ``x`` with dimensions ``d0`` and ``d1`` swapped; the function behind
    :meth:`Tensor.transpose`.
    """
    if x.ndim < 2 and d0 in (0, -1) and d1 in (0, -1):
        return x
    d0, d1 = normalize_dim(d0, x.ndim), normalize_dim(d1, x.ndim)
    dims = list(range(x.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return Permute.apply_unary(x, tuple(dims))


class Expand(Function):
    """Autograd function of :func:`expand`: backward sums over the broadcast dimensions."""

    direct_forward = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return view_of(x, x._td.expand(shape))

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx.shape), None


def expand(x, *shape):
    """``x`` broadcast to ``shape`` as a stride-0 view; the function behind :meth:`Tensor.expand`.
    Its backward sums the gradient over the broadcast dimensions.
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return Expand.apply_unary(x, shape)


class Restride(Function):
    """squeeze (``dims``: a tuple of size-1 dims to drop) or unsqueeze (``dims``: an int); the
    view is derived from ``x`` inside forward. Backward reshapes back."""

    @staticmethod
    def forward(ctx, x, kind, dims):
        td = x._td
        if kind == "unsqueeze":
            new = td.unsqueeze(dims)
        else:
            for d in dims:
                if td.shape[d] != 1:
                    raise ShapeError(
                        f"squeeze: dimension {d} of shape {td.shape} has size {td.shape[d]}, not 1"
                    )
            keep = [d for d in range(td.ndim) if d not in dims]
            new = TensorData(
                td.storage, [td.shape[d] for d in keep], [td.strides[d] for d in keep], td.offset
            )
        ctx.shape = x.shape
        return view_of(x, new)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None, None


def squeeze(x, dim=None):
    """A view of ``x`` without its size-1 dimensions (all, or ``dim`` only); see :meth:`Tensor.squeeze`."""
    td = x._td
    if dim is None:
        keep = [d for d in range(td.ndim) if td.shape[d] != 1]
    else:
        dims = {normalize_dim(d, td.ndim) for d in ((dim,) if isinstance(dim, int) else dim)}
        keep = [d for d in range(td.ndim) if d not in dims or td.shape[d] != 1]
    if len(keep) == td.ndim:
        return x
    return Restride.apply(x, "squeeze", tuple(d for d in range(td.ndim) if d not in keep))


def unsqueeze(x, dim):
    """A view of ``x`` with a size-1 dimension inserted at ``dim``; see :meth:`Tensor.unsqueeze`."""
    dim = normalize_dim(dim, x.ndim, allow_end=True)
    return Restride.apply(x, "unsqueeze", dim)


def flatten(x, start_dim=0, end_dim=-1):
    """``x`` with dimensions ``start_dim`` .. ``end_dim`` merged into one; see :meth:`Tensor.flatten`."""
    if x.ndim == 0:
        return x.reshape(1)
    s, e = normalize_dim(start_dim, x.ndim), normalize_dim(end_dim, x.ndim)
    if s > e:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    n = 1
    for d in range(s, e + 1):
        n *= x.shape[d]
    return x.reshape(x.shape[:s] + (n,) + x.shape[e + 1 :])


class Unfold(Function):
    """Sliding windows as a strided view. Windows overlap when ``step < size``, so backward adds
    the gradient back one window offset at a time (each pass writes disjoint positions)."""

    @staticmethod
    def forward(ctx, x, dim, size, step):
        ctx.shape, ctx.args = x.shape, (dim, size, step)
        return view_of(x, x._td.unfold(dim, size, step))

    @staticmethod
    def backward(ctx, g):
        return UnfoldBackward.apply(g, ctx.shape, *ctx.args), None, None, None


class UnfoldBackward(Function):
    """The adjoint of :class:`Unfold` (col2im): every window element of ``g`` added back at its
    position in zeros of ``shape``. A Function of its own so that a gradient taken with
    ``create_graph=True`` stays differentiable: its backward unfolds again."""

    @staticmethod
    def forward(ctx, g, shape, dim, size, step):
        ctx.args = (dim, size, step)
        out = filled(shape, 0, g.dtype, g.backend, like=g)
        gt, ot, backend = g._td, out._td, g.backend
        if step >= size:  # windows do not overlap: one copy into the windows of ``out``
            backend.map("copy", gt, ot.unfold(dim, size, step))
            return out
        span = (gt.shape[dim] - 1) * step + 1
        if not gt.is_contiguous():
            # each of the passes below reads a slice of g: a strided g (a permuted window
            # gradient) packed once cost less than reading it scattered `size` times
            gt = contiguous(g)._td
        for k in range(size):  # offset k of every window at once: these positions are disjoint
            target = ot.slice(dim, k, k + span, step)
            backend.zip("add", target, gt.select(gt.ndim - 1, k), target)
        return out

    @staticmethod
    def backward(ctx, gg):
        return Unfold.apply(gg, *ctx.args), None, None, None, None


def unfold(x, dim, size, step):
    """Sliding windows of ``size`` elements, ``step`` apart, along ``dim``, as a strided view with the
    window as a new last dimension; see :meth:`Tensor.unfold`.
    """
    return Unfold.apply(x, normalize_dim(dim, x.ndim), size, step)


def narrow(x, dim, start, length):
    """A view of ``length`` elements of ``x`` along ``dim`` from ``start``; see :meth:`Tensor.narrow`."""
    dim = normalize_dim(dim, x.ndim)
    if start < 0:
        start += x.shape[dim]
    if not 0 <= start <= start + length <= x.shape[dim]:
        raise ShapeError(
            f"narrow: [{start}, {start + length}) is out of range for dim {dim} of size {x.shape[dim]}"
        )
    # the index is basic by construction: straight to its Function, not through getitem's parsing
    return BasicIndex.apply_unary(x, (slice(None),) * dim + (slice(start, start + length),))


def _tri_mask(x, diagonal, lower):
    r, c = x.shape[-2], x.shape[-1]
    m = np.tri(r, c, diagonal, dtype=bool) if lower else ~np.tri(r, c, diagonal - 1, dtype=bool)
    return from_numpy_on(m, x.backend, like=x)


def tril(x, diagonal=0):
    r"""The lower triangle of (each matrix in) ``x``: element ``(i, j)`` kept where
    :math:`j - i \le \text{diagonal}`, zero elsewhere. ``diagonal=0`` keeps the main diagonal, ``-1``
    drops it, ``1`` keeps one more.

    >>> tl.tril(tl.ones(3, 3))
    tensor([[1., 0., 0.],
            [1., 1., 0.],
            [1., 1., 1.]])
    """
    if x.ndim < 2:
        raise ShapeError(f"tril: expected a tensor with at least 2 dims, got shape {x.shape}")
    return x.where(_tri_mask(x, diagonal, True), x.new_zeros(()))


def triu(x, diagonal=0):
    r"""The upper triangle of (each matrix in) ``x``: element ``(i, j)`` kept where
    :math:`j - i \ge \text{diagonal}`, zero elsewhere.

    >>> tl.triu(tl.ones(3, 3), diagonal=1)
    tensor([[0., 1., 1.],
            [0., 0., 1.],
            [0., 0., 0.]])
    """
    if x.ndim < 2:
        raise ShapeError(f"triu: expected a tensor with at least 2 dims, got shape {x.shape}")
    return x.where(_tri_mask(x, diagonal, False), x.new_zeros(()))


class Pad(Function):
    @staticmethod
    def forward(ctx, x, widths, value):
        shape = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, widths))
        out = filled(shape, value, x.dtype, x.backend, like=x)
        ctx.index = tuple(slice(lo, lo + s) for s, (lo, hi) in zip(x.shape, widths))
        target = out._td
        for d, sl in enumerate(ctx.index):
            target = target.slice(d, sl.start, sl.stop, 1)
        x.backend.map("copy", x._td, target)
        return out

    @staticmethod
    def backward(ctx, g):
        return g[ctx.index], None, None


def pad(x, pad, mode="constant", value=0.0):
    """PyTorch's ``F.pad``: ``pad`` lists (left, right) pairs starting from the LAST dimension.

    Shape: dimension ``-1`` grows by ``pad[0] + pad[1]``, dimension ``-2`` by ``pad[2] + pad[3]``, and
    so on.

    >>> tl.pad(tl.tensor([[1, 2]]), (1, 2))
    tensor([[0, 1, 2, 0, 0]])
    >>> tl.pad(tl.zeros(1, 3, 8, 8), (1, 1, 1, 1)).shape
    (1, 3, 10, 10)
    """
    if mode != "constant":
        raise ShapeError(f"pad: only mode='constant' is supported, got {mode!r}")
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ShapeError(
            f"pad: expected an even number of values for at most {x.ndim} dims, got {pad}"
        )
    if any(p < 0 for p in pad):
        raise ShapeError(f"pad: negative padding {pad} is not supported; slice the tensor instead")
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    return Pad.apply(x, tuple(widths), value)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors: with ``indexing="ij"`` output ``k`` has shape
    ``(len(t0), len(t1), ...)`` and varies along dim ``k``; ``"xy"`` swaps the first two dims
    (numpy's default). Each output is an expanded view (no copy), so gradients sum back.

    >>> import torchlight as tl
    >>> gy, gx = tl.meshgrid(tl.arange(2), tl.arange(3), indexing="ij")
    >>> gy.tolist(), gx.tolist()
    ([[0, 0, 0], [1, 1, 1]], [[0, 1, 2], [0, 1, 2]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ShapeError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expected 0-D or 1-D tensors, got shape {t.shape}")
    tensors = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    shape = tuple(t.shape[0] for t in tensors)
    n = len(tensors)
    out = [
        t.reshape(tuple(-1 if k == i else 1 for k in range(n))).expand(shape)
        for i, t in enumerate(tensors)
    ]
    if swap:  # built with the first two inputs exchanged: hand them back in the caller's order
        out[0], out[1] = out[1], out[0]
    return tuple(out)
