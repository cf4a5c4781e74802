"""Sliding windows, one kernel offset at a time: max and average pooling, a convolution's im2col.

Windows of ``kernel`` elements run along the last ``nd = len(kernel)`` dims of ``x``, ``stride``
apart, their elements ``dilation`` apart. Window ``w`` (a tuple over those dims) holds
``x[..., w·stride + j·dilation]`` for the offsets ``j`` of the kernel, so the element at offset
``j`` of *every* window is one strided view of ``x``:

    V_j = x[..., j₁d₁ :: s₁, j₂d₂ :: s₂, ...]   (cut to the output's size)

Max pooling is ``y = max_j V_j``: ``prod(kernel) - 1`` elementwise ``maximum`` passes over the
output, with no copy of the windows (average pooling: ``Σ_j V_j``). (Reducing a short, strided window axis instead —
unfold, reshape, ``max(-1)`` — copies every window and then walks them one at a time: several
times slower for the 2×2 pools of a CNN.)

The gradient goes to the element that won: the first offset whose value equals ``y`` (of equal
values the first wins, as in PyTorch); in a window whose maximum is NaN its last NaN, as
PyTorch's ``val > max || isnan(val)`` rule picks. With ``M_j`` the 0/1 mask of the windows
won at offset ``j``,

    ∂L/∂x = Σ_j  scatter_j( M_j · ∂L/∂y )

where ``scatter_j`` adds into the positions of ``V_j``. Within one offset the positions are
distinct, so overlapping windows (stride < kernel) add up across offsets, as they must.

The masks are built with arithmetic, not ``where``: ``M_j = [V_j = y] · R_j`` with ``R`` the
windows not yet claimed (``R_0 = 1``, ``R_{j+1} = R_j - M_j``). A select with a data-dependent
mask costs numpy ~10× a multiply (a branch per element); a product does not. A product is
only exact for finite values (``inf · 0`` is NaN), so a gradient holding ``inf`` or NaN is
picked with ``where`` instead. Windows that do not overlap need no masks at all: each offset
takes what is left of ``g`` where it holds the maximum (:func:`_to_winners`).

All windows at once, ``(..., *outs, *kernel)``, are one strided view too (a convolution's
im2col); its gradient adds the slice of ``g`` at each offset back at ``V_j``'s positions (col2im).
"""

import itertools
import math
from dataclasses import dataclass

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from .. import dtypes
from ..backend.protocol import WINDOWS
from ..creation import filled
from ..dispatch import (
    alloc,
    cast,
    filled_cached,
    ones_cached,
    reduce_op,
    view_of,
    where_op,
    zip_into,
    zip_op,
)
from ..errors import ShapeError
from ..recorders import is_recording
from ..storage import TensorData

__all__ = [
    "Windows",
    "WindowsView",
    "WindowsViewBackward",
    "WindowMax",
    "WindowScatter",
    "WindowGather",
    "WindowSum",
    "unfold_windows",
    "window_max",
    "window_sum",
    "winner_masks",
    "winners",
]


