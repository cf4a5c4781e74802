"""Elementwise kernels: ``map`` (unary), ``zip`` (binary), ``compare`` (binary → bool), ``where``.

Each comes in two shapes:

* ``*_flat`` — every operand contiguous with the same layout: one ``prange`` over elements.
* ``*_strided`` — any strides (stride 0 = broadcast), any number of dims. The flat element range
  is cut into blocks of ``BLOCK`` elements; ``prange`` runs blocks in parallel and each block
  walks its elements with an *odometer*: the multi-index is decomposed once per block (one
  divmod per dim), then positions advance by adding strides along the last dim and carrying
  into the dims before it, so the inner loop is a plain strided loop.

``backend.py`` coalesces dims before calling (adjacent dims that are contiguous with respect to
each other in every operand merge), so most views reach these kernels as 1-D or 2-D.
The scalar op is chosen by dtype at compile time (``apply_unary``/``apply_binary``, numba
overloads) and by op code at run time (``_scalar``).
"""

import numpy as np

from numba import prange, types
from numba.extending import overload

from ._jit import JIT_OPTIONS, helper, kernel
from ._scalar import binary_float, binary_int, compare, unary_bool, unary_float, unary_int

__all__ = [
    "BLOCK", "map_flat", "map_strided", "zip_flat", "zip_strided", "cmp_flat", "cmp_strided",
    "where_strided",
]

BLOCK = 16384


# --- compile-time dispatch on dtype (pure Python under NUMBA_DISABLE_JIT) -----------------------
def apply_unary(op, x):
    if isinstance(x, (bool, np.bool_)):
        return unary_bool(op, x)
    if isinstance(x, (int, np.integer)):
        return unary_int(op, x)
    return unary_float(op, x)


def apply_binary(op, a, b):
    if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)):
        return binary_int(op, a, b)
    return binary_float(op, a, b)


@overload(apply_unary, jit_options=JIT_OPTIONS, inline="always")
def _apply_unary_ov(op, x):
    if isinstance(x, types.Boolean):
        return lambda op, x: unary_bool(op, x)
    if isinstance(x, types.Integer):
        return lambda op, x: unary_int(op, x)
    return lambda op, x: unary_float(op, x)


@overload(apply_binary, jit_options=JIT_OPTIONS, inline="always")
def _apply_binary_ov(op, a, b):
    if isinstance(a, types.Integer) and not isinstance(a, types.Boolean):
        return lambda op, a, b: binary_int(op, a, b)
    return lambda op, a, b: binary_float(op, a, b)


# --- map -------------------------------------------------------------------------------------
@kernel
def map_flat(op, x, out):
    for i in prange(out.size):
        out[i] = apply_unary(op, x[i])


@helper
def _map_block(op, x, xs, xo, out, os, oo, shape, start, stop):
    nd = shape.size
    idx = np.zeros(nd, np.int64)
    r = np.int64(start)
    px = xo
    po = oo
    for d in range(nd - 1, -1, -1):
        i = r % shape[d]
        r //= shape[d]
        idx[d] = i
        px += i * xs[d]
        po += i * os[d]
    last = nd - 1
    n_last = shape[last]
    sx = xs[last]
    so = os[last]
    k = start
    while k < stop:
        j0 = idx[last]
        m = min(n_last - j0, stop - k)
        for j in range(m):
            out[po + j * so] = apply_unary(op, x[px + j * sx])
        k += m
        px += m * sx
        po += m * so
        idx[last] = j0 + m
        d = last
        while idx[d] == shape[d] and d > 0 and k < stop:
            px -= shape[d] * xs[d]
            po -= shape[d] * os[d]
            idx[d] = 0
            d -= 1
            idx[d] += 1
            px += xs[d]
            po += os[d]


