"""Fused row kernels: softmax / log-softmax and layer norm, forward and backward.

One block per row (grid-striding over rows past the grid cap). A row is the elements along
``dim`` (softmax) or the last dim (layer norm) at one position of the other dims; its threads
stride through it ``ROW_BLOCK`` apart, so rows wider than a block — any width — work, and
the per-row statistics (max, sum of exponentials, mean, variance) are block tree reductions
(``_reduce.block_reduce``). Softmax is the stable form ``exp(x - max) / sum``; layer norm uses
two passes (mean, then the mean of squared deviations) so a large common offset costs no
precision. Layer norm's ``dw``/``db`` are column sums over rows: a second kernel over column
blocks x row chunks accumulates them with atomics into zeroed outputs.
"""

import math

from numba import cuda, int64

from ._launch import ROW_BLOCK, index_to_position, to_index
from ._reduce import MAX, SUM, block_reduce

__all__ = [
    "softmax_kernel",
    "softmax_backward_kernel",
    "layernorm_kernel",
    "layernorm_backward_kernel",
    "layernorm_params_kernel",
]


def softmax_kernel(acc, ND):
    T = ROW_BLOCK

    @cuda.jit
    def k(x, xs, xo, xl, out, os, oo, ol, oshape, nrows, L, log):
        sh = cuda.shared.array(T, acc)
        oidx = cuda.local.array(ND, int64)
        tid = cuda.threadIdx.x
        r = cuda.blockIdx.x
        while r < nrows:
            to_index(r, oshape, oidx)
            px = index_to_position(oidx, xs, xo)
            po = index_to_position(oidx, os, oo)
            m = acc(-math.inf)
            j = tid
            while j < L:
                v = acc(x[px + j * xl])
                if v > m or v != v:
                    m = v
                j += T
            m = block_reduce(MAX, sh, m, tid, T)
            s = acc(0)
            j = tid
            while j < L:
                s += math.exp(acc(x[px + j * xl]) - m)
                j += T
            s = block_reduce(SUM, sh, s, tid, T)
            if log:  # (x - max) - log(sum): never adds log(sum) to a large max first
                ls = math.log(s)
                j = tid
                while j < L:
                    out[po + j * ol] = (acc(x[px + j * xl]) - m) - ls
                    j += T
            else:
                inv = acc(1) / s
                j = tid
                while j < L:
                    out[po + j * ol] = math.exp(acc(x[px + j * xl]) - m) * inv
                    j += T
            r += cuda.gridDim.x

    return k


def softmax_backward_kernel(acc, ND):
    T = ROW_BLOCK

    @cuda.jit
    def k(y, ys, yo, yl, g, gs, go, gl, out, os, oo, ol, oshape, nrows, L, log):
        sh = cuda.shared.array(T, acc)
        oidx = cuda.local.array(ND, int64)
        tid = cuda.threadIdx.x
        r = cuda.blockIdx.x
        while r < nrows:
            to_index(r, oshape, oidx)
            py = index_to_position(oidx, ys, yo)
            pg = index_to_position(oidx, gs, go)
            po = index_to_position(oidx, os, oo)
            s = acc(0)
            j = tid
            while j < L:
                if log:
                    s += acc(g[pg + j * gl])
                else:
                    s += acc(g[pg + j * gl]) * acc(y[py + j * yl])
                j += T
            s = block_reduce(SUM, sh, s, tid, T)
            j = tid
            while j < L:
                yv = acc(y[py + j * yl])
                gv = acc(g[pg + j * gl])
                if log:
                    out[po + j * ol] = gv - math.exp(yv) * s
                else:
                    out[po + j * ol] = yv * (gv - s)
                j += T
            r += cuda.gridDim.x

    return k


