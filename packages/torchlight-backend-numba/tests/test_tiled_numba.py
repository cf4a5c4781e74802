"""The tiled ``where``/zip route (``_tiled``), the chunked column reduction and the SIMD row
helpers (``_rowops``) against numpy, through the backend with ``TensorData`` views: repeated
tiles, scalars, full operands, views that must fall back (permuted, sliced), sizes on both sides
of the thresholds, serial and parallel compilations."""

import numpy as np
import pytest

from torchlight.backends.numba import _jit, routing
from torchlight.backends.numba import _tiled as T
from torchlight.backends.numba import backend as B
from torchlight.backends.numba._rowops import row_max, row_sum
from torchlight.tensor.storage import TensorData

BK = B.NumbaBackend()
KERNELS = B.NumbaBackend(numpy_ufuncs=False)  # every reduction on a numba kernel, small ones too


@pytest.fixture(params=["serial", "parallel"])
def path(request, monkeypatch):
    which = "par" if request.param == "parallel" else "ser"
    monkeypatch.setattr(_jit.Kernel, "pick", lambda self, work, minimum=None: getattr(self, which))
    return which


def view(arr, offset=2):
    """A contiguous TensorData over a storage that starts ``offset`` elements in."""
    buf = np.zeros(arr.size + offset, arr.dtype)
    buf[offset:] = arr.reshape(-1)
    return TensorData(buf, arr.shape, None, offset)


def scalar(value, dtype, shape):
    return TensorData(np.array([0, value], dtype), shape, (0,) * len(shape), 1)


def out_of(shape, dtype):
    buf = np.full(int(np.prod(shape)) + 3, 7, dtype)
    return buf, TensorData(buf, shape, None, 3)


def result(buf, shape):
    assert (buf[:3] == buf.dtype.type(7)).all()  # nothing written before the view
    return buf[3:].reshape(shape)


