"""The kit's test of the optional ``windows`` capability: col2im and a max pool's gradient.

A mixin of :class:`~torchlight.testing.BackendConformance` (which supplies ``be`` and
``_need``); it skips when the backend does not declare ``windows``. The references are plain
loops over the windows in numpy (float64 sums in the composite's order: kernel offsets
outermost). Geometries cover one and two windowed dims, strides below and above the kernel
(overlapping windows and gaps), dilation, zero to two leading dims; gradients come in every
input layout, and ``out`` is an offset view (contiguous, zeros) with a sentinel around it, so a
kernel that writes past its end is caught. A backend may decline a geometry (it returns
False): then it must have written nothing.

The max pool's inputs hold ties (values from a few integers), windows of -inf and windows with
NaN, where the winner is the first maximum, or the last NaN (PyTorch's rule).
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

from torchlight.tensor.storage import TensorData

from .catalog import FLOAT
from .strategies import LAYOUTS, make_view, outside_untouched, read

__all__ = ["WindowsConformance", "GEOMETRIES"]

#: (leading dims, sizes, kernel, stride, dilation): LeNet's 5×5 convolution and 2×2 pool,
#: overlapping 3×3 windows, a dilated and strided pair, a 1-D pool, gaps between windows
GEOMETRIES = (
    ((2, 3), (9, 9), (5, 5), (1, 1), (1, 1)),
    ((2,), (6, 8), (2, 2), (2, 2), (1, 1)),
    ((1, 2), (7, 7), (3, 3), (2, 2), (1, 1)),
    ((3,), (9, 8), (2, 3), (2, 1), (2, 2)),
    ((2, 2), (11,), (3,), (2,), (1,)),
    ((), (7, 9), (2, 2), (3, 3), (1, 1)),
)


def _outs(sizes, kernel, stride, dilation):
    return tuple(
        (n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(sizes, kernel, stride, dilation)
    )


def _position(w, j, stride, dilation):
    """The position of offset ``j`` of window ``w``: ``w·stride + j·dilation`` per dim."""
    return tuple(wi * s + ji * d for wi, ji, s, d in zip(w, j, stride, dilation))


def _grid(sizes):
    return itertools.product(*(range(n) for n in sizes))


def reference_window_add(g, sizes, kernel, stride, dilation):
    """col2im of ``g`` (``(..., *outs, *kernel)``) into zeros of ``(..., *sizes)``, in float64."""
    nd = len(kernel)
    lead = g.shape[: g.ndim - 2 * nd]
    outs = g.shape[g.ndim - 2 * nd : g.ndim - nd]
    out = np.zeros(lead + tuple(sizes))
    for j in _grid(kernel):  # offsets outermost: the order the composite sums in
        for w in _grid(outs):
            out[(...,) + _position(w, j, stride, dilation)] += g[(...,) + w + j]
    return out


def reference_max_backward(g, x, kernel, stride, dilation):
    """A max pool's input gradient: ``g`` of each window at its winner (first maximum, or last
    NaN), into zeros of ``x``'s shape, in float64; and the maxima ``y``."""
    nd = len(kernel)
    outs = g.shape[g.ndim - nd :]
    lead = x.shape[: x.ndim - nd]
    out = np.zeros(x.shape)
    y = np.empty(g.shape, x.dtype)
    for idx in _grid(lead):
        for w in _grid(outs):
            positions = [idx + _position(w, j, stride, dilation) for j in _grid(kernel)]
            vals = [x[p] for p in positions]
            nans = [k for k, v in enumerate(vals) if v != v]
            win = nans[-1] if nans else max(range(len(vals)), key=lambda k: (vals[k], -k))
            y[idx + w] = vals[win]
            out[positions[win]] += g[idx + w]
    return out, y


def _kernel_major(backend, g, nd):
    """``g`` (``(..., *outs, *kernel)``) as a view of storage laid out ``(..., *kernel, *outs)``:
    what a convolution's backward hands col2im (its rows of window positions are contiguous)."""
    lead = g.ndim - 2 * nd
    order = tuple(range(lead)) + tuple(range(lead + nd, lead + 2 * nd))
    order += tuple(range(lead, lead + nd))
    stored = np.ascontiguousarray(g.transpose(order))
    strides = [0] * g.ndim
    for pos, dim in enumerate(order):
        strides[dim] = stored.strides[pos] // stored.itemsize
    return TensorData(backend.from_numpy(stored.reshape(-1)), g.shape, tuple(strides), 0)