def layernorm_kernel(acc, ND):
    T = ROW_BLOCK

    @cuda.jit
    def k(
        x,
        xs,
        xo,
        xl,
        w,
        wo,
        wl,
        has_w,
        b,
        bo,
        bl,
        has_b,
        eps,
        out,
        os,
        oo,
        ol,
        mean,
        ms,
        mo,
        rstd,
        rs,
        ro,
        oshape,
        nrows,
        L,
    ):
        sh = cuda.shared.array(T, acc)
        oidx = cuda.local.array(ND, int64)
        tid = cuda.threadIdx.x
        r = cuda.blockIdx.x
        while r < nrows:
            to_index(r, oshape, oidx)
            px = index_to_position(oidx, xs, xo)
            po = index_to_position(oidx, os, oo)
            s = acc(0)
            j = tid
            while j < L:
                s += acc(x[px + j * xl])
                j += T
            mu = block_reduce(SUM, sh, s, tid, T) / L
            s = acc(0)
            j = tid
            while j < L:
                d = acc(x[px + j * xl]) - mu
                s += d * d
                j += T
            var = block_reduce(SUM, sh, s, tid, T) / L
            rv = acc(1) / math.sqrt(var + eps)
            j = tid
            while j < L:
                y = (acc(x[px + j * xl]) - mu) * rv
                if has_w:
                    y = y * acc(w[wo + j * wl])
                if has_b:
                    y = y + acc(b[bo + j * bl])
                out[po + j * ol] = y
                j += T
            if tid == 0:
                mean[index_to_position(oidx, ms, mo)] = mu
                rstd[index_to_position(oidx, rs, ro)] = rv
            r += cuda.gridDim.x

    return k


def layernorm_backward_kernel(acc, ND):
    T = ROW_BLOCK

    @cuda.jit
    def k(
        g,
        gs,
        go,
        gl,
        x,
        xs,
        xo,
        xl,
        w,
        wo,
        wl,
        has_w,
        mean,
        ms,
        mo,
        rstd,
        rs,
        ro,
        dx,
        ds,
        do,
        dl,
        oshape,
        nrows,
        L,
    ):
        sh = cuda.shared.array(T, acc)
        oidx = cuda.local.array(ND, int64)
        tid = cuda.threadIdx.x
        r = cuda.blockIdx.x
        while r < nrows:
            to_index(r, oshape, oidx)
            pg = index_to_position(oidx, gs, go)
            px = index_to_position(oidx, xs, xo)
            pd = index_to_position(oidx, ds, do)
            mu = acc(mean[index_to_position(oidx, ms, mo)])
            rv = acc(rstd[index_to_position(oidx, rs, ro)])
            s1 = acc(0)
            s2 = acc(0)
            j = tid
            while j < L:
                gh = acc(g[pg + j * gl])
                if has_w:
                    gh = gh * acc(w[wo + j * wl])
                xh = (acc(x[px + j * xl]) - mu) * rv
                s1 += gh
                s2 += gh * xh
                j += T
            a1 = block_reduce(SUM, sh, s1, tid, T) / L
            a2 = block_reduce(SUM, sh, s2, tid, T) / L
            j = tid
            while j < L:
                gh = acc(g[pg + j * gl])
                if has_w:
                    gh = gh * acc(w[wo + j * wl])
                xh = (acc(x[px + j * xl]) - mu) * rv
                dx[pd + j * dl] = rv * (gh - a1 - xh * a2)
                j += T
            r += cuda.gridDim.x

    return k


def layernorm_params_kernel(acc, ND):
    """dw[c] += sum_r g[r,c] * xhat[r,c], db[c] += sum_r g[r,c] over this block's row chunk
    (grid: x over column blocks, y over row chunks); dw/db must be zeroed first."""

    @cuda.jit
    def k(
        g,
        gs,
        go,
        gl,
        x,
        xs,
        xo,
        xl,
        mean,
        ms,
        mo,
        rstd,
        rs,
        ro,
        dw,
        dwo,
        dwl,
        has_dw,
        db,
        dbo,
        dbl,
        has_db,
        oshape,
        nrows,
        L,
    ):
        oidx = cuda.local.array(ND, int64)
        c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        while c < L:
            sw = acc(0)
            sb = acc(0)
            r = cuda.blockIdx.y
            while r < nrows:
                to_index(r, oshape, oidx)
                gv = acc(g[index_to_position(oidx, gs, go) + c * gl])
                if has_dw:
                    mu = acc(mean[index_to_position(oidx, ms, mo)])
                    rv = acc(rstd[index_to_position(oidx, rs, ro)])
                    sw += gv * (acc(x[index_to_position(oidx, xs, xo) + c * xl]) - mu) * rv
                sb += gv
                r += cuda.gridDim.y
            if has_dw:
                cuda.atomic.add(dw, dwo + c * dwl, sw)
            if has_db:
                cuda.atomic.add(db, dbo + c * dbl, sb)
            c += cuda.blockDim.x * cuda.gridDim.x

    return k