@dataclass(frozen=True)
class Windows:
    """The geometry of sliding windows over the last ``len(kernel)`` dims: window size, the step
    between windows, the step between a window's elements, and how many windows fit (per dim).
    Not a tuple: a recorded op's tuple arguments are rebuilt element by element (jit, ONNX),
    this one is passed through whole."""

    kernel: tuple
    stride: tuple
    dilation: tuple
    outs: tuple

    @classmethod
    def of(cls, kernel, stride, dilation, outs) -> "Windows":
        """The geometry from any sequences of ints (one per windowed dim)."""
        return cls(tuple(kernel), tuple(stride), tuple(dilation), tuple(outs))

    def offsets(self) -> list:
        """Every offset of the kernel, row-major (offset number ``j`` is PyTorch's local index)."""
        return list(itertools.product(*(range(k) for k in self.kernel)))

    def view(self, td: TensorData, offset: tuple) -> TensorData:
        """``V_offset``: the element at ``offset`` of every window, as one strided view of ``td``."""
        first = len(td.shape) - len(self.kernel)
        for d, (j, n, s, dil) in enumerate(zip(offset, self.outs, self.stride, self.dilation)):
            start = j * dil
            td = td.slice(first + d, start, start + (n - 1) * s + 1, s)
        return td

    def views(self, td: TensorData) -> list:
        """``[V_0, V_1, ...]`` in offset order."""
        return [self.view(td, j) for j in self.offsets()]

    def unfolded(self, td: TensorData) -> TensorData:
        """Every window at once: ``td`` of shape ``(..., *sizes)`` as a strided view of shape
        ``(..., *outs, *kernel)`` (im2col without a copy)."""
        lead = len(td.shape) - len(self.kernel)
        inner = td.strides[lead:]
        return TensorData.of(
            td.storage,
            td.shape[:lead] + self.outs + self.kernel,
            td.strides[:lead]
            + tuple(st * s for st, s in zip(inner, self.stride))
            + tuple(st * d for st, d in zip(inner, self.dilation)),
            td.offset,
            math.prod(td.shape[:lead] + self.outs + self.kernel),
        )

    def disjoint(self) -> bool:
        """True when no element lies in two windows: each window's span fits in one stride."""
        return all(d * (k - 1) < s for k, s, d in zip(self.kernel, self.stride, self.dilation))

    def tiles(self, shape) -> bool:
        """True when the windows cover the last dims of ``shape`` exactly, every element in one
        window (a CNN's 2×2 pool of an even-sized map)."""
        sizes = shape[len(shape) - len(self.kernel) :]
        return all(
            k == s and (d == 1 or k == 1) and n * s == size
            for k, s, d, n, size in zip(self.kernel, self.stride, self.dilation, self.outs, sizes)
        )

    def scatter(self, parts, shape, like):
        """A zero tensor of ``shape`` (``like``'s dtype and backend) with ``parts[j]`` (a view of
        the output's shape) added at the positions of ``V_j``: the adjoint of reading the views."""
        out = filled(shape, 0, like.dtype, like.backend, like=like)
        for part, offset in zip(parts, self.offsets()):
            target = self.view(out._td, offset)
            like.backend.zip("add", target, part, target)
        return out


class WindowMax(Function):
    """``y = max_j V_j`` (see the module docstring); the gradient goes to each window's winner."""

    @staticmethod
    def forward(ctx, x, win):
        y = _fold(x, win, "maximum")
        ctx.win = win
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        win = ctx.win
        if not GradMode.enabled:
            out = _by_kernel("window_max_backward", g, (g._td, x._td, y._td), win, x.shape)
            if out is not None:
                return out, None
            if win.disjoint() and _finite(g) and _finite(y):
                return _to_winners(g, x, y, win), None
        return WindowScatter.apply(g, winner_masks(x, y, win), win, x.shape), None


class WindowScatter(Function):
    """The adjoint of picking each window's winner: ``g`` (one value per window) added at the
    positions of ``x``'s shape that won (``masks``: ``M_j`` per offset). Its own adjoint is
    :class:`WindowGather`, so a gradient taken with ``create_graph=True`` stays differentiable."""

    @staticmethod
    def forward(ctx, g, masks, win, shape):
        ctx.win, ctx.masks = win, masks
        exact = _finite(g)
        return win.scatter([_pick(g, m, exact)._td for m in masks], shape, g)

    @staticmethod
    def backward(ctx, gg):
        return WindowGather.apply(gg, ctx.masks, ctx.win), None, None, None


class WindowGather(Function):
    """Each window's value at its winner, ``Σ_j M_j · V_j`` (``masks``: ``M_j`` per offset): the
    adjoint of :class:`WindowScatter`, whose backward it is."""

    @staticmethod
    def forward(ctx, x, masks, win):
        ctx.win, ctx.masks, ctx.shape = win, masks, x.shape
        exact = _finite(x)
        out = None
        for m, v in zip(masks, win.views(x._td)):
            part = _pick(view_of(x, v), m, exact)
            out = part if out is None else zip_into("add", out, part)
        return out

    @staticmethod
    def backward(ctx, g):
        return WindowScatter.apply(g, ctx.masks, ctx.win, ctx.shape), None, None


class WindowsView(Function):
    """Every window of ``x`` as one strided view ``(..., *outs, *kernel)``, no copy (what a
    convolution's im2col and ``F.unfold`` read). The gradient adds the slice of ``g`` at each
    kernel offset back at that offset's positions, one pass per offset."""

    @staticmethod
    def forward(ctx, x, win):
        ctx.win, ctx.shape = win, x.shape
        return view_of(x, win.unfolded(x._td))

    @staticmethod
    def backward(ctx, g):
        return WindowsViewBackward.apply(g, ctx.win, ctx.shape), None


