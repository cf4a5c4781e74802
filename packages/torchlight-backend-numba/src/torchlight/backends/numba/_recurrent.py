"""Fused GRU and LSTM cells (capabilities ``gru_cell``, ``lstm_cell``): one ``prange`` pass over
rows; and whole layers (``cell_sequence``): every step of a sequence in one compiled call.

Formulas: ``torchlight.tensor.functions.recurrent``. Each element of the state reads its gates
once, computes in registers and writes the new state and the saved activations once — where the
composite runs ~12 elementwise kernels (each a pass over memory and a Python dispatch) forward
and as many backward. Every operand is ``(storage, offset, row stride, column stride)`` so
transposed and sliced gate blocks need no copy. σ is computed without overflow; in float32, σ and
tanh come from the vectorisable ``exp_nonpos`` (~1e-7 absolute error), and rows whose operands
have unit column stride (the usual case) run a helper over unit-stride slices that LLVM turns
into SIMD code (measured: the GRU forward at 256 × 256, 1.7 ms -> 0.25 ms on one core).

A whole layer (:func:`gru_sequence`, :func:`lstm_sequence` and their backwards) loops over the
steps inside one compiled function: ``gh = h W_hhᵀ + b_hh`` as plain loops, then the serial copy
of the cell kernel above, so a step costs no Python at all. The plain-loop product is slower than
BLAS per multiply-add, so it runs only while a step's product is small
(:data:`SEQUENCE_MAX_WORK`); above, the backend declines and the core calls the cell and BLAS
step by step.
"""

import math
import os

import numpy as np

from numba import prange, types
from numba.extending import overload

from ._fastexp import exp_nonpos
from ._jit import JIT_OPTIONS, helper, kernel

__all__ = [
    "gru_forward",
    "gru_backward",
    "lstm_forward",
    "lstm_backward",
    "gru_sequence",
    "gru_sequence_backward",
    "lstm_sequence",
    "lstm_sequence_backward",
    "SEQUENCE_MAX_WORK",
    "takes_layer",
]

_F32 = np.float32
_ZERO, _ONE, _TWO, _TINY = _F32(0.0), _F32(1.0), _F32(2.0), _F32(0.0004)


def _sigmoid(x):
    """σ(x) without overflow. This body runs under NUMBA_DISABLE_JIT; compiled kernels get the
    per-dtype overload below."""
    e = math.exp(-abs(x))
    p = 1.0 if x >= 0 else 0.0
    return (p + (1.0 - p) * e) / (1.0 + e)


def _tanh(x):
    """tanh(x) (plain Python under NUMBA_DISABLE_JIT; the overload below when compiled)."""
    return math.tanh(x)


# float32: both from the vectorisable ``exp_nonpos`` of e^(-|x|) (libm's scalar exp and tanh made
# the GRU forward 2× slower than the composite's SIMD ufuncs); float64 keeps libm (the kit asks
# 1e-13). Locals carry prefixes and there are no conditional expressions: see ``_fastexp``.
@overload(_sigmoid, jit_options=JIT_OPTIONS, inline="always")
def _sigmoid_ov(x):
    if x == types.float32:

        def sg_impl(x):
            sg_e = exp_nonpos(-abs(x))
            sg_p = _F32(x >= _ZERO)
            return (sg_p + (_ONE - sg_p) * sg_e) / (_ONE + sg_e)

        return sg_impl

    def sg64_impl(x):
        sg64_e = math.exp(-abs(x))
        sg64_p = np.float64(x >= 0)
        return (sg64_p + (1.0 - sg64_p) * sg64_e) / (1.0 + sg64_e)

    return sg64_impl


