"""Sliding windows in one pass: col2im and the gradient of a max pool.

The geometry is that of ``torchlight.tensor.functions.windows``: over the last two dims of a
view, window ``(i, j)`` holds ``x[..., i·sh + u·dh, j·sw + v·dw]`` for the kernel offsets
``(u, v)``, ``u < kh``, ``v < kw``. The core's composite makes one numpy pass per kernel offset
(a 5×5 convolution's col2im: 25 strided adds, each through numpy's short inner loops); here each
is one loop nest, ``prange`` over the planes of the leading dims.

``planes`` brings a view to the four dims the kernels take, ``(A, B, H, W)`` (col2im's gradient:
six, the kernel's two after them): one windowed dim gains a unit dim in front of it (kernel 1,
stride 1), missing leading dims get size 1. More than two leading dims or windowed dims are
declined (``None``): the core's composite runs them.

* ``window_add`` (col2im): ``g[..., i, j, u, v]`` added at offset ``(u, v)`` of window ``(i, j)``,
  offsets outermost, so every element sums its terms in the composite's order. Rows whose steps
  are both 1 (a stride-1 convolution's) take a loop over two contiguous slices, which LLVM
  vectorises (measured: LeNet's second convolution, 289 -> 163 µs).
* ``window_max_backward``: ``g`` of each window added at its winner, found again from the saved
  input and maximum: the first offset holding the maximum, or in a window whose maximum is NaN
  its last NaN (PyTorch's rule, the composite's). The search is a chain of selects, not a loop
  that stops at the first hit: where the winner falls is data, and a mispredicted branch per
  window cost more than the reads (measured on LeNet's first pool, 16 different batches:
  286 µs with the early exit, 128 µs with selects). A window where no offset matches
  (impossible for the saved pair) adds nothing: the kernel never writes outside ``out``.

Storages are passed whole with element offsets and strides; ``out`` is contiguous, zeros on entry.
"""

import numpy as np

from numba import prange
from torchlight.tensor.errors import BackendError

from ._jit import kernel

__all__ = ["planes", "two_dims", "offsets", "window_add", "window_max_backward"]


def planes(view, nd, trailing=0):
    """``(shape, strides)`` of ``view`` with ``nd`` windowed dims (followed by ``trailing`` dims,
    ``window_add``'s kernel dims) brought to two leading dims and two windowed ones, or ``None``
    when the kernels do not take it."""
    shape, strides = tuple(view.shape), tuple(view.strides)
    lead = len(shape) - nd - trailing
    if nd not in (1, 2) or not 0 <= lead <= 2:
        return None
    win, win_st = shape[lead : lead + nd], strides[lead : lead + nd]
    rest, rest_st = shape[lead + nd :], strides[lead + nd :]
    if nd == 1:  # a unit dim in front of the windowed one (and of its kernel dim)
        win, win_st = (1,) + win, (0,) + win_st
        if trailing:
            rest, rest_st = (1,) + rest, (0,) + rest_st
    pad = 2 - lead
    return (
        (1,) * pad + shape[:lead] + win + rest,
        (0,) * pad + strides[:lead] + win_st + rest_st,
    )


def two_dims(kernel_, stride, dilation):
    """``(kernel, stride, dilation)`` over two windowed dims: one windowed dim gets a unit dim in
    front of it (kernel 1, stride 1, dilation 1), as :func:`planes` gives its views."""
    pad = (1,) * (2 - len(kernel_))
    return pad + tuple(kernel_), pad + tuple(stride), pad + tuple(dilation)


def offsets(kernel2, row, col):
    """Per kernel offset ``(u, v)``, row-major, its element offset ``u·row + v·col`` from a
    window's first element (``row``, ``col``: the steps between a window's rows and columns).
    Computed once per call: the loops then add one number per offset instead of multiplying
    runtime strides (measured 2.5x faster on a 2x2 pool)."""
    return np.array(
        [u * row + v * col for u in range(kernel2[0]) for v in range(kernel2[1])], np.int64
    )


def _check(op, agree, outs, sizes, geometry):
    """Raise unless the views agree (``agree``: their leading dims and shapes match) and every
    window of the two-dim ``geometry`` lies inside ``sizes``. The core computes both from one
    geometry; a kernel that trusted a wrong one would write outside ``out``."""
    fits = all(
        n >= 1 and (n - 1) * st + (k - 1) * d < size
        for n, size, k, st, d in zip(outs, sizes, *geometry)
    )
    if not (agree and fits):
        kernel_, stride, dilation = geometry
        raise BackendError(
            f"{op}: views that disagree or {tuple(outs)} windows of kernel {kernel_} "
            f"(stride {stride}, dilation {dilation}) outside sizes {tuple(sizes)}; "
            "the core hands consistent geometries, so this is a bug in the caller"
        )