@kernel
def map_strided(op, x, xs, xo, out, os, oo, shape, n):
    for b in prange((n + BLOCK - 1) // BLOCK):
        _map_block(op, x, xs, xo, out, os, oo, shape, b * BLOCK, min(n, (b + 1) * BLOCK))


# --- zip -------------------------------------------------------------------------------------
@kernel
def zip_flat(op, a, b, out):
    for i in prange(out.size):
        out[i] = apply_binary(op, a[i], b[i])


@kernel
def cmp_flat(op, a, b, out):
    for i in prange(out.size):
        out[i] = compare(op, a[i], b[i])


@helper
def _zip_block(op, a, as_, ao, b, bs, bo, out, os, oo, shape, start, stop):
    nd = shape.size
    idx = np.zeros(nd, np.int64)
    r = np.int64(start)
    pa = ao
    pb = bo
    po = oo
    for d in range(nd - 1, -1, -1):
        i = r % shape[d]
        r //= shape[d]
        idx[d] = i
        pa += i * as_[d]
        pb += i * bs[d]
        po += i * os[d]
    last = nd - 1
    n_last = shape[last]
    sa = as_[last]
    sb = bs[last]
    so = os[last]
    k = start
    while k < stop:
        j0 = idx[last]
        m = min(n_last - j0, stop - k)
        for j in range(m):
            out[po + j * so] = apply_binary(op, a[pa + j * sa], b[pb + j * sb])
        k += m
        pa += m * sa
        pb += m * sb
        po += m * so
        idx[last] = j0 + m
        d = last
        while idx[d] == shape[d] and d > 0 and k < stop:
            pa -= shape[d] * as_[d]
            pb -= shape[d] * bs[d]
            po -= shape[d] * os[d]
            idx[d] = 0
            d -= 1
            idx[d] += 1
            pa += as_[d]
            pb += bs[d]
            po += os[d]


@helper
def _cmp_block(op, a, as_, ao, b, bs, bo, out, os, oo, shape, start, stop):
    nd = shape.size
    idx = np.zeros(nd, np.int64)
    r = np.int64(start)
    pa = ao
    pb = bo
    po = oo
    for d in range(nd - 1, -1, -1):
        i = r % shape[d]
        r //= shape[d]
        idx[d] = i
        pa += i * as_[d]
        pb += i * bs[d]
        po += i * os[d]
    last = nd - 1
    n_last = shape[last]
    sa = as_[last]
    sb = bs[last]
    so = os[last]
    k = start
    while k < stop:
        j0 = idx[last]
        m = min(n_last - j0, stop - k)
        for j in range(m):
            out[po + j * so] = compare(op, a[pa + j * sa], b[pb + j * sb])
        k += m
        pa += m * sa
        pb += m * sb
        po += m * so
        idx[last] = j0 + m
        d = last
        while idx[d] == shape[d] and d > 0 and k < stop:
            pa -= shape[d] * as_[d]
            pb -= shape[d] * bs[d]
            po -= shape[d] * os[d]
            idx[d] = 0
            d -= 1
            idx[d] += 1
            pa += as_[d]
            pb += bs[d]
            po += os[d]


@kernel
def zip_strided(op, a, as_, ao, b, bs, bo, out, os, oo, shape, n):
    for blk in prange((n + BLOCK - 1) // BLOCK):
        _zip_block(op, a, as_, ao, b, bs, bo, out, os, oo, shape, blk * BLOCK, min(n, (blk + 1) * BLOCK))


@kernel
def cmp_strided(op, a, as_, ao, b, bs, bo, out, os, oo, shape, n):
    for blk in prange((n + BLOCK - 1) // BLOCK):
        _cmp_block(op, a, as_, ao, b, bs, bo, out, os, oo, shape, blk * BLOCK, min(n, (blk + 1) * BLOCK))


# --- where -----------------------------------------------------------------------------------
@helper
def _where_block(c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, start, stop):
    nd = shape.size
    idx = np.zeros(nd, np.int64)
    r = np.int64(start)
    pc = co
    pa = ao
    pb = bo
    po = oo
    for d in range(nd - 1, -1, -1):
        i = r % shape[d]
        r //= shape[d]
        idx[d] = i
        pc += i * cs[d]
        pa += i * as_[d]
        pb += i * bs[d]
        po += i * os[d]
    last = nd - 1
    for _ in range(start, stop):
        out[po] = a[pa] if c[pc] else b[pb]
        d = last
        idx[d] += 1
        pc += cs[d]
        pa += as_[d]
        pb += bs[d]
        po += os[d]
        while idx[d] == shape[d] and d > 0:
            pc -= shape[d] * cs[d]
            pa -= shape[d] * as_[d]
            pb -= shape[d] * bs[d]
            po -= shape[d] * os[d]
            idx[d] = 0
            d -= 1
            idx[d] += 1
            pc += cs[d]
            pa += as_[d]
            pb += bs[d]
            po += os[d]


@kernel
def where_strided(c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, n):
    for blk in prange((n + BLOCK - 1) // BLOCK):
        _where_block(c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, blk * BLOCK, min(n, (blk + 1) * BLOCK))
