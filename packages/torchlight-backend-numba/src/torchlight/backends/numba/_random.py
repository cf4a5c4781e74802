"""Random fills (the ``random`` capability): ``rand``/``randn`` and dropout masks drawn by a kernel.

Element ``i`` of fill ``k`` after seeding with ``s`` is SplitMix64's output for the counter
``i + 1`` from the state ``base = stream_base(s, k)`` (:mod:`torchlight.tensor.random`):

    z = base + (i + 1)·φ,  z ^= z >> 30,  z *= 0xBF58476D1CE4E5B9,  z ^= z >> 27,
    z *= 0x94D049BB133111EB,  z ^= z >> 31

with φ = 2⁶⁴/golden ratio. No element depends on another, so a fill is the same whichever threads
draw which elements — a function of ``(s, k, i)`` alone, as the contract asks — and the loop is
straight-line integer arithmetic that LLVM vectorises. ``uniform`` keeps the top ``bits`` bits
(24 for float32, 53 for float64): ``u = (z >> (64 - bits)) · 2^-bits``, in [0, 1) and exact in
the target dtype. ``normal`` is Marsaglia's polar method on pairs of elements: pair ``j`` tries
``v₁, v₂`` uniform in [-1, 1) (53 bits each) from the counters ``2(j + aP) + 1`` and
``2(j + aP) + 2`` for attempts ``a = 0, 1, ...`` (``P`` pairs in the fill) until
``0 < s = v₁² + v₂² < 1`` (π/4 of tries), and elements ``2j``, ``2j + 1`` get ``vᵢ √(-2 ln s / s)``.
Every attempt has counters of its own, so the result still depends on ``(s, k, size)`` only;
one logarithm per pair, where Box–Muller's cosine and sine made it 1.4× slower.

Against numpy's PCG64 draws, which the host path takes (``rng.random`` in float64, then a float32
copy): 2M float32 uniforms in 1.4–1.9 ms against 13.2–13.6 ms on one core (``bench_ops.py
--device numba --only "rand (2097152)"``).
"""

import math

import numpy as np

from numba import njit, prange
from torchlight.tensor.random import GOLDEN

from ._jit import JIT_OPTIONS, kernel

__all__ = ["uniform_kernel", "normal_kernel"]

_GOLDEN = np.uint64(GOLDEN)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


# inlined into the loops (a call per element would cost more than the arithmetic and keep the
# loop from vectorising); its locals carry a prefix, as _fastexp explains
@njit(inline="always", **JIT_OPTIONS)
def _mix(mx_base, mx_counter):
    """SplitMix64's output for ``counter`` (≥ 1) from the state ``base``: a uint64."""
    mx_z = mx_base + np.uint64(mx_counter) * _GOLDEN
    mx_z = (mx_z ^ (mx_z >> np.uint64(30))) * _M1
    mx_z = (mx_z ^ (mx_z >> np.uint64(27))) * _M2
    return mx_z ^ (mx_z >> np.uint64(31))


@kernel
def uniform_kernel(out, off, n, base, bits):
    """``out[off : off + n]`` = uniforms in [0, 1) of ``bits`` random bits each."""
    o = out[off : off + n]  # sliced first: see _updates.adam_kernel
    shift = np.uint64(64 - bits)
    scale = 1.0 / (1 << bits)
    for i in prange(n):
        o[i] = np.int64(_mix(base, i + 1) >> shift) * scale


@kernel
def normal_kernel(out, off, n, base):
    """``out[off : off + n]`` = standard normal draws, by the polar method over pairs."""
    o = out[off : off + n]
    pairs = (n + 1) // 2
    scale = 2.0 / (1 << 53)
    shift = np.uint64(11)
    for j in prange(pairs):
        a = 0
        while True:
            c = 2 * (j + a * pairs) + 1
            v1 = np.int64(_mix(base, c) >> shift) * scale - 1.0
            v2 = np.int64(_mix(base, c + 1) >> shift) * scale - 1.0
            s = v1 * v1 + v2 * v2
            if 0.0 < s < 1.0:
                break
            a += 1
        f = math.sqrt(-2.0 * math.log(s) / s)
        o[2 * j] = v1 * f
        if 2 * j + 1 < n:
            o[2 * j + 1] = v2 * f
