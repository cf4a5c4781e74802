"""Kernels over packed operands: each operand C-contiguous, passed as its storage and offset.

A call into a numba function costs ~2.5k instructions, plus ~650 per array and ~250 per int
argument (performance.md, stop 36); a numpy ufunc call on a small array ~3.6k and a ``keepdims``
reduction ~9k. An op whose numpy form is several ufunc passes (tanh's gradient ``g * (1 - y*y)``:
three, with two temporaries) pays each call on a small tensor, where the call is the cost. These
kernels do such an op in one call whose arguments are the storages, their offsets and a count,
nothing derived from shapes or strides, so the backend launches them without building a layout.

* ``zip_kernel(op, code)`` / ``map_kernel(op, code)``: the elementwise op over ``n`` values.
  One kernel (serial and parallel compilations) per op, the op a constant of it (a copy of the loop that sees ``OP`` as a global), so LLVM
  drops every other op's branch and vectorises the loop; the general kernels (``_elementwise``)
  switch on the op per value and do not vectorise. Each loop walks slices of the storages, whose
  indices numba knows are non-negative (indexing the storage at ``offset + i`` keeps a
  negative-index check per value that also stops vectorisation).
* ``sum_packed``: the sums of the rows of a packed input (its last dims), accumulated in
  float64 as every reduction of this backend.

``routing.TABLE`` decides when they run (its "packed" rows) and ``backend.py`` launches them.
"""

from numba import njit, prange

from ._elementwise import _with_globals, apply_binary, apply_unary
from ._freshness import refresh
from ._jit import SUM_OPTIONS, kernel

__all__ = ["zip_kernel", "map_kernel", "sum_packed"]

OP = 0  # each compiled copy of the loops below sees its own op code here (_with_globals)


def _zip(a, ao, b, bo, out, oo, n):
    av = a[ao : ao + n]
    bv = b[bo : bo + n]
    ov = out[oo : oo + n]
    for i in prange(n):
        ov[i] = apply_binary(OP, av[i], bv[i])


def _map(x, xo, out, oo, n):
    xv = x[xo : xo + n]
    ov = out[oo : oo + n]
    for i in prange(n):
        ov[i] = apply_unary(OP, xv[i])


_ZIP: dict = {}
_MAP: dict = {}


def _compiled(table, loop, family, op, code):
    k = table.get(op)
    if k is None:  # compiled on first use: most programs use two or three of these ops
        k = table[op] = kernel(_with_globals(loop, f"{family}_packed_{op}", OP=code))
    return k


def zip_kernel(op, code):
    """The kernel ``(a, ao, b, bo, out, oo, n)``: ``out[oo + i] = op(a[ao + i], b[bo + i])`` for
    ``i < n``, ``op`` the binary op of ``code`` (``_scalar.ZIP_CODES``)."""
    return _compiled(_ZIP, _zip, "zip", op, code)


def map_kernel(op, code):
    """The kernel ``(x, xo, out, oo, n)``: ``out[oo + i] = op(x[xo + i])`` for ``i < n``, ``op``
    the unary op of ``code`` (``_scalar.MAP_CODES``)."""
    return _compiled(_MAP, _map, "map", op, code)


@njit(**SUM_OPTIONS)
def sum_packed(x, xo, out, oo, nrows, L):
    """``out[oo + r]`` = the sum of row ``r`` of the packed ``(nrows, L)`` array at ``x[xo:]``,
    accumulated in float64 (SIMD partial sums)."""
    ov = out[oo : oo + nrows]
    for r in range(nrows):
        v = x[xo + r * L : xo + (r + 1) * L]
        acc = 0.0
        for j in range(L):
            acc += v[j]
        ov[r] = acc


refresh(sum_packed)
