"""The fused Adam kernel's two builds: the parallel one (parameters of at least PARALLEL_MIN
values, more than one thread) must update the caller's storage exactly as the serial one does,
at offsets, leaving the storage around each view untouched. The conformance kit's sizes reach
only the serial build."""

import numpy as np
import pytest

from torchlight.backends.numba import _jit
from torchlight.backends.numba._updates import adam_kernel


@pytest.mark.parametrize("w1", [0.1, 0.9])  # both sides of the two-sided lerp
def test_parallel_and_serial_builds_agree_and_write_through(w1):
    n = _jit.PARALLEL_MIN + 1000
    rng = np.random.default_rng(3)
    base = [rng.standard_normal(n + 7).astype(np.float32) for _ in range(4)]
    base[3] = np.abs(base[3])  # the second moment is never negative
    out = {}
    for build in ("ser", "par"):
        p, g, m, v = (a.copy() for a in base)
        getattr(adam_kernel, build)(
            p, 1, g, 2, m, 3, v, 4, n, 1.0, 0.99, 0.01, w1, 0.999, 1e-8, 1e-3, 0.5
        )
        out[build] = (p, m, v)
        for got, start, orig in ((p, 1, base[0]), (m, 3, base[2]), (v, 4, base[3])):
            assert not np.array_equal(got[start : start + n], orig[start : start + n])
            np.testing.assert_array_equal(got[:start], orig[:start])
            np.testing.assert_array_equal(got[start + n :], orig[start + n :])
    for a, b in zip(out["ser"], out["par"]):
        np.testing.assert_array_equal(a, b)
    # against the formula in float64 (updates.py), on the parameter
    p0, g0, m0, v0 = (a.astype(np.float64) for a in base)
    g1 = g0[2 : 2 + n] + 0.01 * p0[1 : 1 + n]
    m1 = m0[3 : 3 + n] + (g1 - m0[3 : 3 + n]) * w1
    v1 = v0[4 : 4 + n] * 0.999 + g1 * g1 * (1 - 0.999)
    p1 = p0[1 : 1 + n] * 0.99 - 1e-3 * (m1 / (np.sqrt(v1) / 0.5 + 1e-8))
    np.testing.assert_allclose(out["par"][0][1 : 1 + n], p1, rtol=2e-6, atol=1e-7)
