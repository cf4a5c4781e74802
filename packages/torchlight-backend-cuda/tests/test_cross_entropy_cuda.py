"""The fused cross-entropy kernels against a float64 numpy reference, on a GPU or under numba's
CUDA simulator (``NUMBA_ENABLE_CUDASIM=1`` before numba is imported); skipped without either.

The backend is driven directly through ``TensorData`` views so that every layout the contract
allows is exercised: transposed and sliced logits, strided and offset per-row vectors, a
stride-0 upstream gradient (what a ``mean`` reduction's backward passes). Sizes stay tiny: under
the simulator a row block is 4 threads and the grid at most 2 blocks, so N = 5 already walks the
grid-stride loop and C = ROW_BLOCK + 37 the in-row stride.
"""

import numpy as np
import pytest

from torchlight.backends.cuda.spec import SPEC
from torchlight.tensor.storage import TensorData

pytestmark = pytest.mark.skipif(
    not SPEC.is_available(), reason=f"cuda backend unavailable here: {SPEC.why_unavailable()}"
)

TOL = {np.float32: dict(rtol=2e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture(scope="module")
def be():
    from torchlight.backends.cuda.backend import CudaBackend

    return CudaBackend()


def _logits(be, a, layout):
    """A device view equal to ``a`` (N, C) laid out as ``layout``."""
    n, c = a.shape
    if layout == "contiguous":
        return TensorData(be.from_numpy(a), a.shape)
    if layout == "transposed":
        return TensorData(be.from_numpy(np.ascontiguousarray(a.T)), (c, n)).permute((1, 0))
    big = np.full((2 * n + 3, 2 * c + 5), np.nan, a.dtype)  # NaN: reading outside the view shows
    big[2 : 2 + 2 * n : 2, 3 : 3 + 2 * c : 2] = a
    return (
        TensorData(be.from_numpy(big), big.shape)
        .slice(0, 2, 2 + 2 * n, 2)
        .slice(1, 3, 3 + 2 * c, 2)
    )


def _vector(be, v, step=2, offset=1):
    """A device view equal to ``v`` (N,) with stride ``step`` at ``offset``."""
    buf = np.zeros(offset + step * len(v) + 1, v.dtype)
    buf[offset : offset + step * len(v) : step] = v
    return TensorData(be.from_numpy(buf), (len(v),), (step,), offset)


def _out_vector(be, n, dtype):
    return _vector(be, np.full(n, np.nan, dtype), step=3, offset=2)


def _reference(x, t, w):
    """(loss, logs) with ``logs = log Σ exp(x - max)``, what the forward saves."""
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    logs = np.log(np.exp(x - m).sum(axis=1, keepdims=True))[:, 0]
    with np.errstate(invalid="ignore"):
        loss = np.where(w != 0, w * ((m[:, 0] - x[np.arange(len(t)), t]) + logs), 0.0)
    return loss, logs


def _reference_backward(x, t, w, logs, g):
    x = x.astype(np.float64)
    d = np.exp((x - x.max(axis=1, keepdims=True)) - logs.astype(np.float64)[:, None])
    d[np.arange(len(t)), t] -= 1
    d *= (g * w)[:, None]
    d[w == 0] = 0
    return d


def _run(be, x, t, w, g, layout="contiguous", g_broadcast=False):
    n, c = x.shape
    dt = x.dtype
    xv = _logits(be, x, layout)
    tv, wv = _vector(be, t), _vector(be, w, step=1, offset=3)
    loss, lse = _out_vector(be, n, dt), _out_vector(be, n, dt)
    be.cross_entropy(xv, tv, wv, loss, lse)
    if g_broadcast:
        gv = TensorData(be.from_numpy(g[:1].copy()), (1,)).expand((n,))
    else:
        gv = _vector(be, g, step=2, offset=0)
    dxs = TensorData(be.from_numpy(np.full((c, n), np.nan, dt)), (c, n)).permute((1, 0))
    lse_host = be.to_numpy(lse)
    be.cross_entropy_backward(xv, tv, wv, lse, gv, dxs)
    return be.to_numpy(loss), lse_host, be.to_numpy(dxs)


def _check(be, x, t, w, g, **kw):
    loss, lse, dx = _run(be, x, t, w, g, **kw)
    if kw.get("g_broadcast"):
        g = np.full_like(g, g[0])
    tol = TOL[x.dtype.type]
    want_loss, want_lse = _reference(x, t, w)
    np.testing.assert_allclose(lse, want_lse, **tol)
    np.testing.assert_allclose(loss, want_loss, **tol)
    # the backward's contract is in terms of the logs it is given: the stored (rounded) one
    np.testing.assert_allclose(dx, _reference_backward(x, t, w, lse, g), **tol)
    return loss, lse, dx


def _inputs(n, c, dtype, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * scale).astype(dtype)
    t = rng.integers(0, c, n).astype(np.int64)
    w = rng.uniform(0.5, 2.0, n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    return x, t, w, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_matches_reference(be, dtype, layout):
    _check(be, *_inputs(5, 7, dtype), layout=layout)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_wider_than_a_block(be, dtype):
    from torchlight.backends.cuda._launch import ROW_BLOCK

    x, t, w, g = _inputs(3, ROW_BLOCK + 37, dtype, seed=1)
    t[0], t[1] = 0, ROW_BLOCK + 36  # first and last column
    _check(be, x, t, w, g, layout="transposed", g_broadcast=True)


def test_single_class(be):
    x, t, w, g = _inputs(4, 1, np.float64, seed=2)
    loss, lse, dx = _check(be, x, t, w, g)
    assert np.array_equal(lse, np.zeros(4)) and np.array_equal(loss, np.zeros(4))
    assert np.array_equal(dx, np.zeros((4, 1)))


def test_no_rows(be):
    x = TensorData(be.from_numpy(np.zeros(1, np.float32)), (0, 3))
    e = TensorData(be.from_numpy(np.zeros(1, np.float32)), (0,))
    t = TensorData(be.from_numpy(np.zeros(1, np.int64)), (0,))
    be.cross_entropy(x, t, e, e, e)
    be.cross_entropy_backward(x, t, e, e, e, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_magnitudes_are_stable(be, dtype):
    x = np.array(
        [
            [1e4, -1e4, 0.0, 9999.0],
            [-1e4, -1e4, -1e4, -1e4],
            [1e4, 1e4, -1e4, 1e4],
            [-1e4, -9999.5, -1e4, -1e4],
            [1e4, 1e4 - 3, -1e4, 5.0],
        ],
        dtype,
    )
    t = np.array([3, 0, 2, 1, 0], np.int64)
    w = np.ones(5, dtype)
    g = np.ones(5, dtype)
    loss, lse, dx = _check(be, x, t, w, g, layout="sliced")
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(dx))
    # loss = (m - x_t) + log s: no 1e4-sized rounding in the small losses
    np.testing.assert_allclose(loss[0], 1.0 + np.log1p(np.exp(-1.0)), rtol=1e-6)
    np.testing.assert_allclose(loss[1], np.log(4.0), rtol=1e-6)
    np.testing.assert_allclose(loss[3], np.log1p(3 * np.exp(-0.5)), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weight_zero_rows_are_exactly_zero(be, dtype):
    x, t, w, g = _inputs(5, 6, dtype, seed=3)
    x[1, 2] = np.inf
    x[3, :] = np.nan
    w[[1, 3]] = 0
    loss, lse, dx = _run(be, x, t, w, g)
    assert loss[1] == 0 and loss[3] == 0 and not np.any(dx[[1, 3]])
    keep = [0, 2, 4]
    want_loss, want_lse = _reference(x[keep], t[keep], w[keep])
    np.testing.assert_allclose(loss[keep], want_loss, **TOL[dtype])
    np.testing.assert_allclose(
        dx[keep], _reference_backward(x[keep], t[keep], w[keep], lse[keep], g[keep]), **TOL[dtype]
    )


def test_all_minus_inf_row_has_minus_inf_logs(be):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, 2.0]])
    t = np.array([0, 2], np.int64)
    w = np.array([0.0, 1.0])
    loss, lse, _ = _run(be, x, t, w, np.ones(2))
    assert lse[0] == -np.inf and loss[0] == 0
    np.testing.assert_allclose(loss[1], np.log(np.exp([-2.0, -1.0, 0.0]).sum()), rtol=1e-12)
