"""Fused cross-entropy over rows of logits: per-row loss and log-sum-exp, and the gradient.

For logits ``x`` (N, C), targets ``t`` (N,) in ``[0, C)`` and per-row weights ``w`` (N,)::

    m_i    = max_c x[i, c]
    logs_i = log Σ_c exp(x[i, c] - m_i)                     (saved for the backward)
    loss_i = w_i · ((m_i - x[i, t_i]) + logs_i)             (0 exactly where w_i = 0)
    dx[i, c] = g_i · w_i · (exp((x[i, c] - m_i) - logs_i) - [c = t_i])   (0 exactly where w_i = 0)

since ∂lse_i/∂x[i, c] = softmax(x_i)_c = exp(x[i, c] - lse_i) with ``lse_i = m_i + logs_i``. The
forward saves ``logs`` rather than ``lse``: near the float32 limit (logits ~3e38) ``lse`` rounds to
``m`` and the softmax would come out as 1 for every maximal entry. The backward recomputes ``m``
(one block max per row) and needs no other reduction.

Layout as in ``_fused.softmax_kernel``: one block per row, grid-striding over rows past the
grid cap, the row's threads ``ROW_BLOCK`` apart along C (so any C, wider than a block or not);
``m`` and the sum of exponentials are block tree reductions (``_reduce.block_reduce``), and
thread 0 writes the row's two scalars. The per-row vectors (target, weight, loss, logs, g) are
addressed through the same coalesced row shape as ``x``'s rows (``to_index`` /
``index_to_position``), so every operand may be strided, transposed or offset.

Numerics: the loss is evaluated as ``(m - x[i, t]) + log s`` rather than ``lse - x[i, t]``:
for rows of magnitude 1e4 in float32, ``m + log s`` rounds ``log s`` to the ulp of 1e4 (~1e-3)
and the subtraction would keep that error; the rearranged form cancels the two large terms
exactly first. When ``m`` is infinite the shift is 0 instead (as in PyTorch's logsumexp), so a
row of all ``-inf`` gives ``logs = -inf`` rather than NaN from ``-inf - -inf``; the backward uses
the same shift.

Bounds: a target outside ``[0, C)`` on a row of nonzero weight is never followed (its loss is
NaN, its gradient lacks the one-hot term) and is recorded in ``flag`` (``_index.flag_index``).
"""

import math

from numba import cuda, int64

from ._index import flag_index
from ._launch import ROW_BLOCK, index_to_position, to_index
from ._reduce import MAX, SUM, block_reduce

__all__ = ["cross_entropy_kernel", "cross_entropy_backward_kernel"]


def cross_entropy_kernel(acc, ND):
    """Forward: ``logs`` and ``loss`` per row (``ND``: dims of the coalesced row shape)."""
    T = ROW_BLOCK

    @cuda.jit
    def k(
        x,
        xs,
        xo,
        xl,
        t,
        ts,
        to,
        w,
        ws,
        wo,
        loss,
        ls,
        lo,
        logsum,
        es,
        eo,
        oshape,
        nrows,
        C,
        flag,
        op,
    ):
        sh = cuda.shared.array(T, acc)
        ridx = cuda.local.array(ND, int64)
        tid = cuda.threadIdx.x
        r = cuda.blockIdx.x
        while r < nrows:
            to_index(r, oshape, ridx)
            px = index_to_position(ridx, xs, xo)
            m = acc(-math.inf)
            j = tid
            while j < C:
                v = acc(x[px + j * xl])
                if v > m or v != v:
                    m = v
                j += T
            m = block_reduce(MAX, sh, m, tid, T)
            shift = acc(0) if math.isinf(m) else m
            s = acc(0)
            j = tid if not math.isinf(m) else C  # an infinite max is the log-sum-exp itself
            while j < C:
                s += math.exp(acc(x[px + j * xl]) - shift)
                j += T
            s = block_reduce(SUM, sh, s, tid, T)
            if tid == 0:
                if math.isinf(m):
                    logs = m
                else:  # s = 0 cannot happen here; the simulator's math.log would raise on it
                    logs = math.log(s) if s > 0 else acc(-math.inf)
                logsum[index_to_position(ridx, es, eo)] = logs
                wv = acc(w[index_to_position(ridx, ws, wo)])
                pl = index_to_position(ridx, ls, lo)
                if wv == 0:  # an ignored row contributes 0 even when its logits are inf/NaN
                    loss[pl] = acc(0)
                else:
                    tt = int64(t[index_to_position(ridx, ts, to)])
                    if tt < 0 or tt >= C:
                        flag_index(flag, tt, C, op)
                        loss[pl] = acc(math.nan)
                    else:
                        loss[pl] = wv * ((shift - acc(x[px + tt * xl])) + logs)
            r += cuda.gridDim.x

    return k


def cross_entropy_backward_kernel(acc, ND):
    """Backward: ``dx`` from ``x``, the saved ``logs`` and the upstream ``g`` (N,)."""
    T = ROW_BLOCK

    @cuda.jit
    def k(
        x,
        xs,
        xo,
        xl,
        t,
        ts,
        to,
        w,
        ws,
        wo,
        logsum,
        es,
        eo,
        g,
        gs,
        go,
        dx,
        ds,
        do,
        dl,
        oshape,
        nrows,
        C,
        flag,
        op,
    ):
        sh = cuda.shared.array(T, acc)
        ridx = cuda.local.array(ND, int64)
        tid = cuda.threadIdx.x
        r = cuda.blockIdx.x
        while r < nrows:
            to_index(r, oshape, ridx)
            px = index_to_position(ridx, xs, xo)
            pd = index_to_position(ridx, ds, do)
            m = acc(-math.inf)
            j = tid
            while j < C:
                v = acc(x[px + j * xl])
                if v > m or v != v:
                    m = v
                j += T
            m = block_reduce(MAX, sh, m, tid, T)  # every thread of the block, before any branch
            shift = acc(0) if math.isinf(m) else m
            wv = acc(w[index_to_position(ridx, ws, wo)])
            j = tid
            if wv == 0:  # 0 * (inf or NaN) would not be the promised exact 0
                while j < C:
                    dx[pd + j * dl] = acc(0)
                    j += T
            else:
                scale = acc(g[index_to_position(ridx, gs, go)]) * wv
                lv = acc(logsum[index_to_position(ridx, es, eo)])
                tt = int64(t[index_to_position(ridx, ts, to)])
                if tid == 0 and (tt < 0 or tt >= C):
                    flag_index(flag, tt, C, op)
                while j < C:
                    p = math.exp((acc(x[px + j * xl]) - shift) - lv)
                    if j == tt:
                        p -= acc(1)
                    dx[pd + j * dl] = scale * p
                    j += T
            r += cuda.gridDim.x

    return k
