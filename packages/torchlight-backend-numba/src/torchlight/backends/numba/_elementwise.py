"""Elementwise kernels: ``map`` (unary), ``zip`` (binary), ``compare`` (binary → bool), ``where``.

Each comes in two shapes:

* ``*_flat`` — every operand contiguous with the same layout: one ``prange`` over elements.
* ``*_strided`` — any strides (stride 0 = broadcast), any number of dims. The flat element range
  is cut into blocks of ``BLOCK`` elements; ``prange`` runs blocks in parallel and each block
  walks its elements with an *odometer*: the multi-index is decomposed once per block (one
  divmod per dim), then positions advance by adding strides along the last dim and carrying
  into the dims before it, so the inner loop is a plain strided loop.

  There is one odometer, ``_walk``, for every op family: ``_strided(name, element)`` builds a
  family's kernel as a copy of ``_walk`` (and of its ``prange`` driver) whose global
  ``_element`` — the scalar work on one position of up to three inputs ``c``, ``a``, ``b`` — is
  that family's, inlined. All strided kernels take the same arguments,
  ``(op, c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, n)``; a map passes its input as
  ``c``, ``a`` and ``b`` and a zip its first as ``c``: the loads of the unused operands are dead
  code that LLVM drops, and their carries cost a few adds per row.

``backend.py`` coalesces dims before calling (adjacent dims that are contiguous with respect to
each other in every operand merge), so most views reach these kernels as 1-D or 2-D.
The scalar op is chosen by dtype at compile time (``apply_unary``/``apply_binary``, numba
overloads) and by op code at run time (``_scalar``).
"""

from types import FunctionType

import numpy as np

from numba import njit, prange, types
from numba.extending import overload

from ._jit import JIT_OPTIONS, helper, kernel
from ._scalar import binary_float, binary_int, compare, unary_bool, unary_float, unary_int

__all__ = [
    "BLOCK",
    "map_flat",
    "map_strided",
    "zip_flat",
    "zip_strided",
    "cmp_flat",
    "cmp_strided",
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


# --- flat ------------------------------------------------------------------------------------
@kernel
def map_flat(op, x, out):
    for i in prange(out.size):
        out[i] = apply_unary(op, x[i])


@kernel
def zip_flat(op, a, b, out):
    for i in prange(out.size):
        out[i] = apply_binary(op, a[i], b[i])


@kernel
def cmp_flat(op, a, b, out):
    for i in prange(out.size):
        out[i] = compare(op, a[i], b[i])


# --- strided: one odometer, an element function per family -------------------------------------
def _element(op, c, pc, a, pa, b, pb):
    """Placeholder: each family's copy of ``_walk`` sees its own ``_element`` (``_strided``)."""
    raise NotImplementedError


def _walk(op, c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, start, stop):
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
    n_last = shape[last]
    sc = cs[last]
    sa = as_[last]
    sb = bs[last]
    so = os[last]
    k = start
    while k < stop:
        j0 = idx[last]
        m = min(n_last - j0, stop - k)
        for j in range(m):
            out[po + j * so] = _element(op, c, pc + j * sc, a, pa + j * sa, b, pb + j * sb)
        k += m
        pc += m * sc
        pa += m * sa
        pb += m * sb
        po += m * so
        idx[last] = j0 + m
        d = last
        while idx[d] == shape[d] and d > 0 and k < stop:
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


def _walk_block(op, c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, start, stop):
    """Placeholder: each family's copy of ``_drive`` calls its own compiled ``_walk``."""
    raise NotImplementedError


def _drive(op, c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, n):
    for blk in prange((n + BLOCK - 1) // BLOCK):
        _walk_block(
            op,
            c,
            cs,
            co,
            a,
            as_,
            ao,
            b,
            bs,
            bo,
            out,
            os,
            oo,
            shape,
            blk * BLOCK,
            min(n, (blk + 1) * BLOCK),
        )


def _with_globals(fn, name, **names):
    """A copy of ``fn`` named ``name`` that sees ``names`` as globals; its own qualified name keeps
    the copies apart in numba's on-disk cache (no closure, so the cache key stays stable)."""
    copy = FunctionType(fn.__code__, dict(fn.__globals__, **names), name)
    copy.__qualname__ = name
    copy.__module__ = fn.__module__
    return copy


def _strided(name, element):
    """The strided kernel ``<name>_strided``: ``_walk`` with ``element`` (inlined) as its body."""
    inline = njit(inline="always", **JIT_OPTIONS)(_with_globals(element, f"_{name}_element"))
    walk = helper(_with_globals(_walk, f"_{name}_walk", _element=inline))
    return kernel(_with_globals(_drive, f"{name}_strided", _walk_block=walk))


def _map_element(op, c, pc, a, pa, b, pb):
    return apply_unary(op, a[pa])


def _zip_element(op, c, pc, a, pa, b, pb):
    return apply_binary(op, a[pa], b[pb])


def _cmp_element(op, c, pc, a, pa, b, pb):
    return compare(op, a[pa], b[pb])


def _where_element(op, c, pc, a, pa, b, pb):
    x = a[pa]  # both loads before the select, so LLVM can use a branch-free select
    y = b[pb]
    return x if c[pc] else y


map_strided = _strided("map", _map_element)
zip_strided = _strided("zip", _zip_element)
cmp_strided = _strided("cmp", _cmp_element)
where_strided = _strided("where", _where_element)