@kernel
def _window_max_backward(
    g,
    go,
    g0,
    g1,
    g2,
    g3,
    x,
    xo,
    x0,
    x1,
    x2,
    x3,
    y,
    yo,
    y0,
    y1,
    y2,
    y3,
    A,
    B,
    H,
    W,
    sh,
    sw,
    oh,
    ow,
    xoff,
    ooff,
    out,
    oo,
):
    kk = xoff.shape[0]
    for p in prange(A * B):
        a, b = p // B, p % B
        gb = go + a * g0 + b * g1
        xb = xo + a * x0 + b * x1
        yb = yo + a * y0 + b * y1
        o = oo + p * H * W
        for i in range(oh):
            xr = xb + i * sh * x2
            orow = o + i * sh * W
            for j in range(ow):
                m = y[yb + i * y2 + j * y3]
                base = xr + j * sw * x3
                hit = kk  # none yet
                if m == m:  # the first maximum: selects from the last offset back, no branch
                    for k in range(kk - 1, -1, -1):
                        hit = k if x[base + xoff[k]] == m else hit
                else:  # a NaN maximum: its last NaN
                    for k in range(kk):
                        val = x[base + xoff[k]]
                        hit = k if val != val else hit
                if hit < kk:
                    out[orow + j * sw + ooff[hit]] += g[gb + i * g2 + j * g3]


@kernel
def _window_add(g, go, g0, g1, g2, g3, A, B, H, W, sh, sw, oh, ow, goff, ooff, out, oo):
    unit = sw == 1 and g3 == 1
    for p in prange(A * B):
        gb = go + (p // B) * g0 + (p % B) * g1
        o = oo + p * H * W
        for k in range(goff.shape[0]):
            gk = gb + goff[k]
            ok = o + ooff[k]
            for i in range(oh):
                row = ok + i * sh * W
                gr = gk + i * g2
                if unit:
                    dst = out[row : row + ow]
                    src = g[gr : gr + ow]
                    for j in range(ow):
                        dst[j] += src[j]
                else:
                    for j in range(ow):
                        out[row + j * sw] += g[gr + j * g3]


def window_max_backward(g, x, y, kernel_, stride, dilation, out):
    """``out`` (contiguous, zeros) += ``g`` at each window's winner in ``x`` (``y`` its maximum)."""
    nd = len(kernel_)
    gv, xv, yv, ov = planes(g, nd), planes(x, nd), planes(y, nd), planes(out, nd)
    if gv is None or xv is None or yv is None or ov is None:
        return False
    (A, B, oh, ow), gs = gv
    H, W = ov[0][2:]
    xs = xv[1]
    k, (sh, sw), (dh, dw) = geometry = two_dims(kernel_, stride, dilation)
    agree = xv[0] == ov[0] and yv[0] == gv[0] and gv[0][:2] == ov[0][:2]
    _check("window_max_backward", agree, (oh, ow), (H, W), geometry)
    _window_max_backward.pick(x.size)(
        g.storage, g.offset, *gs,
        x.storage, x.offset, *xs,
        y.storage, y.offset, *yv[1],
        A, B, H, W, sh, sw, oh, ow,
        offsets(k, dh * xs[2], dw * xs[3]), offsets(k, dh * W, dw),
        out.storage, out.offset,
    )  # fmt: skip
    return True


def window_add(g, kernel_, stride, dilation, out):
    """``out`` (contiguous, zeros) += every window's ``g[..., *outs, *kernel]`` (col2im)."""
    nd = len(kernel_)
    gv, ov = planes(g, nd, nd), planes(out, nd)
    if gv is None or ov is None:
        return False
    (A, B, oh, ow, kh, kw), gs = gv
    H, W = ov[0][2:]
    k, (sh, sw), (dh, dw) = geometry = two_dims(kernel_, stride, dilation)
    agree = gv[0][:2] == ov[0][:2] and (kh, kw) == k
    _check("window_add", agree, (oh, ow), (H, W), geometry)
    _window_add.pick(g.size)(
        g.storage, g.offset, *gs[:4],
        A, B, H, W, sh, sw, oh, ow,
        offsets(k, gs[4], gs[5]), offsets(k, dh * W, dw),
        out.storage, out.offset,
    )  # fmt: skip
    return True
