"""The numba backend's ``random`` capability: ``tl.rand``/``tl.randn`` and dropout masks drawn by
a kernel. The numbers are checked against SplitMix64 and the polar method re-derived here in
Python integers (the oracle), the two builds (parallel, serial) against each other, and what a
user sees: ``manual_seed`` repeats them, dropout keeps about ``1 - p`` of the values, scaled."""

import math

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.numba import _jit
from torchlight.backends.numba._random import normal_kernel, uniform_kernel
from torchlight.tensor.random import stream_base

MASK = (1 << 64) - 1


def splitmix(base, counter):
    """SplitMix64's output for ``counter`` from the state ``base``, in Python integers."""
    z = (base + counter * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def polar_pair(base, j, pairs):
    """The polar method's pair ``j`` of a fill of ``pairs`` pairs, in Python floats."""
    a = 0
    while True:
        c = 2 * (j + a * pairs) + 1
        v1 = (splitmix(base, c) >> 11) * 2.0**-52 - 1.0
        v2 = (splitmix(base, c + 1) >> 11) * 2.0**-52 - 1.0
        s = v1 * v1 + v2 * v2
        if 0.0 < s < 1.0:
            f = math.sqrt(-2.0 * math.log(s) / s)
            return v1 * f, v2 * f
        a += 1


@pytest.mark.parametrize("dtype, bits", [(np.float32, 24), (np.float64, 53)])
def test_uniform_is_splitmix64_top_bits(dtype, bits):
    base = stream_base(7, 2)
    out = np.zeros(40, dtype)
    uniform_kernel.ser(out, 3, 33, np.uint64(base), bits)
    want = [(splitmix(base, i + 1) >> (64 - bits)) * 2.0**-bits for i in range(33)]
    np.testing.assert_array_equal(out[3:36], np.array(want, dtype))
    assert not out[:3].any() and not out[36:].any()  # nothing written outside the view


@pytest.mark.parametrize("n", [1, 2, 9])
def test_normal_is_the_polar_method(n):
    base = stream_base(11, 0)
    out = np.zeros(n, np.float64)
    normal_kernel.ser(out, 0, n, np.uint64(base))
    pairs = (n + 1) // 2
    want = [x for j in range(pairs) for x in polar_pair(base, j, pairs)][:n]
    np.testing.assert_allclose(out, want, rtol=1e-14, atol=0)


def test_parallel_and_serial_builds_agree():
    n = _jit.PARALLEL_MIN + 999  # odd: the last pair of the normal fill has one element
    base = np.uint64(stream_base(3, 4))
    for kern, args in ((uniform_kernel, (24,)), (normal_kernel, ())):
        a, b = np.zeros(n + 2, np.float32), np.zeros(n + 2, np.float32)
        kern.ser(a, 1, n, base, *args)
        kern.par(b, 1, n, base, *args)
        np.testing.assert_array_equal(a, b)


def test_rand_and_randn_on_numba_repeat_with_the_seed():
    tl.manual_seed(5)
    a, b = tl.rand(1000, device="numba"), tl.randn(3, 333, device="numba")
    tl.manual_seed(5)
    a2, b2 = tl.rand(1000, device="numba"), tl.randn(3, 333, device="numba")
    assert a.device == "numba" and a.dtype is tl.float32
    np.testing.assert_array_equal(a.numpy(), a2.numpy())
    np.testing.assert_array_equal(b.numpy(), b2.numpy())
    c = tl.rand(1000, device="numba")  # the next fill: other numbers
    assert (c.numpy() != a.numpy()).mean() > 0.99
    x = a.numpy()
    assert x.min() >= 0.0 and x.max() < 1.0


def test_rand_float64_has_53_random_bits():
    x = tl.rand(4096, dtype=tl.float64, device="numba").numpy()
    # a float32 draw widened would leave the low 29 bits of every mantissa zero
    assert (x * 2.0**53 % 2.0**29 != 0).mean() > 0.9


def test_dropout_on_numba_keeps_one_minus_p_scaled():
    p = 0.25
    tl.manual_seed(0)
    x = tl.ones(200, 500, device="numba", requires_grad=True)
    y = tl.nn.functional.dropout(x, p=p)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / kept.size)
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / (1 - p), rtol=1e-6)
    y.sum().backward()  # the gradient is the same mask, scaled
    np.testing.assert_array_equal(x.grad.numpy() != 0, kept)
    np.testing.assert_allclose(x.grad.numpy()[kept], 1 / (1 - p), rtol=1e-6)