class WindowsViewBackward(Function):
    """The adjoint of :class:`WindowsView` (col2im): ``g[..., j]`` added at the positions of
    ``V_j`` for every kernel offset ``j``. Its backward is :class:`WindowsView` again.

    One pass per offset. (Going one spatial dim at a time instead, ``Σ kernel`` passes through
    buffers in between, measured no faster: 5×5 about even, 3×3 up to 1.6× slower.)"""

    @staticmethod
    def forward(ctx, g, win, shape):
        ctx.win = win
        out = _by_kernel("window_add", g, (g._td,), win, shape)
        if out is not None:
            return out
        first = g.ndim - len(win.kernel)
        parts = []
        for offset in win.offsets():
            part = g._td
            for d in reversed(range(len(offset))):  # from the last: earlier dims keep their place
                part = part.select(first + d, offset[d])
            parts.append(part)
        return win.scatter(parts, shape, g)

    @staticmethod
    def backward(ctx, gg):
        return WindowsView.apply(gg, ctx.win), None, None


class WindowSum(Function):
    """``Σ_j V_j``: each window's sum, ``prod(kernel) - 1`` elementwise additions of the offset
    views (average pooling's numerator). Every element of a window gets the window's gradient:
    the backward is col2im (:class:`WindowsViewBackward`) of ``g`` broadcast over the kernel."""

    @staticmethod
    def forward(ctx, x, win):
        ctx.win, ctx.shape = win, x.shape
        return _fold(x, win, "add")

    @staticmethod
    def backward(ctx, g):
        nd = len(ctx.win.kernel)
        spread = g.reshape(g.shape + (1,) * nd).expand(g.shape + ctx.win.kernel)
        return WindowsViewBackward.apply(spread, ctx.win, ctx.shape), None


def _by_kernel(method, like, views, win, shape):
    """A new tensor of ``shape`` (zeros, ``like``'s dtype) filled by ``method`` of the backend's
    ``windows`` capability from ``views``, or ``None`` where the backend has no such kernel or
    declines this geometry (the caller then runs its composite)."""
    backend = like.backend
    if WINDOWS not in backend.capabilities or not like.dtype.is_floating_point:
        return None
    out = filled(shape, 0, like.dtype, backend, like=like)
    if getattr(backend, method)(*views, win.kernel, win.stride, win.dilation, out._td):
        return out
    return None


def _fold(x, win, op):
    """``V_0 op V_1 op ...``: the offset views combined elementwise into a new tensor."""
    views, backend = win.views(x._td), x.backend
    y = alloc(views[0].shape, x.dtype, backend, x)
    backend.map("copy", views[0], y._td)
    for v in views[1:]:
        backend.zip(op, y._td, v, y._td)
    return y


def _to_winners(g, x, y, win):
    """The gradient of a max pool whose windows do not overlap, for finite ``g`` and ``y``, in
    ``2·prod(kernel)`` passes over the output with no mask kept: ``left`` holds the gradient of
    the windows whose winner is still unfound (at first all of ``g``); offset ``j`` takes
    ``left · [V_j = y]`` straight into its positions of the result and leaves the rest. The last
    offset takes what is left: with a finite maximum every window has a winner. (Exact: ``left``
    is multiplied by 0 or 1 and each difference is ``v - v`` or ``v - 0``.) The windows write
    disjoint positions, so only elements outside every window need zeros."""
    backend, dtype = g.backend, g.dtype
    if win.tiles(x.shape):
        out = alloc(x.shape, dtype, backend, g)
    else:
        out = filled(x.shape, 0, dtype, backend, like=g)
    offsets = win.offsets()
    left = g._td
    if len(offsets) > 1:
        hit = alloc(y.shape, dtypes.bool_, backend, y)._td
        hit_as_value = alloc(y.shape, dtype, backend, g)._td
        rest = alloc(y.shape, dtype, backend, g)._td
        for offset in offsets[:-1]:
            target = win.view(out._td, offset)
            backend.zip("eq", win.view(x._td, offset), y._td, hit)
            backend.map("copy", hit, hit_as_value)
            backend.zip("mul", left, hit_as_value, target)
            backend.zip("sub", left, target, rest)
            left = rest
    backend.map("copy", left, win.view(out._td, offsets[-1]))
    return out


