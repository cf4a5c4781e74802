"""Reductions: one block per output element, a block tree (shared memory, then warp shuffles on
a real GPU) over the reduced elements.

The reduced dims are coalesced into ``rshape``/``rxs`` and the kept dims into ``oshape``; each
block grid-strides over outputs, each thread strides over the reduced elements of its output
(``ROW_BLOCK`` apart, so any number of them, wider than a block or not), accumulates locally,
then the block combines the partials: ``block_reduce`` halves the active threads through shared
memory down to one warp and — on a GPU — finishes with ``shfl_down_sync``; the simulator (no
shuffles) keeps halving through shared memory. ``argmax``/``argmin`` carry (value, index) pairs,
ties going to the smaller index and NaN winning, as in numpy.

The accumulator has the output's dtype family (float32 sums in float32 per thread, then a tree:
the pairwise tree keeps float32 error ~log2(n)·ε); ints and bools accumulate in int64.
"""

import math

from numba import cuda, float32, float64, int64

from ._launch import ROW_BLOCK, WARP_SHUFFLE, index_to_position, to_index

__all__ = [
    "SUM",
    "PROD",
    "MAX",
    "MIN",
    "identity_of",
    "combine",
    "block_reduce",
    "reduce_kernel",
    "arg_kernel",
    "ACC_TYPES",
]

SUM, PROD, MAX, MIN = 0, 1, 2, 3
ACC_TYPES = {"float32": float32, "float64": float64, "int64": int64}
_FULL = 0xFFFFFFFF


def identity_of(code, kind):
    if code == SUM:
        return 0
    if code == PROD:
        return 1
    if kind == "f":
        return -math.inf if code == MAX else math.inf
    return -(2**63) if code == MAX else 2**63 - 1


@cuda.jit(device=True)
def combine(code, a, b):
    if code == 0:
        return a + b
    if code == 1:
        return a * b
    if code == 2:
        return a if (a >= b or a != a) else b
    return a if (a <= b or a != a) else b


@cuda.jit(device=True)
def block_reduce(code, sh, v, tid, nt):
    """Combine ``v`` over the ``nt`` threads of the block (``nt`` a power of two); all threads
    get the result. ``sh`` is a shared array of at least ``nt`` elements."""
    sh[tid] = v
    cuda.syncthreads()
    s = nt // 2
    stop = 16 if WARP_SHUFFLE else 0
    while s > stop:
        if tid < s:
            sh[tid] = combine(code, sh[tid], sh[tid + s])
        cuda.syncthreads()
        s //= 2
    if WARP_SHUFFLE:
        if tid < 32:
            w = sh[tid]
            off = 16
            while off > 0:
                w = combine(code, w, cuda.shfl_down_sync(_FULL, w, off))
                off //= 2
            if tid == 0:
                sh[0] = w
        cuda.syncthreads()
    r = sh[0]
    cuda.syncthreads()
    return r


@cuda.jit(device=True)
def _better(is_max, v, i, w, j):
    """Does candidate (w, j) beat (v, i)?"""
    if w != w:  # NaN wins; the first NaN among NaNs
        return v == v or j < i
    if v != v:
        return False
    if w == v:
        return j < i
    return (w > v) if is_max else (w < v)


@cuda.jit(device=True)
def block_argreduce(is_max, shv, shi, v, i, tid, nt):
    shv[tid] = v
    shi[tid] = i
    cuda.syncthreads()
    s = nt // 2
    while s > 0:
        if tid < s:
            if _better(is_max, shv[tid], shi[tid], shv[tid + s], shi[tid + s]):
                shv[tid] = shv[tid + s]
                shi[tid] = shi[tid + s]
        cuda.syncthreads()
        s //= 2
    r = shi[0]
    cuda.syncthreads()
    return r


def reduce_kernel(acc_type, NDO, NDR):
    T = ROW_BLOCK

    @cuda.jit
    def k(code, x, xo, oshape, oxs, out, oos, oo, rshape, rxs, nout, nred, ident):
        sh = cuda.shared.array(T, acc_type)
        oidx = cuda.local.array(NDO, int64)
        ridx = cuda.local.array(NDR, int64)
        tid = cuda.threadIdx.x
        o = cuda.blockIdx.x
        while o < nout:
            to_index(o, oshape, oidx)
            base = index_to_position(oidx, oxs, xo)
            acc = ident
            r = tid
            while r < nred:
                to_index(r, rshape, ridx)
                acc = combine(code, acc, acc_type(x[base + index_to_position(ridx, rxs, 0)]))
                r += T
            v = block_reduce(code, sh, acc, tid, T)
            if tid == 0:
                out[index_to_position(oidx, oos, oo)] = v
            o += cuda.gridDim.x

    return k


def arg_kernel(acc_type, NDO):
    T = ROW_BLOCK

    @cuda.jit
    def k(is_max, x, xo, oshape, oxs, out, oos, oo, L, step, nout):
        shv = cuda.shared.array(T, acc_type)
        shi = cuda.shared.array(T, int64)
        oidx = cuda.local.array(NDO, int64)
        tid = cuda.threadIdx.x
        o = cuda.blockIdx.x
        while o < nout:
            to_index(o, oshape, oidx)
            base = index_to_position(oidx, oxs, xo)
            bi = -1
            bv = acc_type(0)
            r = tid
            while r < L:
                w = acc_type(x[base + r * step])
                if bi < 0 or _better(is_max, bv, bi, w, r):
                    bv = w
                    bi = r
                r += T
            if bi < 0:  # threads past the row's end never win
                bi = L
                bv = acc_type(x[base])
            res = block_argreduce(is_max, shv, shi, bv, bi, tid, T)
            if tid == 0:
                out[index_to_position(oidx, oos, oo)] = res
            o += cuda.gridDim.x

    return k
