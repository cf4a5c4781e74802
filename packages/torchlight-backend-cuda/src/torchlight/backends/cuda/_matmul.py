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

A product with few output tiles and a long ``k`` (a weight gradient, ``(n x B*T) @ (B*T x m)``)
gives the GPU few blocks, each looping over all of ``k``: on an H200, 36 tiles with k = 16384 ran
at 0.87 TFLOP/s where the same work spread over 1536 tiles ran at 6.4. :func:`split_k` decides
when to cut ``k`` into slices that run as a batch (each writing its partial product), summed after.
"""

from numba import cuda, int64

from ._launch import index_to_position, to_index

__all__ = ["matmul_kernel", "split_k", "MIN_SPLIT_STEPS"]

MIN_SPLIT_STEPS = 16
"""Split-K keeps each slice of ``k`` at least this many ``BK`` steps long: shorter slices would
spend more on writing and summing partial products than they win in parallelism."""


@cuda.jit(device=True)
def _stage(tile, src, base, rs, cs, r0, c0, nr, nc, tid, nt):
    """Copy ``src[r0:r0+R, c0:c0+C]`` (an ``nr x nc`` matrix at ``base`` with row and column
    strides ``rs``, ``cs``) into the shared ``R x C`` ``tile``, zeros past the edges; the block's
    ``nt`` threads share the work, thread ``tid`` taking every ``nt``-th element."""
    R, C = tile.shape
    e = tid
    while e < R * C:
        r = e // C
        c = e % C
        if r0 + r < nr and c0 + c < nc:
            tile[r, c] = src[base + (r0 + r) * rs + (c0 + c) * cs]
        else:
            tile[r, c] = 0
        e += nt


@cuda.jit(device=True)
def _accumulate(acc, sa, sb, ar, br, ty, tx):
    """``acc += sa[rows] @ sb[:, cols]`` for this thread's ``TM x TN`` micro-tile (rows
    ``ty + i*TY``, columns ``tx + j*TX``), one ``k`` at a time through registers."""
    TM, TN = acc.shape
    TY = sa.shape[0] // TM
    TX = sb.shape[1] // TN
    for q in range(sa.shape[1]):
        for i in range(TM):
            ar[i] = sa[ty + i * TY, q]
        for j in range(TN):
            br[j] = sb[q, tx + j * TX]
        for i in range(TM):
            for j in range(TN):
                acc[i, j] += ar[i] * br[j]


@cuda.jit(device=True)
def _store(out, po, osr, osc, acc, row0, col0, TY, TX, ty, tx, n, m):
    """Write this thread's micro-tile into ``out`` (``n x m`` at ``po``), skipping the edges."""
    TM, TN = acc.shape
    for i in range(TM):
        r = row0 + ty + i * TY
        for j in range(TN):
            c = col0 + tx + j * TX
            if r < n and c < m:
                out[po + r * osr + c * osc] = acc[i, j]


def matmul_kernel(acc_type, NDB, BM, BN, BK, TM, TN):
    """The kernel for one accumulator type, ``NDB`` batch dims and one tile shape (module
    docstring); launch with a ``(BN/TN, BM/TM)`` block."""
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
                _stage(sa, a, pa, asr, asc, row0, k0, n, kk, tid, NT)
                _stage(sb, b, pb, bsr, bsc, k0, col0, kk, m, tid, NT)
                cuda.syncthreads()
                _accumulate(acc, sa, sb, ar, br, ty, tx)
                cuda.syncthreads()
                k0 += BK
            _store(out, po, osr, osc, acc, row0, col0, TY, TX, ty, tx, n, m)
            z += cuda.gridDim.z

    return k


def split_k(tiles, kk, bk, target_blocks):
    """How many slices of ``k`` to run as a batch (1: no split) for a product of ``tiles`` output
    tiles with inner size ``kk`` and ``bk``-deep tiles: the fewest that make ``target_blocks``
    blocks, else as many as there may be; each slice at least ``MIN_SPLIT_STEPS * bk`` long, and
    a divisor of ``kk`` (the slices are one strided batch, so they must be equal).

    >>> split_k(36, 16384, 16, 528)  # 36 tiles -> 16 slices of 1024: 576 blocks
    16
    >>> split_k(1536, 384, 16, 528)  # enough tiles already
    1
    """
    limit = kk // (MIN_SPLIT_STEPS * bk)
    if tiles >= target_blocks or limit < 2:
        return 1
    want = min(-(-target_blocks // tiles), limit)
    for s in (*range(want, limit + 1), *range(want - 1, 1, -1)):
        if kk % s == 0:
            return s
    return 1