def _finite(t):
    """True when every value of ``t`` is known to be finite (one sum read on the host: NaN or
    ±inf anywhere makes it so). False while a step is recorded for a replay, which would not
    decide again: the path for any values is taken, with the same results on finite ones."""
    if is_recording():
        return False
    return math.isfinite(reduce_op("sum", t, tuple(range(t.ndim))).item())


def _pick(values, mask, exact):
    """``values`` where the 0/1 ``mask`` is 1, else 0: a product when ``exact`` (finite values),
    else a select (``inf · 0`` would be NaN)."""
    if exact:
        return zip_op("mul", values, mask)
    zero = filled_cached((), 0, values.dtype, values.backend, values)
    return where_op(zip_op("ne", mask, zero, dtypes.bool_), values, zero)


def winner_masks(x, y, win):
    """``[M_0, M_1, ...]``: per kernel offset, 1 where that offset holds its window's maximum
    ``y`` (the first such offset, or for a NaN maximum the window's last NaN), else 0; in ``y``'s
    dtype (``int64`` for a bool ``y``). No gradient."""
    dtype = y.dtype if y.dtype is not dtypes.bool_ else dtypes.int64
    views = [view_of(x, v) for v in win.views(x._td)]
    masks = _first(views, y, dtype, lambda v: zip_op("eq", v, y, dtypes.bool_))
    if y.dtype.is_floating_point and not _finite(y):
        nan = cast(zip_op("ne", y, y, dtypes.bool_), dtype)
        if is_recording() or reduce_op("sum", nan, tuple(range(nan.ndim))).item():
            last = _first(views[::-1], y, dtype, lambda v: zip_op("ne", v, v, dtypes.bool_), nan)
            masks = [zip_into("add", m, n) for m, n in zip(masks, last[::-1])]
    return masks


def _first(views, y, dtype, hit, left=None):
    """Per view, 1 where ``hit(view)`` holds and no earlier view's did (among the windows where
    ``left`` is 1: all when None)."""
    masks = []
    for k, v in enumerate(views):
        m = cast(hit(v), dtype)
        if left is not None:
            m = zip_into("mul", m, left)
        if k + 1 < len(views):
            left = (
                zip_op("sub", ones_cached(y.shape, dtype, y.backend, y), m)
                if left is None
                else zip_op("sub", left, m)
            )
        masks.append(m)
    return masks


def winners(x, y, win):
    """The offset number (row-major over the kernel, PyTorch's local index) of each window's
    winner, as an ``int64`` tensor of ``y``'s shape (see :func:`winner_masks`). No gradient."""
    idx = None
    for j, m in enumerate(winner_masks(x, y, win)):
        if j:
            term = cast(zip_op("mul", m, filled_cached((), j, m.dtype, m.backend, m)), dtypes.int64)
            idx = term if idx is None else zip_into("add", idx, term)
    return idx if idx is not None else filled(y.shape, 0, dtypes.int64, y.backend, like=y)


def unfold_windows(x, kernel, stride, dilation):
    """Every window over the last ``len(kernel)`` dims of ``x`` as a strided view
    ``x.shape[:-nd] + outs + kernel`` (no copy), with its gradient; ``outs`` per dim is
    ``(size - dilation·(kernel - 1) - 1) // stride + 1``. Raises ``ShapeError`` when a window
    does not fit."""
    nd = len(kernel)
    outs = []
    for d, (size, k, s, dil) in enumerate(zip(x.shape[x.ndim - nd :], kernel, stride, dilation)):
        span = dil * (k - 1) + 1
        if span > size:
            raise ShapeError(
                f"kernel size {k} (dilation {dil}, span {span}) is larger than the padded input "
                f"size {size} in spatial dim {d} (input shape {x.shape})"
            )
        outs.append((size - span) // s + 1)
    return WindowsView.apply(x, Windows.of(kernel, stride, dilation, outs))


def window_sum(x, kernel, stride, dilation, outs):
    """The sum of each window over the last ``len(kernel)`` dims of ``x`` (as :func:`window_max`),
    with its gradient."""
    return WindowSum.apply(x, Windows.of(kernel, stride, dilation, outs))


def window_max(x, kernel, stride, dilation, outs):
    """The maximum of each window (see the module docstring) over the last ``len(kernel)`` dims
    of ``x``, with its gradient: shape ``x.shape[:-nd] + outs``. ``x`` is already padded and
    ``outs`` windows fit in each dim (``(outs - 1)·stride + dilation·(kernel - 1) < size``)."""
    return WindowMax.apply(x, Windows.of(kernel, stride, dilation, outs))