class WindowsConformance:
    """``windows`` tests; mixed into ``BackendConformance``."""

    def _zeros_out(self, shape, dtype):
        out, _ = make_view(self.be, np.zeros(shape, dtype), "offset")
        return out

    def _check(self, done, out, want, dtype, what):
        got = read(self.be, out)
        if not done:  # declined: nothing written
            assert not got.any(), what + ": declined but wrote into out"
            return
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
        assert outside_untouched(self.be, out, dtype), what + ": wrote outside out"

    @pytest.mark.parametrize("dtype", FLOAT)
    @pytest.mark.parametrize("geometry", range(len(GEOMETRIES)))
    def test_window_add(self, dtype, geometry):
        """Capability ``windows``: ``window_add`` (col2im) of a gradient in every layout equals
        the loop over windows and writes nothing outside ``out``."""
        self._need("windows")
        lead, sizes, kernel, stride, dilation = GEOMETRIES[geometry]
        outs = _outs(sizes, kernel, stride, dilation)
        rng = np.random.default_rng(zlib.crc32(repr(("window_add", dtype, geometry)).encode()))
        g = rng.standard_normal(lead + outs + kernel).astype(dtype)
        want = reference_window_add(g.astype(np.float64), sizes, kernel, stride, dilation)
        for layout in LAYOUTS:
            gv, logical = make_view(self.be, g, layout)
            if layout == "broadcast":
                want_l = reference_window_add(
                    logical.astype(np.float64), sizes, kernel, stride, dilation
                )
            else:
                want_l = want
            out = self._zeros_out(lead + sizes, dtype)
            done = self.be.window_add(gv, kernel, stride, dilation, out)
            self._check(
                done, out, want_l, dtype, f"window_add {dtype} {GEOMETRIES[geometry]} g {layout}"
            )
        # a convolution's layout: stored (..., *kernel, *outs), the windows' positions innermost
        out = self._zeros_out(lead + sizes, dtype)
        gv = _kernel_major(self.be, g, len(kernel))
        done = self.be.window_add(gv, kernel, stride, dilation, out)
        what = f"window_add {dtype} {GEOMETRIES[geometry]} g kernel-major"
        self._check(done, out, want, dtype, what)

    @pytest.mark.parametrize("dtype", FLOAT)
    @pytest.mark.parametrize("geometry", range(len(GEOMETRIES)))
    def test_window_max_backward(self, dtype, geometry):
        """Capability ``windows``: ``window_max_backward`` puts each window's gradient at its
        winner, the first maximum (ties are common) or the last NaN, overlapping windows adding
        up, for inputs in every layout."""
        self._need("windows")
        lead, sizes, kernel, stride, dilation = GEOMETRIES[geometry]
        outs = _outs(sizes, kernel, stride, dilation)
        rng = np.random.default_rng(zlib.crc32(repr(("window_max", dtype, geometry)).encode()))
        x = rng.integers(-2, 3, lead + sizes).astype(dtype)  # ties in most windows
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, max(1, flat.size // 12), replace=False)] = np.nan
        flat[rng.choice(flat.size, max(1, flat.size // 12), replace=False)] = -np.inf
        g = rng.standard_normal(lead + outs).astype(dtype)
        for layout in ("contiguous", "offset", "permuted", "sliced"):
            xv, _ = make_view(self.be, x, layout)
            gv, _ = make_view(self.be, g, layout)
            want, y = reference_max_backward(g.astype(np.float64), x, kernel, stride, dilation)
            yv, _ = make_view(self.be, y, layout)
            out = self._zeros_out(x.shape, dtype)
            done = self.be.window_max_backward(gv, xv, yv, kernel, stride, dilation, out)
            what = f"window_max_backward {dtype} {GEOMETRIES[geometry]} inputs {layout}"
            self._check(done, out, want, dtype, what)

    def test_windows_outside_out_raise(self):
        """Capability ``windows``: a gradient with more windows than fit in ``out`` (a geometry
        the core would never hand over) raises or is declined, and writes nothing anywhere."""
        self._need("windows")
        g = np.ones((1, 2, 6, 6, 3, 3), "float32")  # 6 windows of 3 need 8 positions, out has 7
        gv, _ = make_view(self.be, g, "contiguous")
        out = self._zeros_out((1, 2, 7, 7), "float32")
        try:
            done = self.be.window_add(gv, (3, 3), (1, 1), (1, 1), out)
        except Exception:  # noqa: BLE001 - any clear error will do; what matters is no write
            done = False
        assert not done, "window_add accepted windows that do not fit in out"
        assert not read(self.be, out).any(), "window_add wrote into out"
        assert outside_untouched(self.be, out, "float32"), "window_add wrote outside out"
        x = np.ones((1, 2, 7, 7), "float32")
        xv, _ = make_view(self.be, x, "contiguous")
        yv, _ = make_view(self.be, np.ones((1, 2, 7, 7), "float32"), "contiguous")
        out = self._zeros_out((1, 2, 7, 7), "float32")
        try:  # 7 windows of 2 with stride 1 need 8 positions
            done = self.be.window_max_backward(yv, xv, yv, (2, 2), (1, 1), (1, 1), out)
        except Exception:  # noqa: BLE001
            done = False
        assert not done, "window_max_backward accepted windows that do not fit in out"
        assert not read(self.be, out).any(), "window_max_backward wrote into out"
        assert outside_untouched(self.be, out, "float32"), "window_max_backward wrote outside out"
