"""Fused row kernels: softmax / log-softmax and layer norm, forward and backward.

A row is the reduced dim (``backend.py`` moves it last for softmax); ``prange`` runs over rows
and each row is finished in registers and cache: for softmax one pass for the max, one for
``Σ exp(x - max)`` (accumulated in float64) that also stores the exponentials, one to scale them.
The numpy composite makes ~6 passes over memory with temporaries for the same result.

Layer norm computes mean and variance in two passes in float64, so rows like 10⁴ + noise
normalise correctly (the one-pass E[x²] - E[x]² would cancel catastrophically). Its backward
computes ``dx`` row by row and ``dw``/``db`` as per-chunk partial column sums (fixed chunking,
so results do not depend on the thread count) that the caller adds up.

    softmax:   y = e^(x-m) / Σ e^(x-m)            backward: dx = y (g - Σ g y)
    log:       y = x - m - log Σ e^(x-m)          backward: dx = g - e^y Σ g
    layernorm: x̂ = (x - μ) r, y = x̂ w + b          backward: dx = r (ĝ - mean ĝ - x̂ mean(ĝ x̂)), ĝ = g w
"""

import math

import numpy as np

from numba import prange

from ._fastexp import exp_nonpos
from ._jit import helper, kernel

__all__ = ["softmax_rows", "softmax_backward_rows", "layernorm_rows", "layernorm_backward_rows"]


@helper
def _row(r, shape, s, o):
    """Position of row ``r`` (C order over ``shape``) of one operand."""
    p = o
    r = np.int64(r)
    for d in range(shape.size - 1, -1, -1):
        i = r % shape[d]
        r //= shape[d]
        p += i * s[d]
    return p


@helper
def _sum4(v, n):
    """Sum of v[:n] in float64 with four independent partial sums (no serial add chain)."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= n:
        a0 += v[j]
        a1 += v[j + 1]
        a2 += v[j + 2]
        a3 += v[j + 3]
        j += 4
    for jj in range(j, n):
        a0 += v[jj]
    return (a0 + a1) + (a2 + a3)


@helper
def _dot4(u, v, n):
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= n:
        a0 += u[j] * v[j]
        a1 += u[j + 1] * v[j + 1]
        a2 += u[j + 2] * v[j + 2]
        a3 += u[j + 3] * v[j + 3]
        j += 4
    for jj in range(j, n):
        a0 += u[jj] * v[jj]
    return (a0 + a1) + (a2 + a3)


@helper
def _softmax_row_contig(xr, orow, L, log):
    m = xr[0]
    for j in range(1, L):
        v = xr[j]
        if v > m or v != v:
            m = v
    for j in range(L):  # branch-free: vectorises with the float32 exp_nonpos
        orow[j] = exp_nonpos(xr[j] - m)
    total = _sum4(orow, L)
    if log:
        lse = math.log(total)
        for j in range(L):
            orow[j] = (xr[j] - m) - lse
    else:
        inv = 1.0 / total
        for j in range(L):
            orow[j] = orow[j] * inv


@kernel
def softmax_rows(x, xs, xo, xl, out, os, oo, ol, shape, nrows, L, log):
    for r in prange(nrows):
        px = _row(r, shape, xs, xo)
        po = _row(r, shape, os, oo)
        if xl == 1 and ol == 1:
            _softmax_row_contig(x[px:px + L], out[po:po + L], L, log)
            continue
        m = x[px]
        for j in range(1, L):
            v = x[px + j * xl]
            if v > m or v != v:
                m = v
        total = 0.0
        for j in range(L):
            e = exp_nonpos(x[px + j * xl] - m)
            out[po + j * ol] = e
            total += e
        if log:
            lse = math.log(total)
            for j in range(L):
                out[po + j * ol] = (x[px + j * xl] - m) - lse
        else:
            inv = 1.0 / total
            for j in range(L):
                out[po + j * ol] = out[po + j * ol] * inv


@kernel
def softmax_backward_rows(y, ys, yo, yl, g, gs, go, gl, out, os, oo, ol, shape, nrows, L, log):
    for r in prange(nrows):
        py = _row(r, shape, ys, yo)
        pg = _row(r, shape, gs, go)
        po = _row(r, shape, os, oo)
        if yl == 1 and gl == 1 and ol == 1:
            yr = y[py:py + L]
            gr = g[pg:pg + L]
            orow = out[po:po + L]
            if log:
                total = _sum4(gr, L)
                for j in range(L):
                    orow[j] = gr[j] - exp_nonpos(yr[j]) * total
            else:
                total = _dot4(gr, yr, L)
                for j in range(L):
                    orow[j] = yr[j] * (gr[j] - total)
            continue
        total = 0.0
        if log:
            for j in range(L):
                total += g[pg + j * gl]
            for j in range(L):
                out[po + j * ol] = g[pg + j * gl] - exp_nonpos(y[py + j * yl]) * total
        else:
            for j in range(L):
                total += g[pg + j * gl] * y[py + j * yl]
            for j in range(L):
                out[po + j * ol] = y[py + j * yl] * (g[pg + j * gl] - total)


@kernel
def layernorm_rows(x, xs, xo, xl, w, wo, wl, has_w, b, bo, bl, has_b, eps,
                   out, os, oo, ol, mean, ms, mo, rstd, rs, ro, shape, nrows, L):
    for r in prange(nrows):
        px = _row(r, shape, xs, xo)
        po = _row(r, shape, os, oo)
        total = 0.0
        for j in range(L):
            total += x[px + j * xl]
        mu = total / L
        sq = 0.0
        for j in range(L):
            c = x[px + j * xl] - mu
            sq += c * c
        rs_ = 1.0 / math.sqrt(sq / L + eps)
        for j in range(L):
            v = (x[px + j * xl] - mu) * rs_
            if has_w:
                v *= w[wo + j * wl]
            if has_b:
                v += b[bo + j * bl]
            out[po + j * ol] = v
        mean[_row(r, shape, ms, mo)] = mu
        rstd[_row(r, shape, rs, ro)] = rs_


@kernel
def layernorm_backward_rows(g, gs, go, gl, x, xs, xo, xl, w, wo, wl, has_w, mean, ms, mo,
                            rstd, rs, ro, dx, ds, do, dl, shape, nrows, L,
                            partial_w, partial_b, need_wb):
    nchunks = partial_w.shape[0]
    per = (nrows + nchunks - 1) // nchunks
    for c in prange(nchunks):
        for r in range(c * per, min(nrows, (c + 1) * per)):
            pg = _row(r, shape, gs, go)
            px = _row(r, shape, xs, xo)
            pd = _row(r, shape, ds, do)
            mu = mean[_row(r, shape, ms, mo)]
            rr = rstd[_row(r, shape, rs, ro)]
            s1 = 0.0
            s2 = 0.0
            for j in range(L):
                xh = (x[px + j * xl] - mu) * rr
                gv = g[pg + j * gl]
                gh = gv * w[wo + j * wl] if has_w else gv * 1.0
                s1 += gh
                s2 += gh * xh
                if need_wb:
                    partial_w[c, j] += gv * xh
                    partial_b[c, j] += gv
            a = s1 / L
            bb = s2 / L
            for j in range(L):
                xh = (x[px + j * xl] - mu) * rr
                gv = g[pg + j * gl]
                gh = gv * w[wo + j * wl] if has_w else gv * 1.0
                dx[pd + j * dl] = rr * (gh - a - xh * bb)
