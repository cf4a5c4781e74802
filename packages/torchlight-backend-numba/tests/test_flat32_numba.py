"""The large contiguous float32 route (``_flat32``) against the numpy backend's ufuncs, through
the backend's ``map``/``zip`` with ``TensorData`` views, serial and parallel compilations."""

import math

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.numba import _jit, routing
from torchlight.backends.numba import backend as B
from torchlight.backends.numba._flat32 import FLAT_MAP, FLAT_ZIP, map32
from torchlight.tensor.storage import TensorData

BK = B.NumbaBackend()
NP = BK._np
N = routing.FLAT_ZIP_MIN + 4099  # above both thresholds, not a multiple of the block
SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -100.0, 100.0, 88.0, -86.5, 20.0, -20.0]


@pytest.fixture(params=["serial", "parallel"])
def path(request, monkeypatch):
    which = "par" if request.param == "parallel" else "ser"
    monkeypatch.setattr(_jit.Kernel, "pick", lambda self, work, minimum=None: getattr(self, which))


def values(seed, offset=3):
    rng = np.random.default_rng(seed)
    buf = np.zeros(N + offset, np.float32)
    buf[offset:] = rng.standard_normal(N) * 4
    buf[offset : offset + len(SPECIAL)] = SPECIAL
    return buf, TensorData(buf, (N,), (1,), offset)


def out_view():
    buf = np.full(N + 5, 7.0, np.float32)
    return buf, TensorData(buf, (N,), (1,), 5)


@pytest.mark.parametrize("op", sorted(set(FLAT_MAP) - {"gelu_tanh", "gelu"}))
def test_map(path, op):
    _, x = values(1)
    got_buf, got = out_view()
    want_buf, want = out_view()
    with np.errstate(all="ignore"):
        BK.map(op, x, got)
        NP.map(op, x, want)
        # exp_fast flushes results below e^-86 (~4e-38) to 0 where numpy gives subnormals
        np.testing.assert_allclose(got_buf, want_buf, rtol=4e-7, atol=1e-37)
    assert (got_buf[:5] == 7).all()


@pytest.mark.parametrize("op", sorted(set(FLAT_ZIP) - {"gelu_tanh_back", "gelu_back"}))
@pytest.mark.parametrize("mode", ["array-array", "array-scalar", "scalar-array"])
def test_zip_is_bit_identical_to_numpy(path, op, mode):
    _, a = values(2)
    _, b = values(3, offset=1)
    s = TensorData(np.array([9.0, -1.5], np.float32), (N,), (0,), 1)
    a, b = {"array-array": (a, b), "array-scalar": (a, s), "scalar-array": (s, b)}[mode]
    got_buf, got = out_view()
    want_buf, want = out_view()
    with np.errstate(all="ignore"):
        BK.zip(op, a, b, got)
        NP.zip(op, a, b, want)
    np.testing.assert_array_equal(got_buf, want_buf)


@pytest.mark.parametrize("op", sorted(set(FLAT_ZIP) - {"gelu_tanh_back", "gelu_back"}))
def test_zip_in_place(path, op):
    abuf, a = values(8)
    _, b = values(9, offset=0)
    wa_buf, wa = values(8)  # the same values: numpy in place on these, the backend on abuf
    with np.errstate(all="ignore"):
        NP.zip(op, wa, b, wa)
        BK.zip(op, a, b, a)
    np.testing.assert_array_equal(abuf[3:], wa_buf[3:])


def test_gelu_tanh_against_float64(path):
    # against float64, not numpy's float32 ufuncs: ½x(1 + tanh u) cancels for x < -3 in float32
    xbuf, x = values(7)
    got_buf, got = out_view()
    BK.map("gelu_tanh", x, got)
    x64 = xbuf[3:].astype(np.float64)
    with np.errstate(all="ignore"):
        want = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)))
    np.testing.assert_allclose(
        got_buf[5:], want, rtol=1e-6, atol=1e-8
    )  # float64 cancels too, below -18


def gelu_tanh_back64(x, g):
    x, g = x.astype(np.float64), g.astype(np.float64)
    c = np.sqrt(2 / np.pi)
    t = np.tanh(c * (x + 0.044715 * x**3))
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x))


def test_gelu_tanh_back_against_float64(path):
    xbuf, x = values(5)
    xbuf[3 : 3 + len(SPECIAL)] = np.nan_to_num(
        np.array(SPECIAL, np.float32), posinf=30.0, neginf=-30.0
    )
    gbuf, g = values(6, offset=0)
    gbuf[: len(SPECIAL)] = 1.5
    got_buf, got = out_view()
    BK.zip("gelu_tanh_back", x, g, got)
    want = gelu_tanh_back64(xbuf[3:], gbuf)
    np.testing.assert_allclose(got_buf[5:], want, rtol=2e-6, atol=2e-6)
    # a broadcast operand keeps the general route (numpy), same values
    s = TensorData(np.array([0.7], np.float32), (N,), (0,), 0)
    BK.zip("gelu_tanh_back", x, s, got)
    np.testing.assert_allclose(
        got_buf[5:], gelu_tanh_back64(xbuf[3:], np.float32(0.7)), rtol=2e-6, atol=2e-6
    )