@overload(_tanh, jit_options=JIT_OPTIONS, inline="always")
def _tanh_ov(x):
    if x == types.float32:

        def th_impl(x):
            th_a = abs(x)
            th_e = exp_nonpos(-_TWO * th_a)
            th_small = _F32(th_a < _TINY)  # tanh x = x (1 + O(x²)); 1 - e would cancel
            th_t = math.copysign((_ONE - th_e) / (_ONE + th_e), x)
            # the clamp keeps 0 · x finite for x = ±inf
            return th_small * min(max(x, -_TINY), _TINY) + (_ONE - th_small) * th_t

        return th_impl

    def th64_impl(x):
        return math.tanh(x)

    return th64_impl


@helper
def _gru_row(gi, gh, h, out, ws, H):
    """One row, every operand a unit-stride slice starting at 0 (so LLVM can vectorise the loop)."""
    for j in range(H):
        r = _sigmoid(gi[j] + gh[j])
        z = _sigmoid(gi[H + j] + gh[H + j])
        hn = gh[2 * H + j]
        n = _tanh(gi[2 * H + j] + r * hn)
        out[j] = n + z * (h[j] - n)
        ws[j] = r
        ws[H + j] = z
        ws[2 * H + j] = n
        ws[3 * H + j] = hn


@kernel
def gru_forward(
    gi, gio, gir, gic, gh, gho, ghr, ghc, h, ho, hr, hc, out, oo, orow, ws, wo, wr, N, H
):
    unit = gic == 1 and ghc == 1 and hc == 1
    for i in prange(N):
        a, b, p, q, w = gio + i * gir, gho + i * ghr, ho + i * hr, oo + i * orow, wo + i * wr
        if unit:
            _gru_row(
                gi[a : a + 3 * H],
                gh[b : b + 3 * H],
                h[p : p + H],
                out[q : q + H],
                ws[w : w + 4 * H],
                H,
            )
            continue
        for j in range(H):
            r = _sigmoid(gi[a + j * gic] + gh[b + j * ghc])
            z = _sigmoid(gi[a + (H + j) * gic] + gh[b + (H + j) * ghc])
            hn = gh[b + (2 * H + j) * ghc]
            n = _tanh(gi[a + (2 * H + j) * gic] + r * hn)
            out[q + j] = n + z * (h[p + j * hc] - n)
            ws[w + j] = r
            ws[w + H + j] = z
            ws[w + 2 * H + j] = n
            ws[w + 3 * H + j] = hn


@kernel
def gru_backward(
    g, go, gr, h, ho, hr, hc, ws, wo, wr, dgi, dio, dir_, dgh, dho, dhr, dh, do, dr, N, H
):
    for i in prange(N):
        s, p, w, a, b, q = (
            go + i * gr,
            ho + i * hr,
            wo + i * wr,
            dio + i * dir_,
            dho + i * dhr,
            do + i * dr,
        )
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


@helper
def _lstm_row(gi, gh, c, hout, cout, ws, H):
    """One row, unit-stride slices from 0 (vectorisable), like ``_gru_row``."""
    for j in range(H):
        ig = _sigmoid(gi[j] + gh[j])
        fg = _sigmoid(gi[H + j] + gh[H + j])
        gg = _tanh(gi[2 * H + j] + gh[2 * H + j])
        og = _sigmoid(gi[3 * H + j] + gh[3 * H + j])
        cn = fg * c[j] + ig * gg
        tc = _tanh(cn)
        hout[j] = og * tc
        cout[j] = cn
        ws[j] = ig
        ws[H + j] = fg
        ws[2 * H + j] = gg
        ws[3 * H + j] = og
        ws[4 * H + j] = tc


