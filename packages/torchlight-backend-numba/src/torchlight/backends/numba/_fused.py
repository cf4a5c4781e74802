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

from numba import njit, prange

from ._fastexp import exp_nonpos
from ._jit import JIT_OPTIONS, helper, kernel, sum_helper
from ._rowops import row_dot, row_exp_store, row_max, row_max_strided, row_sqdev, row_sum

__all__ = [
    "softmax_rows",
    "softmax_backward_rows",
    "softmax_packed",
    "softmax_backward_packed",
    "layernorm_rows",
    "layernorm_backward_rows",
]


# inlined at numba IR level: a helper call that takes arrays is not inlined by LLVM (each njit
# function is its own library), and its ~15 ns per call doubled softmax_backward on rows of 64;
# locals are prefixed because numba 0.68's inliner can clash with the caller's names (_fastexp)
@njit(inline="always", **JIT_OPTIONS)
def _row(rw_r, rw_shape, rw_s, rw_o):
    """Position of row ``r`` (C order over ``shape``) of one operand."""
    if rw_shape.size == 1:
        return rw_o + np.int64(rw_r) * rw_s[0]
    rw_p = rw_o
    rw_q = np.int64(rw_r)
    for rw_d in range(rw_shape.size - 1, -1, -1):
        rw_i = rw_q % rw_shape[rw_d]
        rw_q //= rw_shape[rw_d]
        rw_p += rw_i * rw_s[rw_d]
    return rw_p


# The row helpers take whole arrays and offsets (see _rowops: a slice passed to a compiled
# function costs ~15 ns per call, as much as a row of 64).
@helper
def _softmax_row_contig(x, px, out, po, L, log):
    m = row_max(x, px, L)
    row_exp_store(x, px, out, po, m, L)
    total = row_sum(out, po, L)
    xr = x[px : px + L]
    orow = out[po : po + L]
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
            _softmax_row_contig(x, px, out, po, L, log)
            continue
        m = row_max_strided(x, px, xl, L)
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


# The packed forms: every operand C-contiguous with the reduced dim last, so row r starts at
# offset + r·L and no layout goes in. A call's cost is numba's dispatch over its arguments
# (~250 instructions an int, ~650 an array): 7 arguments against the general kernel's 12, and
# no row layout to look up (an RNN's 1×18 log-softmax: the backend call 18k -> 9k instructions).
@kernel
def softmax_packed(x, xo, out, oo, nrows, L, log):
    for r in prange(nrows):
        _softmax_row_contig(x, xo + r * L, out, oo + r * L, L, log)


@helper
def _softmax_back_row_contig(y, py, g, pg, out, po, L, log):
    # a helper rather than a branch of the kernel: inside the kernel this loop ran 3.5× slower
    # (measured on rows of 64; LLVM vectorises the small function, not the large loop nest)
    total = row_sum(g, pg, L) if log else row_dot(g, pg, y, py, L)
    yr = y[py : py + L]
    gr = g[pg : pg + L]
    orow = out[po : po + L]
    if log:
        for j in range(L):
            orow[j] = gr[j] - exp_nonpos(yr[j]) * total
    else:
        for j in range(L):
            orow[j] = yr[j] * (gr[j] - total)


@kernel
def softmax_backward_rows(y, ys, yo, yl, g, gs, go, gl, out, os, oo, ol, shape, nrows, L, log):
    for r in prange(nrows):
        py = _row(r, shape, ys, yo)
        pg = _row(r, shape, gs, go)
        po = _row(r, shape, os, oo)
        if yl == 1 and gl == 1 and ol == 1:
            _softmax_back_row_contig(y, py, g, pg, out, po, L, log)
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
def softmax_backward_packed(y, yo, g, go, out, oo, nrows, L, log):
    for r in prange(nrows):
        _softmax_back_row_contig(y, yo + r * L, g, go + r * L, out, oo + r * L, L, log)


