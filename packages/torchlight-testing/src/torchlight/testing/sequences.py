"""The kit's test of the optional ``cell_sequence`` capability: every step of a GRU or LSTM layer in
one call.

A mixin of :class:`~torchlight.testing.BackendConformance` (which supplies ``be`` and ``_need``);
it skips when the backend does not declare ``cell_sequence``. The reference runs the kit's float64
cell equations (those of the ``gru_cell`` / ``lstm_cell`` tests) step by step in numpy, with
``gh = h W_hhᵀ + b_hh`` before each step and, backward, ``∂h_prev = (the cell's direct path) +
∂gh W_hh``. Both directions, with and without a bias, ``W_hh`` contiguous and transposed, in both
float dtypes. A backend may decline a size (return ``False``): then it must have written nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from .catalog import FLOAT, sample
from .fused import _f64, _ref_gru, _ref_gru_backward, _ref_lstm, _ref_lstm_backward, _rng
from .strategies import SENTINEL, empty_view, make_view, read

__all__ = ["SequenceConformance"]

#: (kind, gates, state slots, workspace width in units of H)
KINDS = {"gru": (3, 1, 4), "lstm": (4, 2, 5)}
T, N, H = 4, 3, 5


def _order(reverse):
    """``(t, read slot, write slot)`` of each step in the order it runs."""
    if reverse:
        return [(t, t + 1, t) for t in range(T - 1, -1, -1)]
    return [(t, t, t + 1) for t in range(T)]


def _reference(kind, gi, w, b, st0, g, reverse):
    """float64 states, workspace, and the backward's dgi, dgh and initial-state gradient."""
    gates, slots, width = KINDS[kind]
    st = np.zeros((T + 1, slots, N, H))
    ws = np.zeros((T, N, width * H))
    st[T if reverse else 0] = st0
    for t, rd, wr in _order(reverse):
        gh = st[rd, 0] @ w.T + b
        if kind == "gru":
            st[wr, 0], ws[t] = _ref_gru(gi[t], gh, st[rd, 0])
        else:
            st[wr], ws[t] = _ref_lstm(gi[t], gh, st[rd, 1])
    dgi, dgh = np.zeros((T, N, gates * H)), np.zeros((T, N, gates * H))
    carry = np.zeros((slots, N, H))
    for t, rd, wr in reversed(_order(reverse)):
        total = g[wr] + carry
        if kind == "gru":
            dgi[t], dgh[t], direct = _ref_gru_backward(total[0], st[rd, 0], ws[t])
            carry = (direct + dgh[t] @ w)[None]
        else:
            dgi[t], dc = _ref_lstm_backward(total, st[rd, 1], ws[t])
            dgh[t] = dgi[t]
            carry = np.stack([dgi[t] @ w, dc])
    return st, ws, dgi, dgh, carry


class SequenceConformance:
    """``cell_sequence`` tests; mixed into ``BackendConformance``."""

    @pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
    @pytest.mark.parametrize("kind", sorted(KINDS))
    @pytest.mark.parametrize("dtype", FLOAT)
    def test_cell_sequence(self, dtype, kind, reverse):
        """Capability ``cell_sequence``: the states, workspace and gradients of a whole layer
        equal the float64 step-by-step reference (or the backend declines and writes nothing)."""
        self._need("cell_sequence")
        be = self.be
        gates, slots, width = KINDS[kind]
        rng = _rng("sequence", kind, dtype, reverse)
        gi = sample(rng, (T, N, gates * H), dtype)
        w = sample(rng, (gates * H, H), dtype)
        st0 = sample(rng, (slots, N, H), dtype)
        g = sample(rng, (T + 1, slots, N, H), dtype)
        tol = 2e-5 if dtype == "float32" else 1e-12
        for w_layout, bias in (("contiguous", True), ("permuted", False)):
            b = sample(rng, (gates * H,), dtype) if bias else np.zeros(gates * H, dtype)
            what = f"cell_sequence {kind} {dtype} reverse={reverse} w={w_layout} bias={bias}"
            want = _reference(kind, _f64(gi), _f64(w), _f64(b), _f64(st0), _f64(g), reverse)
            states = empty_view(be, (T + 1, slots, N, H), dtype)
            init = states.select(0, T if reverse else 0)
            be.map("copy", make_view(be, st0)[0], init)
            ws = empty_view(be, (T, N, width * H), dtype)
            wv = make_view(be, w, w_layout)[0]
            bv = make_view(be, b, "offset")[0] if bias else None
            ran = be.cell_sequence(kind, make_view(be, gi)[0], wv, bv, states, ws, reverse)
            assert ran in (True, False), what + ": must return a bool"
            if not ran:
                rest = read(be, states)[slice(0, T) if reverse else slice(1, T + 1)]
                assert np.all(rest == SENTINEL[dtype]), what + ": declined but wrote states"
                continue
            for name, view, ref in (("states", states, want[0]), ("ws", ws, want[1])):
                np.testing.assert_allclose(
                    read(be, view), ref, rtol=tol, atol=tol, err_msg=f"{what} ({name})"
                )
            dgi = empty_view(be, (T, N, gates * H), dtype)
            dgh = dgi if kind == "lstm" else empty_view(be, (T, N, gates * H), dtype)
            carry = make_view(be, np.zeros((slots, N, H), dtype))[0]
            ran = be.cell_sequence_backward(
                kind, make_view(be, g)[0], states, wv, ws, dgi, dgh, carry, reverse
            )
            assert ran is True, what + ": the backward declined a size its forward ran"
            for name, view, ref in (("dgi", dgi, want[2]), ("dgh", dgh, want[3])):
                np.testing.assert_allclose(
                    read(be, view), ref, rtol=tol, atol=tol, err_msg=f"{what} ({name})"
                )
            np.testing.assert_allclose(
                read(be, carry), want[4], rtol=tol, atol=tol, err_msg=f"{what} (carry)"
            )