# shapes: (B, H, T, T) with a (T, T) mask repeated; a size below TILE_MIN; a row of 17 values
@pytest.mark.parametrize("shape", [(5, 3, 16, 16), (2, 64, 64), (3, 17), (4, 5000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_where_tiles(path, shape, dtype):
    rng = np.random.default_rng(0)
    tile = shape[-2:] if len(shape) > 2 else shape[-1:]
    mask = rng.random(tile) < 0.4
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    y = (rng.standard_normal(shape) * 10).astype(dtype)
    c = view(mask).expand(shape)
    fill = dtype(1) if dtype is np.bool_ else dtype(-3)
    for a, b, want in [
        (scalar(fill, dtype, shape), view(x), np.where(mask, fill, x)),  # masked_fill
        (view(x), scalar(fill, dtype, shape), np.where(mask, x, fill)),
        (view(x), view(y), np.where(mask, x, y)),
        (
            view(x[(0,) * (len(shape) - len(tile))]).expand(shape),
            view(y),
            np.where(mask, x[(0,) * (len(shape) - len(tile))], y),
        ),  # two operands repeat
    ]:
        buf, out = out_of(shape, dtype)
        BK.where(c, a, b, out)
        np.testing.assert_array_equal(result(buf, shape), want)


def test_where_full_cond_and_partial_last_row(path):
    n = 3 * T.TILE + 5  # no operand repeats: rows of TILE, the last one short
    rng = np.random.default_rng(1)
    cond = rng.random(n) < 0.5
    x = rng.standard_normal(n).astype(np.float32)
    buf, out = out_of((n,), np.float32)
    BK.where(view(cond), view(x), scalar(np.float32(np.nan), np.float32, (n,)), out)
    np.testing.assert_array_equal(result(buf, (n,)), np.where(cond, x, np.nan))


@pytest.mark.parametrize("threshold", [0, 1 << 30])
def test_where_fallbacks_agree(path, monkeypatch, threshold):
    # permuted and sliced operands are not tiles: the strided kernel must give the same answer
    monkeypatch.setattr(routing, "TILE_MIN", threshold)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 40, 32)).astype(np.float32)
    mask = rng.random((32, 40)) < 0.5
    xt = view(x).permute((0, 2, 1))  # (6, 32, 40), not contiguous
    big = view(rng.standard_normal((6, 32, 50)).astype(np.float32))
    sliced = TensorData(big.storage, (6, 32, 40), big.strides, big.offset + 3)
    for a in (xt, sliced, view(np.ascontiguousarray(x.transpose(0, 2, 1)))):
        buf, out = out_of((6, 32, 40), np.float32)
        BK.where(
            view(mask).expand((6, 32, 40)),
            scalar(np.float32(-np.inf), np.float32, (6, 32, 40)),
            a,
            out,
        )
        want = np.where(mask, -np.inf, BK.to_numpy(a))
        np.testing.assert_array_equal(result(buf, (6, 32, 40)), want)


@pytest.mark.parametrize("op", sorted(T.TILE_ZIP))
@pytest.mark.parametrize("rows,cols", [(700, 130), (33, 2048), (2, 40)])
def test_zip_row_broadcast_is_bit_identical(path, monkeypatch, op, rows, cols):
    monkeypatch.setattr(routing, "TILE_ZIP_MIN", 0)  # also the small shapes
    rng = np.random.default_rng(3)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    row = (rng.standard_normal(cols) + 3).astype(np.float32)
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    for x, y, want in [
        (view(a), view(row).expand((rows, cols)), ufunc(a, row)),
        (view(row).expand((rows, cols)), view(a), ufunc(row, a)),
    ]:
        buf, out = out_of((rows, cols), np.float32)
        BK.zip(op, x, y, out)
        np.testing.assert_array_equal(result(buf, (rows, cols)), want)


def test_zip_tiles_above_default_threshold(path):
    a = (
        np.random.default_rng(4)
        .standard_normal((routing.TILE_ZIP_MIN // 256 + 3, 256))
        .astype(np.float32)
    )
    b = np.arange(256, dtype=np.float32)
    buf, out = out_of(a.shape, np.float32)
    BK.zip("add", view(a), view(b).expand(a.shape), out)
    np.testing.assert_array_equal(result(buf, a.shape), a + b)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("rows", [2, 129, 3000])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_reduce_cols(path, op, rows, dtype, monkeypatch):
    monkeypatch.setattr(routing, "COLS_NUMBA_MIN", 0)  # the kernel itself, at every size
    rng = np.random.default_rng(5)
    full = (rng.standard_normal((rows, 96 + 7)) * (1 if op == "prod" else 100)).astype(dtype)
    if dtype == np.float32:
        full[rows // 2, 3] = np.nan
        full[0, 5] = np.inf
    a = view(full)
    a = TensorData(
        a.storage, (rows, 96), a.strides, a.offset + 7
    )  # sliced columns: rows not contiguous
    x = full[:, 7:]
    out = TensorData(np.zeros(96, dtype), (1, 96))
    BK.reduce(op, a, (0,), out)
    with np.errstate(all="ignore"):
        want = getattr(np, op)(
            x.astype(np.float64 if dtype == np.float32 else dtype), axis=0, keepdims=True
        )
    np.testing.assert_allclose(out.storage.reshape(1, 96), want.astype(dtype), rtol=1e-6)


def test_reduce_cols_does_not_depend_on_threads():
    x = view(np.random.default_rng(6).standard_normal((4096, 512)).astype(np.float32))
    got = []
    for which in ("ser", "par"):
        out = TensorData(np.zeros(512, np.float32), (1, 512))
        pick = _jit.Kernel.pick
        try:
            _jit.Kernel.pick = lambda self, work, minimum=None, w=which: getattr(self, w)
            BK.reduce("sum", x, (0,), out)
        finally:
            _jit.Kernel.pick = pick
        got.append(out.storage.copy())
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize(
    "shape,dims", [((300, 1000), (1,)), ((1000, 300), (0, 1)), ((70000,), (0,))]
)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_contiguous_sums(path, shape, dims, dtype):
    x = (np.random.default_rng(7).standard_normal(shape) * 1000).astype(dtype)
    want = x.astype(np.float64 if dtype == np.float32 else np.int64).sum(axis=dims, keepdims=True)
    out = TensorData(np.zeros(want.size, dtype), want.shape)
    KERNELS.reduce("sum", view(x), dims, out)  # the kernels accumulate in float64
    np.testing.assert_allclose(out.storage.reshape(want.shape), want.astype(dtype), rtol=1e-6)


SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_max_and_sum_helpers(dtype):
    from numba import njit

    @njit
    def both(x, p, n):
        return row_max(x, p, n), row_sum(x, p, n)

    rng = np.random.default_rng(8)
    for trial in range(300):
        n = int(rng.integers(1, 150))
        x = (rng.standard_normal(n + 4) * 10.0 ** rng.integers(-30, 30)).astype(dtype)
        if trial % 3 == 0:
            x[4 + rng.integers(0, n, size=2)] = rng.choice(SPECIAL, size=2)
        if trial % 17 == 0:
            x[4:] = rng.choice([-np.inf, -0.0, 0.0])
        for fn in (both, getattr(both, "py_func", both)):  # compiled, and pure Python (DISABLE_JIT)
            m, s = fn(x, 4, n)
            row = x[4 : 4 + n]
            with np.errstate(all="ignore"):
                want_m, want_s = row.max(), row.astype(np.float64).sum()
            if np.isnan(want_m):
                assert np.isnan(m)
            else:
                assert m == want_m and (want_m != 0 or np.signbit(m) == np.signbit(want_m)), (
                    row,
                    m,
                )
            scale = np.abs(row.astype(np.float64)).sum()  # the sum's order is not numpy's
            if np.isfinite(scale):
                assert abs(s - want_s) <= 1e-12 * scale, (row, s, want_s)
            else:
                np.testing.assert_equal(s, want_s)
