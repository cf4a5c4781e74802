"""The ``cpu`` backend's fused recurrent cells (capabilities ``gru_cell``, ``lstm_cell`` and
``cell_sequence``).

Formulas: ``torchlight.tensor.functions.recurrent``. Each function is a short sequence of numpy
calls writing straight into the caller's output and workspace (``ws``) arrays: the gates are
activated in place inside ``ws``, and one ``(N, H)`` scratch array serves every intermediate, so
a step allocates nothing else of size ``N x H``. Inputs may have any strides; ``ws``, the outputs
and ``g`` are contiguous (the core allocates them).

:func:`sequence` and :func:`sequence_backward` run a whole layer's steps on ndarray views of the
core's buffers: the same numpy calls as the core's step loop, without a ``TensorData`` and a
backend call around each (forward + backward of an LSTM layer of 11 steps with H = 2: 0.74× the
core's loop; 0.57-0.90× over the cases of ``tests-integration/benchmarks/bench_cell_sequence.py``).
"""

import numpy as np

from .numpy_ops import sigmoid
from .protocol import sequence_slots

__all__ = [
    "gru_cell",
    "gru_cell_backward",
    "lstm_cell",
    "lstm_cell_backward",
    "sequence",
    "sequence_backward",
]


def gru_cell(gi, gh, h, out, ws):
    """``out = h'``; ``ws`` (N, 4H) keeps r, z, n, gh_n for the backward."""
    H = h.shape[1]
    rz, n, hn = ws[:, : 2 * H], ws[:, 2 * H : 3 * H], ws[:, 3 * H :]
    np.add(gi[:, : 2 * H], gh[:, : 2 * H], out=rz)
    sigmoid(rz, rz)
    hn[...] = gh[:, 2 * H :]
    np.multiply(rz[:, :H], hn, out=n)
    n += gi[:, 2 * H :]
    np.tanh(n, out=n)
    np.subtract(h, n, out=out)  # h' = n + z (h - n)
    out *= rz[:, H:]
    out += n


def gru_cell_backward(g, h, ws, dgi, dgh, dh):
    """Backward of ``gru_cell`` in one pass: from ``g`` = dL/dh' (N, H), ``h`` and the saved ``ws``,
    writes dL/dgi and dL/dgh (N, 3H) into ``dgi`` and ``dgh`` and dL/dh into ``dh``."""
    H = h.shape[1]
    r, z, n, hn = ws[:, :H], ws[:, H : 2 * H], ws[:, 2 * H : 3 * H], ws[:, 3 * H :]
    d_r, d_z, d_n = dgi[:, :H], dgi[:, H : 2 * H], dgi[:, 2 * H :]
    t = np.empty_like(n)
    np.multiply(g, z, out=dh)
    np.subtract(g, dh, out=d_n)  # g (1 - z)
    np.multiply(n, n, out=t)
    np.subtract(1.0, t, out=t)
    d_n *= t
    np.multiply(d_n, r, out=dgh[:, 2 * H :])
    np.multiply(d_n, hn, out=d_r)
    np.subtract(1.0, r, out=t)
    t *= r
    d_r *= t
    np.subtract(h, n, out=d_z)
    d_z *= g
    np.subtract(1.0, z, out=t)
    t *= z
    d_z *= t
    dgh[:, : 2 * H] = dgi[:, : 2 * H]


def lstm_cell(gi, gh, c, out, ws):
    """``out`` (2, N, H) = [h'; c']; ``ws`` (N, 5H) keeps i, f, g, o, tanh c' for the backward."""
    H = c.shape[1]
    gates = ws[:, : 4 * H]
    np.add(gi, gh, out=gates)
    sigmoid(ws[:, : 2 * H], ws[:, : 2 * H])
    np.tanh(ws[:, 2 * H : 3 * H], out=ws[:, 2 * H : 3 * H])
    sigmoid(ws[:, 3 * H : 4 * H], ws[:, 3 * H : 4 * H])
    i, f, gg, o, tc = (ws[:, k * H : (k + 1) * H] for k in range(5))
    hn, cn = out[0], out[1]
    np.multiply(f, c, out=cn)
    np.multiply(i, gg, out=hn)  # hn as scratch before it gets h'
    cn += hn
    np.tanh(cn, out=tc)
    np.multiply(o, tc, out=hn)


def lstm_cell_backward(g, c, ws, dgates, dc):
    """Backward of ``lstm_cell`` in one pass: from ``g`` = dL/d[h'; c'] (2, N, H), ``c`` and the
    saved ``ws``, writes dL/dgates (N, 4H), the gradient of both pre-activation blocks, into
    ``dgates`` and dL/dc into ``dc``."""
    H = c.shape[1]
    i, f, gg, o, tc = (ws[:, k * H : (k + 1) * H] for k in range(5))
    d_i, d_f, d_g, d_o = (dgates[:, k * H : (k + 1) * H] for k in range(4))
    gh, gc = g[0], g[1]
    t = np.empty_like(tc)
    np.multiply(tc, tc, out=dc)  # dc holds ∂c' until the end
    np.subtract(1.0, dc, out=dc)
    dc *= o
    dc *= gh
    dc += gc
    np.multiply(gh, tc, out=d_o)
    np.subtract(1.0, o, out=t)
    t *= o
    d_o *= t
    np.multiply(dc, gg, out=d_i)
    np.subtract(1.0, i, out=t)
    t *= i
    d_i *= t
    np.multiply(dc, c, out=d_f)
    np.subtract(1.0, f, out=t)
    t *= f
    d_f *= t
    np.multiply(dc, i, out=d_g)
    np.multiply(gg, gg, out=t)
    np.subtract(1.0, t, out=t)
    d_g *= t
    dc *= f


def sequence(kind, gi, w, b, st, ws, reverse):
    """Every step of a GRU (``kind="gru"``) or LSTM layer: ``gh = h W_hhᵀ + b_hh``, then the cell,
    writing the states ``st`` (T + 1, S, N, H) (the initial one already in its slot) and each
    step's workspace ``ws[t]``."""
    gh = np.empty(gi.shape[1:], gi.dtype)
    wt = w.T
    order, read, write, _ = sequence_slots(gi.shape[0], reverse)
    for t in order:
        prev = st[t + read]
        np.matmul(prev[0], wt, out=gh)
        if b is not None:
            gh += b
        if kind == "gru":
            gru_cell(gi[t], gh, prev[0], st[t + write, 0], ws[t])
        else:
            lstm_cell(gi[t], gh, prev[1], st[t + write], ws[t])


def sequence_backward(kind, g, st, w, ws, dgi, dgh, carry, reverse):
    """The steps of :func:`sequence` in reverse: from ``g`` = ∂L/∂st, writes ∂L/∂gi and ∂L/∂gh of
    every step (one buffer for an LSTM) and leaves in ``carry`` (S, N, H), zeros on entry, the
    gradient the steps send to the initial state."""
    total = np.empty_like(carry)
    back = np.empty_like(carry[0]) if kind == "gru" else None
    order, read, write, _ = sequence_slots(g.shape[0] - 1, reverse)
    for t in reversed(order):
        np.add(g[t + write], carry, out=total)
        if kind == "gru":
            gru_cell_backward(total[0], st[t + read, 0], ws[t], dgi[t], dgh[t], carry[0])
            np.matmul(dgh[t], w, out=back)
            carry[0] += back
        else:
            lstm_cell_backward(total, st[t + read, 1], ws[t], dgi[t], carry[1])
            np.matmul(dgi[t], w, out=carry[0])
