"""Large contiguous float32 elementwise ops: one SIMD loop per op, ``prange`` over blocks.

The generic kernels (``_elementwise``) pick the op by code per element and call scalar libm for
transcendental functions, so on one core they lose to numpy's SIMD ufuncs, which is why small
and float64 ops are routed to numpy. For a contiguous float32 operand of at least ``FLAT_MIN``
elements (``backend.py``) these kernels branch on the op once per block of ``BLOCK`` elements
and run a branch-free loop that LLVM vectorises — at least as fast as the ufunc on one core —
split across threads by ``prange``, which numpy cannot do.

    zip:  add, sub, mul, div; each operand an array or a scalar (a stride-0 broadcast)
    zip:  gelu_tanh_back(x, g) = g (s + 2 x u' s (1 - s)), both arrays, with
          u = √(2/π) (x + 0.044715 x³), s = σ(2u) = ½(1 + tanh u), 1 - s = e^(-2u) s
    map:  neg, relu = max(x, 0) (NaN stays NaN), exp, tanh, sigmoid = 1 / (1 + e^-x),
          gelu_tanh = ½ x (1 + tanh u) = x σ(2u)   (no tanh, so no cancellation in 1 + tanh)

Every exponential is ``exp_fast`` (~1e-7 relative error; 0 below -86 where numpy gives
subnormals); add/sub/mul/div round exactly as numpy does (one float32 operation), so those
results are bit-identical to the ufuncs. Measured on one core, 1M values: zips and neg at parity
with numpy, relu 3.6×, exp 1.8×, tanh 1.4×, sigmoid 20× faster. tanh is Eigen's rational
approximation x·P(x²)/Q(x²) (degrees 13/6, one division, max relative error 3e-7; x itself
for |x| < 4e-4); gelu_tanh and its backward are one pass instead of numpy's ~10 passes with
temporaries (~20× faster on one core).
"""

import numpy as np

from numba import prange

from ._fastexp import exp_fast, madd
from ._jit import helper, kernel

__all__ = ["BLOCK", "FLAT_MAP", "FLAT_ZIP", "map32", "zip32"]

BLOCK = 32768
FLAT_ZIP = {"add": 0, "sub": 1, "mul": 2, "div": 3, "gelu_tanh_back": 4}
FLAT_MAP = {"neg": 0, "relu": 1, "exp": 2, "sigmoid": 3, "gelu_tanh": 4, "tanh": 5}

f32 = np.float32
ZERO, ONE, TWO = f32(0.0), f32(1.0), f32(2.0)
GC, GK, GK3 = f32(2.0 * 0.7978845608028654), f32(0.044715), f32(3 * 0.044715)  # GC = 2·√(2/π)
# tanh(x) ≈ x·P(x²)/Q(x²) on [-7.99, 7.99] (float32 tanh is ±1 beyond), Eigen's coefficients
TANH_CLAMP, TANH_TINY = f32(7.99881172180175781), f32(0.0004)
A1, A3, A5 = f32(4.89352455891786e-03), f32(6.37261928875436e-04), f32(1.48572235717979e-05)
A7, A9 = f32(5.12229709037114e-08), f32(-8.60467152213735e-11)
A11, A13 = f32(2.00018790482477e-13), f32(-2.76076847742355e-16)
B0, B2 = f32(4.89352518554385e-03), f32(2.26843463243900e-03)
B4, B6 = f32(1.18534705686654e-04), f32(1.19825839466702e-06)
E_MAX = f32(80.0)  # keeps e^(-2u) finite in gelu_tanh_back, so e·s stays 1 - s instead of NaN


# The block helpers take block slices and loop from 0: with ``range(lo, hi)`` numba cannot prove
# the index non-negative, and its wraparound check on every access blocks the vectoriser.
@helper
def _zip_vv(op, a, b, out, n):
    if op == 0:
        for i in range(n):
            out[i] = a[i] + b[i]
    elif op == 1:
        for i in range(n):
            out[i] = a[i] - b[i]
    elif op == 2:
        for i in range(n):
            out[i] = a[i] * b[i]
    elif op == 3:
        for i in range(n):
            out[i] = a[i] / b[i]
    else:
        for i in range(n):
            out[i] = b[i] * _gelu_tanh_d(a[i])


