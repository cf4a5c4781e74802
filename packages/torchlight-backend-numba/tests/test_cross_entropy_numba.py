"""The backend's fused ``cross_entropy`` / ``cross_entropy_backward`` against a float64 numpy
reference, called directly with ``TensorData`` views (the core's contract), on both the serial
and the parallel compilations."""

import numpy as np
import pytest

from torchlight.backends.numba import _jit
from torchlight.backends.numba.backend import NumbaBackend
from torchlight.tensor.storage import TensorData

BK = NumbaBackend()
TOL = {np.float32: dict(rtol=2e-6, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture(params=["serial", "parallel"])
def path(request, monkeypatch):
    # pick() never takes the parallel copy with one numba thread (the pinned test runs), so the
    # parallel compilation is forced here rather than through PARALLEL_MIN
    if request.param == "parallel":
        monkeypatch.setattr(_jit.Kernel, "pick", lambda self, work, minimum=None: self.par)
    else:
        monkeypatch.setattr(_jit.Kernel, "pick", lambda self, work, minimum=None: self.ser)
    return request.param


def reference(x, t, w, g):
    """(loss, logs, dx) in float64, ``logs = log Σ exp(x - max)``; dx from logs rounded to x's
    dtype, as the kernel receives it."""
    dtype = x.dtype
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    logs = np.log(np.exp(x - m).sum(axis=1, keepdims=True))[:, 0]
    rows = np.arange(x.shape[0])
    loss = np.where(w == 0, 0.0, w * ((m[:, 0] - x[rows, t]) + logs))
    p = np.exp((x - m) - logs.astype(dtype).astype(np.float64)[:, None])
    p[rows, t] -= 1.0
    dx = np.where((w == 0)[:, None], 0.0, (g * w)[:, None] * p)
    return loss, logs, dx


def view_of(a):
    """A TensorData over ``a``'s own base buffer, with ``a``'s strides and offset in elements."""
    base = a
    while base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    flat = base.reshape(-1)
    item = a.itemsize
    offset = (a.__array_interface__["data"][0] - flat.__array_interface__["data"][0]) // item
    return TensorData(flat, a.shape, tuple(s // item for s in a.strides), offset)


def strided_vector(n, dtype, fill=np.nan):
    """An (n,) view with stride 3 and offset 2 in a larger buffer (NaN where nothing is written)."""
    buf = np.full(3 * n + 5, fill, dtype=dtype)
    return buf, TensorData(buf, (n,), (3,), 2)


def layouts(x):
    """(name, ndarray view) pairs: contiguous, transposed, sliced, offset."""
    n, c = x.shape
    yield "contiguous", np.ascontiguousarray(x)
    yield "transposed", np.ascontiguousarray(x.T).T
    big = np.zeros((2 * n + 3, 3 * c + 2), dtype=x.dtype)
    big[1 : 2 * n + 1 : 2, 2 : 3 * c + 2 : 3] = x
    yield "sliced", big[1 : 2 * n + 1 : 2, 2 : 3 * c + 2 : 3]
    buf = np.zeros(n * c + 7, dtype=x.dtype)
    buf[7:] = x.reshape(-1)
    yield "offset", buf[7:].reshape(n, c)


def run(x, t, w, g, dtype):
    n, c = x.shape
    xv = view_of(x)
    tv = TensorData(np.ascontiguousarray(t, np.int64), (n,))
    wv = TensorData(np.ascontiguousarray(w, dtype), (n,))
    gv = TensorData(np.ascontiguousarray(g, dtype), (n,))
    lbuf, loss = strided_vector(n, dtype)
    ebuf, lse = strided_vector(n, dtype)
    BK.cross_entropy(xv, tv, wv, loss, lse)
    dxbuf = np.full(n * c * 2 + 1, np.nan, dtype)
    dx = TensorData(dxbuf, (n, c), (1, 2 * n), 1)  # column-major, every other column slot
    BK.cross_entropy_backward(xv, tv, wv, lse, gv, dx)
    dx_arr = np.lib.stride_tricks.as_strided(
        dxbuf[1:], (n, c), (dxbuf.itemsize, 2 * n * dxbuf.itemsize)
    )
    return lbuf[2::3][:n], ebuf[2::3][:n], np.array(dx_arr), lbuf, ebuf


def problem(n, c, dtype, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * scale).astype(dtype)
    t = rng.integers(0, c, size=n)
    w = rng.uniform(0.5, 2.0, size=n).astype(dtype)
    w[::5] = 0  # ignored rows
    g = rng.standard_normal(n).astype(dtype)
    return x, t, w, g


def check(x, t, w, g, dtype):
    loss, lse, dx, lbuf, ebuf = run(x, t, w, g, dtype)
    rl, re, rdx = reference(x, t, w, g)
    tol = TOL[dtype]
    scale = 1.0 + np.abs(x.astype(np.float64)).max(initial=0.0)
    np.testing.assert_allclose(lse, re, rtol=tol["rtol"], atol=tol["atol"])
    np.testing.assert_allclose(loss, rl, rtol=tol["rtol"], atol=tol["atol"] * scale)
    np.testing.assert_allclose(dx, rdx, rtol=tol["rtol"], atol=tol["atol"])
    assert np.all(loss[w == 0] == 0) and np.all(dx[w == 0] == 0)
    # only the view's elements were written
    assert np.isnan(np.delete(lbuf, np.arange(2, 2 + 3 * len(loss), 3))).all()
    assert np.isnan(np.delete(ebuf, np.arange(2, 2 + 3 * len(lse), 3))).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(37, 45), (64, 1024), (5, 7), (3, 1)])
def test_layouts(path, dtype, shape):
    x, t, w, g = problem(*shape, dtype)
    for name, xl in layouts(x):
        assert np.array_equal(xl, x), name
        check(xl, t, w, g, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_magnitudes_are_exact(path, dtype):
    x = np.array(
        [
            [1e4, -1e4, 0.0, 5.0],
            [-1e4, -1e4, -1e4, -1e4],
            [1e4, 1e4, -1e4, 1e4],
            [3.0, -1e4, 1e4, 2.0],
        ],
        dtype,
    )
    t = np.array([0, 2, 3, 1])
    w = np.ones(4, dtype)
    g = np.ones(4, dtype)
    loss, lse, dx, _, _ = run(x, t, w, g, dtype)
    np.testing.assert_allclose(
        lse, [0.0, np.log(4), np.log(3), 0.0], rtol=1e-7, atol=1e-7
    )  # log Σ exp(x - max)
    np.testing.assert_allclose(loss, [0.0, np.log(4), np.log(3), 2e4], rtol=1e-6, atol=1e-6)
    assert np.isfinite(dx).all()
    np.testing.assert_allclose(dx[1], [0.25, 0.25, -0.75, 0.25], rtol=1e-6)
    np.testing.assert_allclose(dx[2], [1 / 3, 1 / 3, 0.0, -2 / 3], rtol=1e-6)
    check(x, t, w, g, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zero_weight_rows_are_exactly_zero(path, dtype):
    x, t, w, g = problem(10, 6, dtype)
    w[:] = 1
    w[[1, 4]] = 0
    g[1], g[4] = np.inf, np.nan  # ignored rows: not even a non-finite upstream gradient leaks in
    loss, lse, dx, _, _ = run(x, t, w, g, dtype)
    assert loss[1] == 0 and loss[4] == 0
    assert np.all(dx[[1, 4]] == 0)
    assert np.isfinite(lse).all()
    keep = np.array([i not in (1, 4) for i in range(10)])
    rl, re, rdx = reference(x[keep], t[keep], w[keep], g[keep])
    np.testing.assert_allclose(loss[keep], rl, **TOL[dtype])
    np.testing.assert_allclose(dx[keep], rdx, **TOL[dtype])


def test_empty_batch_does_nothing(path):
    for dtype in (np.float32, np.float64):
        x = np.zeros((0, 5), dtype)
        t = np.zeros(0, np.int64)
        loss, lse, dx, lbuf, _ = run(x, t, np.zeros(0, dtype), np.zeros(0, dtype), dtype)
        assert loss.size == 0 and dx.shape == (0, 5) and np.isnan(lbuf).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_class(path, dtype):
    x, t, w, g = problem(9, 1, dtype, scale=100.0)
    loss, lse, dx, _, _ = run(x, t, w, g, dtype)
    np.testing.assert_array_equal(lse, 0.0)  # log Σ exp(x - max) of one value
    assert np.all(loss == 0) and np.all(dx == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_many_rows_parallel_sized(path, dtype):
    check(*problem(512, 300, dtype, seed=3), dtype)
