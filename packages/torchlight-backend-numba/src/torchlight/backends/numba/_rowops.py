"""Reductions over one contiguous row ``x[p:p + n]``, written so LLVM emits SIMD code.

Every helper takes the whole storage and the row's offset ``p`` and slices inside: a slice made
in the caller and passed to a compiled function costs ~15 ns per call (its reference count goes
up and down around the call), as much as the work on a row of 64 (measured: softmax over rows
of 64 spent half its time there); a slice made and used inside one function costs nothing.

With ``fastmath`` off LLVM keeps a loop's floating-point operations in source order, so a loop
``m = max(m, v)`` or ``t += v`` is one serial chain: ~1.5 ns per element, latency-bound (four
hand-made scalar lanes still left ~0.25 ns per value on rows of 64). So:

* ``row_sum`` / ``row_dot`` / ``row_sqdev``: plain loops compiled with ``fastmath={"reassoc"}``
  only (``_jit.sum_helper``): LLVM keeps SIMD partial sums in float64; NaN/inf propagate as usual.
  The partial-sum order is fixed by the compiled vector width, never by the thread count.
* ``row_max`` for float32: on *order-preserving integer keys*. For a float's bits ``b`` (int32),

      key(b) = b ^ ((b >> 31) & 0x7fffffff)

  flips the magnitude bits of negative floats, so ``key(x) < key(y)`` ⇔ ``x < y`` (and
  -0.0 < +0.0); a NaN gets the largest key, 0x7fffffff, which decodes to a NaN. An integer max
  vectorises without any fastmath flag (measured 4× faster than the select loop on rows of 64),
  and ``key`` is its own inverse, so the max key decodes back with the same formula. float64 keeps
  eight select lanes (the SLP vectoriser packs them).
* ``row_sumexp``: Σ e^(r[j] - shift) with 16 float64 lanes in a small scratch array ``acc``
  that the caller allocates once per chunk of rows (an allocation per row costs as much as a
  short row); the fixed-length inner loop over the lanes becomes vector code around the inlined
  ``exp_nonpos``. Scalar-lane unrolling does not vectorise there (measured: 2.5 vs 0.45 ns/value).
* ``row_exp_store``: out[j] = e^(r[j] - shift), branch-free (vectorises; sum it with ``row_sum``).

NaN propagates through ``row_max``. Every sum of float32 values accumulates in float64.
"""

import numpy as np

from numba import types
from numba.extending import overload

from ._fastexp import exp_nonpos, f32_bits, f32_from_bits
from ._jit import JIT_OPTIONS, helper, sum_helper

__all__ = [
    "LANES",
    "row_max",
    "row_max_strided",
    "row_sum",
    "row_dot",
    "row_sqdev",
    "row_sumexp",
    "row_exp_store",
]

LANES = 16
SIGN_OFF = np.int32(0x7FFFFFFF)  # every bit but the sign; also the key of a NaN
INF_BITS = np.int32(0x7F800000)  # bits of +inf: |bits| above it is a NaN


def _row_max_f32(x, p, n):
    r = x[p : p + n]
    m = np.int32(-2147483648)
    for j in range(n):
        b = f32_bits(r[j])
        k = np.int32(b ^ ((b >> 31) & SIGN_OFF))  # numba widens int32 arithmetic to int64
        k = SIGN_OFF if (b & SIGN_OFF) > INF_BITS else k  # any NaN: the largest key
        m = k if k > m else m
    return f32_from_bits(np.int32(m ^ ((m >> 31) & SIGN_OFF)))


def _row_max_lanes(x, p, n):
    r = x[p : p + n]
    a0 = r[0]
    a1 = a0
    a2 = a0
    a3 = a0
    a4 = a0
    a5 = a0
    a6 = a0
    a7 = a0
    j = 0
    while j + 8 <= n:
        v = r[j]
        a0 = v if (v > a0 or v != v) else a0
        v = r[j + 1]
        a1 = v if (v > a1 or v != v) else a1
        v = r[j + 2]
        a2 = v if (v > a2 or v != v) else a2
        v = r[j + 3]
        a3 = v if (v > a3 or v != v) else a3
        v = r[j + 4]
        a4 = v if (v > a4 or v != v) else a4
        v = r[j + 5]
        a5 = v if (v > a5 or v != v) else a5
        v = r[j + 6]
        a6 = v if (v > a6 or v != v) else a6
        v = r[j + 7]
        a7 = v if (v > a7 or v != v) else a7
        j += 8
    for jj in range(j, n):
        v = r[jj]
        a0 = v if (v > a0 or v != v) else a0
    for v in (a1, a2, a3, a4, a5, a6, a7):
        a0 = v if (v > a0 or v != v) else a0
    return a0


def row_max(x, p, n):
    """max of x[p:p + n] (n >= 1); NaN if any element is NaN."""
    return _row_max_f32(x, p, n) if x.dtype == np.float32 else _row_max_lanes(x, p, n)


@overload(row_max, jit_options=JIT_OPTIONS)
def _row_max_ov(x, p, n):
    # the implementation itself, not a call to another compiled function (~15 ns per row)
    return _row_max_f32 if x.dtype == types.float32 else _row_max_lanes


@helper
def row_max_strided(x, p, s, n):
    """max of x[p], x[p + s], ..., n values (n >= 1; any stride); NaN if any is NaN."""
    m = x[p]
    for j in range(1, n):
        v = x[p + j * s]
        if v > m or v != v:
            m = v
    return m


@sum_helper
def row_sum(x, p, n):
    """Σ x[p:p + n] in float64."""
    v = x[p : p + n]
    t = np.float64(0.0)  # (a Python float would sum float32 values in float32 without JIT)
    for j in range(n):
        t += v[j]
    return t


@sum_helper
def row_dot(x, p, y, q, n):
    """Σ x[p + j]·y[q + j] in float64 (products in the operands' dtype)."""
    u = x[p : p + n]
    v = y[q : q + n]
    t = np.float64(0.0)
    for j in range(n):
        t += u[j] * v[j]
    return t


@sum_helper
def row_sqdev(x, p, mu, n):
    """Σ (x[p + j] - mu)² with mu a float64: the second pass of a two-pass variance."""
    v = x[p : p + n]
    t = np.float64(0.0)
    for j in range(n):
        c = v[j] - mu
        t += c * c
    return t


@helper
def row_sumexp(x, p, shift, n, acc):
    """Σ e^(x[p + j] - shift) in float64 (shift >= the row's max, so every exponent is <= 0)."""
    r = x[p : p + n]
    acc[:] = 0.0
    nb = n // LANES
    for b in range(nb):
        base = b * LANES
        for k in range(LANES):
            acc[k] += exp_nonpos(r[base + k] - shift)
    t = 0.0
    for j in range(nb * LANES, n):
        t += exp_nonpos(r[j] - shift)
    for k in range(LANES):
        t += acc[k]
    return t


@helper
def row_exp_store(x, p, out, q, shift, n):
    """out[q + j] = e^(x[p + j] - shift) for j < n."""
    r = x[p : p + n]
    o = out[q : q + n]
    for j in range(n):
        o[j] = exp_nonpos(r[j] - shift)
