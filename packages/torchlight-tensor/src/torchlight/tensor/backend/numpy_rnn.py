"""The ``cpu`` backend's fused recurrent cells (capabilities ``gru_cell`` and ``lstm_cell``).

Formulas: ``torchlight.tensor.functions.recurrent``. Each function is a short sequence of numpy
calls writing straight into the caller's output and workspace (``ws``) arrays: the gates are
activated in place inside ``ws``, and one ``(N, H)`` scratch array serves every intermediate, so
a step allocates nothing else of size ``N x H``. Inputs may have any strides; ``ws``, the outputs
and ``g`` are contiguous (the core allocates them).
"""

import numpy as np

from .numpy_ops import sigmoid

__all__ = ["gru_cell", "gru_cell_backward", "lstm_cell", "lstm_cell_backward"]


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