_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def ncdf64(x):
    """Φ(x) in float64 from ``math.erfc``: exact in the left tail too."""
    return 0.5 * _erfc(-x / math.sqrt(2.0))


def test_gelu_against_float64(path):
    # against float64, not numpy's float32 ufuncs: ½x(1 + erf(x/√2)) cancels for x < -3 in float32,
    # where this loop computes the tail Φ(-|x|) = ½ erfc(|x|/√2) itself
    xbuf, x = values(10)
    xbuf[3 : 3 + 7] = [-5.0, -7.5, -10.0, -12.0, -0.7518, 1e-5, -1e-5]
    got_buf, got = out_view()
    BK.map("gelu", x, got)
    x64 = xbuf[3:].astype(np.float64)
    with np.errstate(all="ignore"):
        want = x64 * ncdf64(x64)
    np.testing.assert_allclose(got_buf[5:], want, rtol=5e-7, atol=1e-37)


def test_gelu_back_against_float64(path):
    xbuf, x = values(11)
    gbuf, g = values(12, offset=0)
    got_buf, got = out_view()
    BK.zip("gelu_back", x, g, got)
    x64, g64 = xbuf[3:].astype(np.float64), gbuf.astype(np.float64)
    with np.errstate(all="ignore"):
        want = g64 * (ncdf64(x64) + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi))
    # |g| up to ~16 and a root of the slope at x ≈ -0.75: relative 6e-7, absolute 3e-6
    np.testing.assert_allclose(got_buf[5:], want, rtol=6e-7, atol=3e-6)


def test_gelu_of_small_tensors_takes_the_loop():
    # erf through libm costs ~6 ns a value; these loops run gelu at every size
    x = tl.tensor(np.linspace(-3, 3, 48, dtype=np.float32), device="numba").view(6, 8)
    assert routing.explain("gelu", x) == "_flat32.map32"
    assert routing.explain("gelu_back", x, x) == "_flat32.zip32"
    assert routing.explain("erf", x) == "_flat32.map32"
    assert routing.explain("gelu", x[:, ::2]) == "_elementwise.map_strided"
    assert routing.explain("gelu", x.double()) == "_packed.map"  # float64: libm's erf
    with tl.no_grad():
        y = tl.nn.functional.gelu(x)
    np.testing.assert_allclose(
        y.numpy(), x.numpy() * ncdf64(x.numpy().astype(np.float64)), rtol=5e-7
    )


def test_strided_and_small_operands_keep_the_general_route(path):
    buf, _ = values(4)
    x = TensorData(buf, (N // 2,), (2,), 0)  # every other element: not flat
    got_buf, got = out_view()
    with np.errstate(all="ignore"):
        BK.map("exp", x, TensorData(got_buf, (N // 2,), (1,), 0))
        np.testing.assert_allclose(got_buf[: N // 2], np.exp(buf[: N - 1 : 2][: N // 2]), rtol=4e-6)
    small = TensorData(buf, (100,), (1,), 0)
    BK.zip("add", small, small, TensorData(got_buf, (100,), (1,), 0))
    np.testing.assert_array_equal(got_buf[:100], buf[:100] + buf[:100])


def test_tanh_around_the_clamp(path):
    """``tanh32`` clamps its input at ``formulas.TANH32_CLAMP``, the point where the ratio
    evaluated with fused multiply-adds reaches exactly 1: from there on the result is exactly ±1,
    and below it the error against tanh stays within the approximation's 3e-7. The other clamp
    (7.9053, right for unfused evaluation) would saturate at 1 - 4 ulp instead, and the unfused
    evaluation at this clamp at 1 - 2 ulp: both fail the first assertion."""
    from torchlight.tensor.formulas import TANH32_CLAMP

    x = np.concatenate(
        [
            np.linspace(5.0, 12.0, N // 2, dtype=np.float32),
            -np.linspace(5.0, 12.0, N - N // 2, dtype=np.float32),
        ]
    )
    x[:3] = [TANH32_CLAMP, -TANH32_CLAMP, 7.90531110763549805]
    out = np.empty_like(x)
    BK.map("tanh", TensorData(x, (N,)), TensorData(out, (N,)))
    beyond = np.abs(x) >= np.float32(TANH32_CLAMP)
    assert (out[beyond] == np.sign(x[beyond])).all()
    np.testing.assert_allclose(out, np.tanh(x.astype(np.float64)), rtol=0, atol=3e-7)


@pytest.mark.slow
def test_fused_float32_tanh_is_the_same_function():
    import torchlight as tl

    x = np.linspace(-12.0, 12.0, 4001, dtype=np.float32)
    x[:2] = [np.float32(7.99881172180175781), 5.5]
    tape = tl.jit.trace(lambda a: (a * 1.0).tanh(), tl.tensor(x).to("numba"))
    got = tape(tl.tensor(x).to("numba")).numpy()
    out = np.empty_like(x)
    map32(FLAT_MAP["tanh"], x, out, x.size)  # the large-array path, called directly
    np.testing.assert_array_equal(got[np.abs(x) > 1e-3], out[np.abs(x) > 1e-3])