@helper
def _zip_inplace(op, out, b, n):
    # out is also the first operand: with it passed twice, LLVM's runtime overlap check between
    # "a" and "out" fails and the scalar fallback loop runs (measured 2× slower than numpy's)
    if op == 0:
        for i in range(n):
            out[i] = out[i] + b[i]
    elif op == 1:
        for i in range(n):
            out[i] = out[i] - b[i]
    elif op == 2:
        for i in range(n):
            out[i] = out[i] * b[i]
    else:
        for i in range(n):
            out[i] = out[i] / b[i]


@helper
def _zip_vs(op, a, s, out, n):
    if op == 0:
        for i in range(n):
            out[i] = a[i] + s
    elif op == 1:
        for i in range(n):
            out[i] = a[i] - s
    elif op == 2:
        for i in range(n):
            out[i] = a[i] * s
    else:
        for i in range(n):
            out[i] = a[i] / s


@helper
def _zip_sv(op, s, b, out, n):
    if op == 0:
        for i in range(n):
            out[i] = s + b[i]
    elif op == 1:
        for i in range(n):
            out[i] = s - b[i]
    elif op == 2:
        for i in range(n):
            out[i] = s * b[i]
    else:
        for i in range(n):
            out[i] = s / b[i]


@helper
def _gelu_tanh_d(x):
    e = exp_fast(min(-GC * (x + GK * x * x * x), E_MAX))
    s = ONE / (ONE + e)
    return s + x * (GC * (ONE + GK3 * x * x)) * (e * s) * s


@kernel
def zip32(op, mode, a, b, out, n):
    """mode 0: a and b arrays of n; 1: b is a one-element scalar array; 2: a is (arithmetic only);
    3: out is a (in place, arithmetic only)."""
    for k in prange((n + BLOCK - 1) // BLOCK):
        lo = k * BLOCK
        hi = min(n, lo + BLOCK)
        if mode == 0:
            _zip_vv(op, a[lo:hi], b[lo:hi], out[lo:hi], hi - lo)
        elif mode == 1:
            _zip_vs(op, a[lo:hi], b[0], out[lo:hi], hi - lo)
        elif mode == 3:
            _zip_inplace(op, out[lo:hi], b[lo:hi], hi - lo)
        else:
            _zip_sv(op, a[0], b[lo:hi], out[lo:hi], hi - lo)


@helper
def _tanh(v):
    c = min(max(v, -TANH_CLAMP), TANH_CLAMP)  # NaN stays NaN
    x2 = c * c
    p = madd(madd(madd(madd(madd(madd(A13, x2, A11), x2, A9), x2, A7), x2, A5), x2, A3), x2, A1)
    q = madd(madd(madd(B6, x2, B4), x2, B2), x2, B0)
    return v if abs(v) < TANH_TINY else c * p / q


@helper
def _map_block(op, x, out, n):
    if op == 0:
        for i in range(n):
            out[i] = -x[i]
    elif op == 1:
        for i in range(n):
            out[i] = max(x[i], ZERO)
    elif op == 2:
        for i in range(n):
            out[i] = exp_fast(x[i])
    elif op == 3:
        for i in range(n):
            out[i] = ONE / (ONE + exp_fast(-x[i]))
    elif op == 4:
        for i in range(n):
            v = x[i]
            out[i] = v / (ONE + exp_fast(-GC * (v + GK * v * v * v)))
    else:
        for i in range(n):
            out[i] = _tanh(x[i])


@kernel
def map32(op, x, out, n):
    for k in prange((n + BLOCK - 1) // BLOCK):
        lo = k * BLOCK
        hi = min(n, lo + BLOCK)
        _map_block(op, x[lo:hi], out[lo:hi], hi - lo)
