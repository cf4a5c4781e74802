"""Batched, strided matmul: shared-memory tiles with a register micro-tile per thread.

A block computes a ``BM x BN`` tile of ``out`` for one batch element (``blockIdx.z``, grid-striding
past the grid limit). Its ``(BM/TM) x (BN/TN)`` threads walk ``k`` in steps of ``BK``: together
they stage an ``BM x BK`` tile of ``a`` and a ``BK x BN`` tile of ``b`` in shared memory (zeros
past the edges, so any n, k, m works), then each thread accumulates a ``TM x TN`` block of
outputs in registers — rows ``ty + i*TY`` and columns ``tx + j*TX``, so neighbouring threads
read neighbouring shared-memory columns. Operands are read through their strides (transposed and
sliced views need no copy) and batch dims broadcast by stride 0.

Tile shapes are chosen by the backend: 64x64x16 with 4x4 micro-tiles (256 threads) on a GPU,
16x16x8 with 4x4 (16 threads) under the simulator.
"""

from numba import cuda, int64

from ._launch import index_to_position, to_index

__all__ = ["matmul_kernel"]


def matmul_kernel(acc_type, NDB, BM, BN, BK, TM, TN):
    TY = BM // TM
    TX = BN // TN
    NT = TX * TY

    @cuda.jit
    def k(
        a,
        abs_,
        ao,
        asr,
        asc,
        b,
        bbs,
        bo,
        bsr,
        bsc,
        out,
        obs,
        oo,
        osr,
        osc,
        bshape,
        nbatch,
        n,
        kk,
        m,
    ):
        sa = cuda.shared.array((BM, BK), acc_type)
        sb = cuda.shared.array((BK, BN), acc_type)
        acc = cuda.local.array((TM, TN), acc_type)
        ar = cuda.local.array(TM, acc_type)
        br = cuda.local.array(TN, acc_type)
        bidx = cuda.local.array(NDB, int64)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * TX + tx
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        z = cuda.blockIdx.z
        while z < nbatch:
            to_index(z, bshape, bidx)
            pa = index_to_position(bidx, abs_, ao)
            pb = index_to_position(bidx, bbs, bo)
            po = index_to_position(bidx, obs, oo)
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] = 0
            k0 = 0
            while k0 < kk:
                e = tid
                while e < BM * BK:
                    r = e // BK
                    c = e % BK
                    gr = row0 + r
                    gc = k0 + c
                    if gr < n and gc < kk:
                        sa[r, c] = a[pa + gr * asr + gc * asc]
                    else:
                        sa[r, c] = 0
                    e += NT
                e = tid
                while e < BK * BN:
                    r = e // BN
                    c = e % BN
                    gr = k0 + r
                    gc = col0 + c
                    if gr < kk and gc < m:
                        sb[r, c] = b[pb + gr * bsr + gc * bsc]
                    else:
                        sb[r, c] = 0
                    e += NT
                cuda.syncthreads()
                for q in range(BK):
                    for i in range(TM):
                        ar[i] = sa[ty + i * TY, q]
                    for j in range(TN):
                        br[j] = sb[q, tx + j * TX]
                    for i in range(TM):
                        for j in range(TN):
                            acc[i, j] += ar[i] * br[j]
                cuda.syncthreads()
                k0 += BK
            for i in range(TM):
                r = row0 + ty + i * TY
                if r < n:
                    for j in range(TN):
                        c = col0 + tx + j * TX
                        if c < m:
                            out[po + r * osr + c * osc] = acc[i, j]
            z += cuda.gridDim.z

    return k