@kernel
def lstm_forward(
    gi, gio, gir, gic, gh, gho, ghr, ghc, c, co, cr, cc, out, oo, orow, oplane, ws, wo, wr, N, H
):
    unit = gic == 1 and ghc == 1 and cc == 1
    for i in prange(N):
        a, b, p, q, w = gio + i * gir, gho + i * ghr, co + i * cr, oo + i * orow, wo + i * wr
        if unit:
            _lstm_row(
                gi[a : a + 4 * H],
                gh[b : b + 4 * H],
                c[p : p + H],
                out[q : q + H],
                out[q + oplane : q + oplane + H],
                ws[w : w + 5 * H],
                H,
            )
            continue
        for j in range(H):
            ig = _sigmoid(gi[a + j * gic] + gh[b + j * ghc])
            fg = _sigmoid(gi[a + (H + j) * gic] + gh[b + (H + j) * ghc])
            gg = _tanh(gi[a + (2 * H + j) * gic] + gh[b + (2 * H + j) * ghc])
            og = _sigmoid(gi[a + (3 * H + j) * gic] + gh[b + (3 * H + j) * ghc])
            cn = fg * c[p + j * cc] + ig * gg
            tc = _tanh(cn)
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
            ig, fg, gg, og, tc = (
                ws[w + j],
                ws[w + H + j],
                ws[w + 2 * H + j],
                ws[w + 3 * H + j],
                ws[w + 4 * H + j],
            )
            dcn = gc + gh * og * (1.0 - tc * tc)
            dg[a + j] = dcn * gg * ig * (1.0 - ig)
            dg[a + H + j] = dcn * c[p + j * cc] * fg * (1.0 - fg)
            dg[a + 2 * H + j] = dcn * ig * (1.0 - gg * gg)
            dg[a + 3 * H + j] = gh * tc * og * (1.0 - og)
            dc[q + j] = dcn * fg


# --- whole layers (capability ``cell_sequence``) ---------------------------------------------------
#: the largest per-step product N·G·H·H (multiply-adds of ``h W_hhᵀ``) a whole-sequence kernel
#: takes; above, the per-step loop of BLAS products and cell kernels is faster
#: (``tests-integration/benchmarks/bench_cell_sequence.py``, one core, forward + backward, whole
#: sequence / step loop: 0.42 for an LSTM with N=1 H=2, 0.67 at 12,288, 0.86-0.88 at 2^14; the
#: kernel forced on larger layers: 1.06 at 27,648, 1.31 at 32,768)
SEQUENCE_MAX_WORK = int(os.environ.get("TORCHLIGHT_NUMBA_SEQUENCE_MAX_WORK", str(1 << 14)))


def takes_layer(n, width, hid):
    """Whether the whole-sequence kernels run a layer of batch ``n``, gate width ``width`` (G·H)
    and hidden size ``hid``, forward and backward alike (else the backend declines)."""
    return n * width * hid <= SEQUENCE_MAX_WORK


# the cells' serial compilations, called from the sequence loops (one formula for both paths)
_gru_step, _gru_back_step = gru_forward.ser, gru_backward.ser
_lstm_step, _lstm_back_step = lstm_forward.ser, lstm_backward.ser


@helper
def _slots(s, T, reverse, backward):
    """The ``s``-th step a pass runs, as ``(t, read slot, write slot)``: the compiled twin of
    ``torchlight.tensor.backend.protocol.sequence_slots`` (step ``t`` reads slot ``t`` and writes
    ``t + 1``, or in reverse reads ``t + 1`` and writes ``t``); a backward pass runs the steps in
    the opposite order."""
    t = T - 1 - s if reverse != backward else s
    return t, (t + 1 if reverse else t), (t if reverse else t + 1)


@helper
def _hidden_gates(h, ho, w, wo, wr, wc, b, bo, bs, gh, N, H, G):
    """``gh (N, G) = h (N, H) · W_hhᵀ + b_hh``, ``h`` contiguous rows, ``gh`` contiguous."""
    for i in range(N):
        for j in range(G):
            acc = b[bo + j * bs]
            for k in range(H):
                acc += h[ho + i * H + k] * w[wo + j * wr + k * wc]
            gh[i * G + j] = acc


@helper
def _back_through_w(d, do, w, wo, wr, wc, out, oo, N, H, G, accumulate):
    """``out (N, H) = d (N, G) · W_hh`` (``accumulate``: added to ``out``); contiguous rows."""
    for i in range(N):
        for k in range(H):
            acc = d[do + i * G] * w[wo + k * wc]
            for j in range(1, G):
                acc += d[do + i * G + j] * w[wo + j * wr + k * wc]
            if accumulate:
                out[oo + i * H + k] += acc
            else:
                out[oo + i * H + k] = acc


