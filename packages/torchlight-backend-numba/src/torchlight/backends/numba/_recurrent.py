"""Fused GRU and LSTM cells (capabilities ``gru_cell``, ``lstm_cell``): one ``prange`` pass over rows.

Formulas: ``torchlight.tensor.functions.recurrent``. Each element of the state reads its gates
once, computes in registers and writes the new state and the saved activations once — where the
composite runs ~12 elementwise kernels (each a pass over memory and a Python dispatch) forward
and as many backward. Every operand is ``(storage, offset, row stride, column stride)`` so
transposed and sliced gate blocks need no copy. σ is computed without overflow.
"""

import math

from numba import prange

from ._jit import helper, kernel

__all__ = ["gru_forward", "gru_backward", "lstm_forward", "lstm_backward"]


@helper
def _sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@kernel
def gru_forward(gi, gio, gir, gic, gh, gho, ghr, ghc, h, ho, hr, hc, out, oo, orow, ws, wo, wr, N, H):
    for i in prange(N):
        a, b, p, q, w = gio + i * gir, gho + i * ghr, ho + i * hr, oo + i * orow, wo + i * wr
        for j in range(H):
            r = _sigmoid(gi[a + j * gic] + gh[b + j * ghc])
            z = _sigmoid(gi[a + (H + j) * gic] + gh[b + (H + j) * ghc])
            hn = gh[b + (2 * H + j) * ghc]
            n = math.tanh(gi[a + (2 * H + j) * gic] + r * hn)
            out[q + j] = n + z * (h[p + j * hc] - n)
            ws[w + j] = r
            ws[w + H + j] = z
            ws[w + 2 * H + j] = n
            ws[w + 3 * H + j] = hn


@kernel
def gru_backward(g, go, gr, h, ho, hr, hc, ws, wo, wr, dgi, dio, dir_, dgh, dho, dhr, dh, do, dr, N, H):
    for i in prange(N):
        s, p, w, a, b, q = go + i * gr, ho + i * hr, wo + i * wr, dio + i * dir_, dho + i * dhr, do + i * dr
        for j in range(H):
            gj = g[s + j]
            r, z, n, hn = ws[w + j], ws[w + H + j], ws[w + 2 * H + j], ws[w + 3 * H + j]
            dn = gj * (1.0 - z) * (1.0 - n * n)
            d_r = dn * hn * r * (1.0 - r)
            d_z = gj * (h[p + j * hc] - n) * z * (1.0 - z)
            dgi[a + j] = d_r
            dgi[a + H + j] = d_z
            dgi[a + 2 * H + j] = dn
            dgh[b + j] = d_r
            dgh[b + H + j] = d_z
            dgh[b + 2 * H + j] = dn * r
            dh[q + j] = gj * z


@kernel
def lstm_forward(gi, gio, gir, gic, gh, gho, ghr, ghc, c, co, cr, cc, out, oo, orow, oplane, ws, wo, wr, N, H):
    for i in prange(N):
        a, b, p, q, w = gio + i * gir, gho + i * ghr, co + i * cr, oo + i * orow, wo + i * wr
        for j in range(H):
            ig = _sigmoid(gi[a + j * gic] + gh[b + j * ghc])
            fg = _sigmoid(gi[a + (H + j) * gic] + gh[b + (H + j) * ghc])
            gg = math.tanh(gi[a + (2 * H + j) * gic] + gh[b + (2 * H + j) * ghc])
            og = _sigmoid(gi[a + (3 * H + j) * gic] + gh[b + (3 * H + j) * ghc])
            cn = fg * c[p + j * cc] + ig * gg
            tc = math.tanh(cn)
            out[q + j] = og * tc
            out[q + oplane + j] = cn
            ws[w + j] = ig
            ws[w + H + j] = fg
            ws[w + 2 * H + j] = gg
            ws[w + 3 * H + j] = og
            ws[w + 4 * H + j] = tc


@kernel
def lstm_backward(g, go, gr, gplane, c, co, cr, cc, ws, wo, wr, dg, dgo, dgr, dc, dco, dcr, N, H):
    for i in prange(N):
        s, p, w, a, q = go + i * gr, co + i * cr, wo + i * wr, dgo + i * dgr, dco + i * dcr
        for j in range(H):
            gh, gc = g[s + j], g[s + gplane + j]
            ig, fg, gg, og, tc = ws[w + j], ws[w + H + j], ws[w + 2 * H + j], ws[w + 3 * H + j], ws[w + 4 * H + j]
            dcn = gc + gh * og * (1.0 - tc * tc)
            dg[a + j] = dcn * gg * ig * (1.0 - ig)
            dg[a + H + j] = dcn * c[p + j * cc] * fg * (1.0 - fg)
            dg[a + 2 * H + j] = dcn * ig * (1.0 - gg * gg)
            dg[a + 3 * H + j] = gh * tc * og * (1.0 - og)
            dc[q + j] = dcn * fg