@helper
def _ln_row_out(x, px, w, wo, has_w, b, bo, has_b, mu, rs_, out, po, L):
    # one loop per (has_w, has_b) case: a loop-invariant branch inside the loop blocks SIMD
    xr = x[px : px + L]
    wr = w[wo : wo + L] if has_w else w
    br = b[bo : bo + L] if has_b else b
    orow = out[po : po + L]
    if has_w and has_b:
        for j in range(L):
            orow[j] = (xr[j] - mu) * rs_ * wr[j] + br[j]
    elif has_w:
        for j in range(L):
            orow[j] = (xr[j] - mu) * rs_ * wr[j]
    elif has_b:
        for j in range(L):
            orow[j] = (xr[j] - mu) * rs_ + br[j]
    else:
        for j in range(L):
            orow[j] = (xr[j] - mu) * rs_


@kernel
def layernorm_rows(
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
    shape,
    nrows,
    L,
):
    for r in prange(nrows):
        px = _row(r, shape, xs, xo)
        po = _row(r, shape, os, oo)
        if xl == 1 and ol == 1 and (wl == 1 or not has_w) and (bl == 1 or not has_b):
            mu = row_sum(x, px, L) / L
            rs_ = 1.0 / math.sqrt(row_sqdev(x, px, mu, L) / L + eps)
            _ln_row_out(x, px, w, wo, has_w, b, bo, has_b, mu, rs_, out, po, L)
            mean[_row(r, shape, ms, mo)] = mu
            rstd[_row(r, shape, rs, ro)] = rs_
            continue
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


@sum_helper
def _ln_back_sums(g, pg, x, px, w, wo, has_w, mu, rr, L):
    """(Σ ĝ, Σ ĝ x̂) with ĝ = g w, x̂ = (x - μ) r; one loop per has_w case."""
    gr = g[pg : pg + L]
    xr = x[px : px + L]
    s1 = 0.0
    s2 = 0.0
    if has_w:
        wr = w[wo : wo + L]
        for j in range(L):
            gh = gr[j] * wr[j]
            s1 += gh
            s2 += gh * ((xr[j] - mu) * rr)
    else:
        for j in range(L):
            s1 += gr[j]
            s2 += gr[j] * ((xr[j] - mu) * rr)
    return s1, s2


@helper
def _ln_back_row(g, pg, x, px, w, wo, has_w, mu, rr, dx, pd, pw, pb, c, need_wb, L):
    s1, s2 = _ln_back_sums(g, pg, x, px, w, wo, has_w, mu, rr, L)
    a = s1 / L
    bb = s2 / L
    gr = g[pg : pg + L]
    xr = x[px : px + L]
    drow = dx[pd : pd + L]
    if need_wb:
        pwr = pw[c]
        pbr = pb[c]
        for j in range(L):
            pwr[j] += gr[j] * ((xr[j] - mu) * rr)
            pbr[j] += gr[j]
    if has_w:
        wr = w[wo : wo + L]
        for j in range(L):
            drow[j] = rr * (gr[j] * wr[j] - a - ((xr[j] - mu) * rr) * bb)
    else:
        for j in range(L):
            drow[j] = rr * (gr[j] - a - ((xr[j] - mu) * rr) * bb)


@kernel
def layernorm_backward_rows(
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
    shape,
    nrows,
    L,
    partial_w,
    partial_b,
    need_wb,
):
    nchunks = partial_w.shape[0]
    per = (nrows + nchunks - 1) // nchunks
    for c in prange(nchunks):
        for r in range(c * per, min(nrows, (c + 1) * per)):
            pg = _row(r, shape, gs, go)
            px = _row(r, shape, xs, xo)
            pd = _row(r, shape, ds, do)
            mu = mean[_row(r, shape, ms, mo)]
            rr = rstd[_row(r, shape, rs, ro)]
            if gl == 1 and xl == 1 and dl == 1 and (wl == 1 or not has_w):
                _ln_back_row(
                    g, pg, x, px, w, wo, has_w, mu, rr, dx, pd, partial_w, partial_b, c, need_wb, L
                )
                continue
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
