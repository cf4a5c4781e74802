"""Indexing kernels: one gather kernel (``take``, ``gather``) and one scatter-add kernel
(``put_add``, ``scatter_add``), per ndim.

Both iterate over an iteration shape with three strided operands, one thread per element
(grid-stride). ``take`` is ``gather`` whose index view has stride 0 everywhere except along
``dim`` (``backend.py`` builds that view); ``put_add`` is ``scatter_add`` likewise.

gather: ``out[i] = a[i with i[dim] := index[i]]``.
scatter-add: ``out[i with i[dim] := index[i]] += src[i]`` with ``cuda.atomic.add``, so repeated
indices accumulate whichever threads collide (float sums may round in any order).
"""

from numba import cuda, int64

from ._launch import index_to_position, to_index

__all__ = ["gather_kernel", "scatter_add_kernel", "fill_kernel"]


def gather_kernel(ND):
    @cuda.jit
    def k(a, as_, ao, adim, dim, idx, is_, io, out, os, oo, shape, n):
        ix = cuda.local.array(ND, int64)
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            to_index(i, shape, ix)
            j = idx[index_to_position(ix, is_, io)]
            pa = index_to_position(ix, as_, ao) + (j - ix[dim]) * adim
            out[index_to_position(ix, os, oo)] = a[pa]
            i += step
    return k


def scatter_add_kernel(ND):
    @cuda.jit
    def k(out, os, oo, odim, dim, idx, is_, io, src, ss, so, shape, n):
        ix = cuda.local.array(ND, int64)
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            to_index(i, shape, ix)
            j = idx[index_to_position(ix, is_, io)]
            po = index_to_position(ix, os, oo) + (j - ix[dim]) * odim
            cuda.atomic.add(out, po, src[index_to_position(ix, ss, so)])
            i += step
    return k


def fill_kernel():
    @cuda.jit
    def k(out, oo, ostep, n, value):
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            out[oo + i * ostep] = value
            i += step
    return k
