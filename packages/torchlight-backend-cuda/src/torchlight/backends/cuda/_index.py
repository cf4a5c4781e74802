"""Indexing kernels: one gather kernel (``take``, ``gather``) and one scatter-add kernel
(``put_add``, ``scatter_add``), per ndim.

Both iterate over an iteration shape with three strided operands, one thread per element
(grid-stride). ``take`` is ``gather`` whose index view has stride 0 everywhere except along
``dim`` (``backend.py`` builds that view); ``put_add`` is ``scatter_add`` likewise.

gather: ``out[i] = a[i with i[dim] := index[i]]``.
scatter-add: ``out[i with i[dim] := index[i]] += src[i]`` with ``cuda.atomic.add``, so repeated
indices accumulate whichever threads collide (float sums may round in any order).

Bounds: an index outside ``[0, n)`` is never followed (gather writes 0 there, scatter-add skips
the element); :func:`flag_index` records the first one in the backend's host-mapped flag
(``torchlight.tensor.backend.bounds`` layout ``[hit, value, size, op]``), claimed with an atomic
compare-and-swap so one thread writes the whole record.
"""

from numba import cuda, int64

from ._launch import index_to_position, to_index

__all__ = ["gather_kernel", "scatter_add_kernel", "fill_kernel", "flag_index"]


@cuda.jit(device=True)
def flag_index(flag, value, n, op):
    """Record an out-of-range ``value`` for a dimension of size ``n`` met by op code ``op``."""
    if cuda.atomic.cas(flag, 0, 0, 1) == 0:
        flag[1] = value
        flag[2] = n
        flag[3] = op


def gather_kernel(ND):
    @cuda.jit
    def k(a, as_, ao, adim, dim, size, idx, is_, io, out, os, oo, shape, n, flag, op):
        ix = cuda.local.array(ND, int64)
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            to_index(i, shape, ix)
            j = idx[index_to_position(ix, is_, io)]
            po = index_to_position(ix, os, oo)
            if j < 0 or j >= size:
                flag_index(flag, j, size, op)
                out[po] = 0
            else:
                out[po] = a[index_to_position(ix, as_, ao) + (j - ix[dim]) * adim]
            i += step

    return k


def scatter_add_kernel(ND):
    @cuda.jit
    def k(out, os, oo, odim, dim, size, idx, is_, io, src, ss, so, shape, n, flag, op):
        ix = cuda.local.array(ND, int64)
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            to_index(i, shape, ix)
            j = idx[index_to_position(ix, is_, io)]
            if j < 0 or j >= size:
                flag_index(flag, j, size, op)
            else:
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
