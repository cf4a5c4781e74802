"""Fused GRU and LSTM cells on the GPU (capabilities ``gru_cell``, ``lstm_cell``): one launch each way.

Formulas: ``torchlight.tensor.functions.recurrent``. One thread per element of the ``(N, H)``
state, in a grid-stride loop over ``N·H``: it reads its 3 or 4 gate pre-activations from each
block, computes in the state's precision (``acc``) and writes the new state and the saved
activations once — instead of the composite's ~12 launches forward and as many backward.
Operands come as ``(storage, offset, row stride, column stride)``, so sliced or transposed gate
blocks need no copy. σ is computed without overflow.
"""

import math

from numba import cuda

__all__ = [
    "gru_forward_kernel",
    "gru_backward_kernel",
    "lstm_forward_kernel",
    "lstm_backward_kernel",
]


def _sigmoid(acc):
    @cuda.jit(device=True)
    def sig(x):
        one = acc(1.0)
        if x >= acc(0.0):
            return one / (one + math.exp(-x))
        e = math.exp(x)
        return e / (one + e)

    return sig


def gru_forward_kernel(acc):
    sig = _sigmoid(acc)

    @cuda.jit
    def k(gi, gio, gir, gic, gh, gho, ghr, ghc, h, ho, hr, hc, out, oo, orow, ws, wo, wr, N, H):
        t = cuda.grid(1)
        while t < N * H:
            i, j = t // H, t % H
            a, b, w = gio + i * gir, gho + i * ghr, wo + i * wr
            r = sig(acc(gi[a + j * gic] + gh[b + j * ghc]))
            z = sig(acc(gi[a + (H + j) * gic] + gh[b + (H + j) * ghc]))
            hn = acc(gh[b + (2 * H + j) * ghc])
            n = math.tanh(acc(gi[a + (2 * H + j) * gic]) + r * hn)
            out[oo + i * orow + j] = n + z * (acc(h[ho + i * hr + j * hc]) - n)
            ws[w + j] = r
            ws[w + H + j] = z
            ws[w + 2 * H + j] = n
            ws[w + 3 * H + j] = hn
            t += cuda.gridsize(1)

    return k


def gru_backward_kernel(acc):
    @cuda.jit
    def k(g, go, gr, h, ho, hr, hc, ws, wo, wr, dgi, dio, dir_, dgh, dho, dhr, dh, do, dr, N, H):
        one = acc(1.0)
        t = cuda.grid(1)
        while t < N * H:
            i, j = t // H, t % H
            w, a, b = wo + i * wr, dio + i * dir_, dho + i * dhr
            gj = acc(g[go + i * gr + j])
            r, z, n, hn = ws[w + j], ws[w + H + j], ws[w + 2 * H + j], ws[w + 3 * H + j]
            dn = gj * (one - z) * (one - n * n)
            d_r = dn * hn * r * (one - r)
            d_z = gj * (acc(h[ho + i * hr + j * hc]) - n) * z * (one - z)
            dgi[a + j] = d_r
            dgi[a + H + j] = d_z
            dgi[a + 2 * H + j] = dn
            dgh[b + j] = d_r
            dgh[b + H + j] = d_z
            dgh[b + 2 * H + j] = dn * r
            dh[do + i * dr + j] = gj * z
            t += cuda.gridsize(1)

    return k


def lstm_forward_kernel(acc):
    sig = _sigmoid(acc)

    @cuda.jit
    def k(
        gi, gio, gir, gic, gh, gho, ghr, ghc, c, co, cr, cc, out, oo, orow, oplane, ws, wo, wr, N, H
    ):
        t = cuda.grid(1)
        while t < N * H:
            i, j = t // H, t % H
            a, b, w, q = gio + i * gir, gho + i * ghr, wo + i * wr, oo + i * orow
            ig = sig(acc(gi[a + j * gic] + gh[b + j * ghc]))
            fg = sig(acc(gi[a + (H + j) * gic] + gh[b + (H + j) * ghc]))
            gg = math.tanh(acc(gi[a + (2 * H + j) * gic] + gh[b + (2 * H + j) * ghc]))
            og = sig(acc(gi[a + (3 * H + j) * gic] + gh[b + (3 * H + j) * ghc]))
            cn = fg * acc(c[co + i * cr + j * cc]) + ig * gg
            tc = math.tanh(cn)
            out[q + j] = og * tc
            out[q + oplane + j] = cn
            ws[w + j] = ig
            ws[w + H + j] = fg
            ws[w + 2 * H + j] = gg
            ws[w + 3 * H + j] = og
            ws[w + 4 * H + j] = tc
            t += cuda.gridsize(1)

    return k


def lstm_backward_kernel(acc):
    @cuda.jit
    def k(g, go, gr, gplane, c, co, cr, cc, ws, wo, wr, dg, dgo, dgr, dc, dco, dcr, N, H):
        one = acc(1.0)
        t = cuda.grid(1)
        while t < N * H:
            i, j = t // H, t % H
            s, w, a = go + i * gr, wo + i * wr, dgo + i * dgr
            gh, gc = acc(g[s + j]), acc(g[s + gplane + j])
            ig, fg, gg, og, tc = (
                ws[w + j],
                ws[w + H + j],
                ws[w + 2 * H + j],
                ws[w + 3 * H + j],
                ws[w + 4 * H + j],
            )
            dcn = gc + gh * og * (one - tc * tc)
            dg[a + j] = dcn * gg * ig * (one - ig)
            dg[a + H + j] = dcn * acc(c[co + i * cr + j * cc]) * fg * (one - fg)
            dg[a + 2 * H + j] = dcn * ig * (one - gg * gg)
            dg[a + 3 * H + j] = gh * tc * og * (one - og)
            dc[dco + i * dcr + j] = dcn * fg
            t += cuda.gridsize(1)

    return k
