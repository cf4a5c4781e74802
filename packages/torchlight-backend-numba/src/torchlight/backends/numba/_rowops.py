"""Reductions over one contiguous row, written so LLVM emits SIMD code with ``fastmath`` off.

Without ``fastmath`` LLVM keeps a loop's floating-point operations in source order, so a loop
``m = max(m, v)`` or ``t += f(v)`` is one serial chain: ~1.5 ns per element, latency-bound. The
helpers keep several independent accumulators instead (lanes), combined at the end:

* ``row_max``: eight scalar lanes with selects (the SLP vectoriser packs them): 4× the plain loop.
* ``row_sum`` / ``row_dot`` / ``row_sqdev``: four float64 lanes (memory-bound at that point).
* ``row_sumexp``: Σ e^(r[j] - shift) with 16 float64 lanes in a small scratch array ``acc``
  that the caller allocates once per chunk of rows (an allocation per row costs as much as a
  short row); the fixed-length inner loop over the lanes becomes vector code around the inlined
  ``exp_nonpos``. Scalar-lane unrolling does not vectorise there (measured: 2.5 vs 0.45 ns/value).
* ``row_exp_store``: out[j] = e^(r[j] - shift), branch-free (vectorises; sum it with ``row_sum``).

NaN propagates through ``row_max`` (a lane that saw a NaN keeps it). Every sum of float32
values accumulates in float64; the lane order is fixed, so results do not depend on threads.
"""

from ._fastexp import exp_nonpos
from ._jit import helper

__all__ = ["LANES", "row_max", "row_sum", "row_dot", "row_sqdev", "row_sumexp", "row_exp_store"]

LANES = 16


@helper
def row_max(r, n):
    """max of r[:n] (n >= 1); NaN if any element is NaN."""
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


@helper
def row_sum(v, n):
    """Σ v[:n] in float64 with four independent partial sums."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= n:
        a0 += v[j]
        a1 += v[j + 1]
        a2 += v[j + 2]
        a3 += v[j + 3]
        j += 4
    for jj in range(j, n):
        a0 += v[jj]
    return (a0 + a1) + (a2 + a3)


@helper
def row_dot(u, v, n):
    """Σ u[j]·v[j] in float64 (products in the operands' dtype, as the scalar loop did)."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= n:
        a0 += u[j] * v[j]
        a1 += u[j + 1] * v[j + 1]
        a2 += u[j + 2] * v[j + 2]
        a3 += u[j + 3] * v[j + 3]
        j += 4
    for jj in range(j, n):
        a0 += u[jj] * v[jj]
    return (a0 + a1) + (a2 + a3)


@helper
def row_sqdev(v, mu, n):
    """Σ (v[j] - mu)² with mu a float64: the second pass of a two-pass variance."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= n:
        c0 = v[j] - mu
        c1 = v[j + 1] - mu
        c2 = v[j + 2] - mu
        c3 = v[j + 3] - mu
        a0 += c0 * c0
        a1 += c1 * c1
        a2 += c2 * c2
        a3 += c3 * c3
        j += 4
    for jj in range(j, n):
        c = v[jj] - mu
        a0 += c * c
    return (a0 + a1) + (a2 + a3)


@helper
def row_sumexp(r, shift, n, acc):
    """Σ e^(r[j] - shift) in float64 (shift >= max r, so every exponent is <= 0)."""
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
def row_exp_store(r, out, shift, n):
    for j in range(n):
        out[j] = exp_nonpos(r[j] - shift)

