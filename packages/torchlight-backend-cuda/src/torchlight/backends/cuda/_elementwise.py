"""Elementwise kernels: ``map`` (unary), ``zip`` (binary), ``where``; built by factories.

Each op family (a scalar device function from ``_scalar``) gets two kernels:

* flat — every operand contiguous: ``out[oo + i] = f(code, x[xo + i])`` over a grid-stride loop;
* strided, one per coalesced ndim ``ND`` — each thread turns its ordinal into a multi-index with
  the shared ``to_index`` helper (into a ``cuda.local.array(ND)``), then each operand's position
  with ``index_to_position``. Stride 0 is broadcasting; the core has already expanded inputs.

``ND`` is a closure constant, so the index array lives in registers. The op code is a runtime
argument (one compilation serves all ops of a family).
"""

from numba import cuda, int64

from ._launch import index_to_position, to_index

__all__ = ["map_flat", "map_strided", "zip_flat", "zip_strided", "where_strided"]


def map_flat(fn):
    @cuda.jit
    def k(code, x, xo, out, oo, n):
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            out[oo + i] = fn(code, x[xo + i])
            i += step

    return k


def map_strided(fn, ND):
    @cuda.jit
    def k(code, x, xs, xo, out, os, oo, shape, n):
        idx = cuda.local.array(ND, int64)
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            to_index(i, shape, idx)
            out[index_to_position(idx, os, oo)] = fn(code, x[index_to_position(idx, xs, xo)])
            i += step

    return k


def zip_flat(fn):
    @cuda.jit
    def k(code, a, ao, b, bo, out, oo, n):
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            out[oo + i] = fn(code, a[ao + i], b[bo + i])
            i += step

    return k


def zip_strided(fn, ND):
    @cuda.jit
    def k(code, a, as_, ao, b, bs, bo, out, os, oo, shape, n):
        idx = cuda.local.array(ND, int64)
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            to_index(i, shape, idx)
            va = a[index_to_position(idx, as_, ao)]
            vb = b[index_to_position(idx, bs, bo)]
            out[index_to_position(idx, os, oo)] = fn(code, va, vb)
            i += step

    return k


def where_strided(ND):
    @cuda.jit
    def k(c, cs, co, a, as_, ao, b, bs, bo, out, os, oo, shape, n):
        idx = cuda.local.array(ND, int64)
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            to_index(i, shape, idx)
            if c[index_to_position(idx, cs, co)]:
                v = a[index_to_position(idx, as_, ao)]
            else:
                v = b[index_to_position(idx, bs, bo)]
            out[index_to_position(idx, os, oo)] = v
            i += step

    return k