@helper
def gru_sequence(gi, gio, w, wo, wr, wc, b, bo, bs, st, sto, ws, wso, T, N, H, reverse):
    """Every step of a GRU layer: ``st`` (T + 1, 1, N, H) and ``ws`` (T, N, 4H) contiguous, the
    initial state in slot 0 (slot T with ``reverse``), ``gi`` (T, N, 3H) contiguous."""
    G, plane = 3 * H, N * H
    gh = np.empty(N * G, st.dtype)
    for s in range(T):
        t, read, write = _slots(s, T, reverse, False)
        _hidden_gates(st, sto + read * plane, w, wo, wr, wc, b, bo, bs, gh, N, H, G)
        _gru_step(
            gi, gio + t * N * G, G, 1, gh, 0, G, 1, st, sto + read * plane, H, 1,
            st, sto + write * plane, H, ws, wso + t * N * 4 * H, 4 * H, N, H,
        )  # fmt: skip


@helper
def gru_sequence_backward(
    g, go, st, sto, w, wo, wr, wc, ws, wso, dgi, dio, dgh, dho, carry, co, T, N, H, reverse
):
    """The steps of :func:`gru_sequence` in reverse; ``carry`` (1, N, H), zeros on entry, ends
    holding what the steps send to the initial state."""
    G, plane = 3 * H, N * H
    total = np.empty(plane, st.dtype)
    for s in range(T):
        t, read, write = _slots(s, T, reverse, True)
        for e in range(plane):
            total[e] = g[go + write * plane + e] + carry[co + e]
        _gru_back_step(
            total, 0, H, st, sto + read * plane, H, 1, ws, wso + t * N * 4 * H, 4 * H,
            dgi, dio + t * N * G, G, dgh, dho + t * N * G, G, carry, co, H, N, H,
        )  # fmt: skip
        _back_through_w(dgh, dho + t * N * G, w, wo, wr, wc, carry, co, N, H, G, True)


@helper
def lstm_sequence(gi, gio, w, wo, wr, wc, b, bo, bs, st, sto, ws, wso, T, N, H, reverse):
    """Every step of an LSTM layer: ``st`` (T + 1, 2, N, H) (h then c per slot) and ``ws`` (T, N,
    5H) contiguous, ``gi`` (T, N, 4H) contiguous."""
    G, plane = 4 * H, N * H
    gh = np.empty(N * G, st.dtype)
    for s in range(T):
        t, read, write = _slots(s, T, reverse, False)
        prev = sto + read * 2 * plane
        _hidden_gates(st, prev, w, wo, wr, wc, b, bo, bs, gh, N, H, G)
        _lstm_step(
            gi, gio + t * N * G, G, 1, gh, 0, G, 1, st, prev + plane, H, 1,
            st, sto + write * 2 * plane, H, plane, ws, wso + t * N * 5 * H, 5 * H, N, H,
        )  # fmt: skip


@helper
def lstm_sequence_backward(
    g, go, st, sto, w, wo, wr, wc, ws, wso, dg, dgo, carry, co, T, N, H, reverse
):
    """The steps of :func:`lstm_sequence` in reverse; ``carry`` (2, N, H) as in the GRU's."""
    G, plane = 4 * H, N * H
    total = np.empty(2 * plane, st.dtype)
    for s in range(T):
        t, read, write = _slots(s, T, reverse, True)
        for e in range(2 * plane):
            total[e] = g[go + write * 2 * plane + e] + carry[co + e]
        _lstm_back_step(
            total, 0, H, plane, st, sto + read * 2 * plane + plane, H, 1, ws,
            wso + t * N * 5 * H, 5 * H, dg, dgo + t * N * G, G, carry, co + plane, H, N, H,
        )  # fmt: skip
        _back_through_w(dg, dgo + t * N * G, w, wo, wr, wc, carry, co, N, H, G, False)
