"""The pointwise part of one GRU or LSTM step: fused backend kernels when offered, composites otherwise.

A recurrent step is two matmuls and a dozen elementwise ops on the gates. The matmuls stay
matmuls (``gi = x W_ihᵀ + b_ih``, ``gh = h W_hhᵀ + b_hh``); what follows is one pass over the
gates here when the backend declares ``"gru_cell"`` / ``"lstm_cell"``, instead of ~12 ops each a
pass over memory and a trip through Python dispatch (forward and again backward) — for a small
hidden size that per-op overhead is most of a step.

GRU, gates stacked r, z, n (PyTorch's order) in ``gi``, ``gh`` ``(N, 3H)``::

    r = σ(gi_r + gh_r)        z = σ(gi_z + gh_z)        n = tanh(gi_n + r ⊙ gh_n)
    h' = (1 - z) ⊙ n + z ⊙ h

and its backward, with ``g = ∂L/∂h'``::

    ∂n  = g (1 - z) (1 - n²)                 -> ∂gi_n;  ∂gh_n = ∂n ⊙ r
    ∂r  = ∂n ⊙ gh_n ⊙ r (1 - r)             -> ∂gi_r = ∂gh_r
    ∂z  = g (h - n) z (1 - z)                 -> ∂gi_z = ∂gh_z
    ∂h  = g z                                 (the direct path; the path through gh is the matmul's)

LSTM, gates i, f, g, o in ``gi``, ``gh`` ``(N, 4H)``, ``a = gi + gh``::

    i, f, g, o = σ(a_i), σ(a_f), tanh(a_g), σ(a_o)
    c' = f ⊙ c + i ⊙ g          h' = o ⊙ tanh(c')

and its backward, with ``gh' = ∂L/∂h'``, ``gc' = ∂L/∂c'``::

    ∂c' = gc' + gh' o (1 - tanh²c')
    ∂a_i = ∂c' g i (1 - i)     ∂a_f = ∂c' c f (1 - f)     ∂a_g = ∂c' i (1 - g²)
    ∂a_o = gh' tanh(c') o (1 - o)                          ∂c = ∂c' f

(∂gi = ∂gh = ∂a). The fused forward saves the activated gates (GRU: r, z, n and gh_n; LSTM: i,
f, g, o and tanh c') so the backward is one pass too. An autograd Function has one output, so the
fused LSTM returns ``h'`` and ``c'`` stacked as ``(2, N, H)``; ``h'`` and ``c'`` are its two
contiguous halves.
"""

from torchlight.autograd import Function

from ..dispatch import alloc, same_backend
from ..errors import ShapeError

__all__ = ["FusedGRUCell", "FusedLSTMCell", "gru_cell_gates", "lstm_cell_gates"]


class FusedGRUCell(Function):
    """``h' = gru(gi, gh, h)`` through the backend's ``gru_cell`` capability."""

    @staticmethod
    def forward(ctx, gi, gh, h):
        n, hid = h.shape
        out = alloc((n, hid), h.dtype, h.backend, h)
        ws = alloc((n, 4 * hid), h.dtype, h.backend, h)
        h.backend.gru_cell(gi._td, gh._td, h._td, out._td, ws._td)
        ctx.save_for_backward(h)
        ctx.ws = ws  # private to this step: nothing else can write it
        return out

    @staticmethod
    def backward(ctx, g):
        (h,) = ctx.saved_tensors
        n, hid = h.shape
        be = h.backend
        dgi = alloc((n, 3 * hid), h.dtype, be, h)
        dgh = alloc((n, 3 * hid), h.dtype, be, h)
        dh = alloc((n, hid), h.dtype, be, h)
        be.gru_cell_backward(g.contiguous()._td, h._td, ctx.ws._td, dgi._td, dgh._td, dh._td)
        return dgi, dgh, dh


class FusedLSTMCell(Function):
    """``[h'; c'] = lstm(gi, gh, c)`` (shape ``(2, N, H)``) through the ``lstm_cell`` capability."""

    @staticmethod
    def forward(ctx, gi, gh, c):
        n, hid = c.shape
        out = alloc((2, n, hid), c.dtype, c.backend, c)
        ws = alloc((n, 5 * hid), c.dtype, c.backend, c)
        c.backend.lstm_cell(gi._td, gh._td, c._td, out._td, ws._td)
        ctx.save_for_backward(c)
        ctx.ws = ws
        return out

    @staticmethod
    def backward(ctx, g):
        (c,) = ctx.saved_tensors
        n, hid = c.shape
        be = c.backend
        dgates = alloc((n, 4 * hid), c.dtype, be, c)
        dc = alloc((n, hid), c.dtype, be, c)
        be.lstm_cell_backward(g.contiguous()._td, c._td, ctx.ws._td, dgates._td, dc._td)
        return dgates, dgates, dc  # ∂gi = ∂gh; a leaf's .grad is always a private copy


def _check(name, gates, gi, gh, state):
    if state.ndim != 2:
        raise ShapeError(f"{name}: the state must be 2-D (N, H), got shape {state.shape}")
    want = (state.shape[0], gates * state.shape[1])
    for what, t in (("gi", gi), ("gh", gh)):
        if t.shape != want:
            raise ShapeError(
                f"{name}: {what} must have shape {want} ({gates} gates of the state's "
                f"width {state.shape[1]}), got {t.shape}"
            )
        same_backend(state, t)
    if not state.dtype.is_floating_point or gi.dtype != state.dtype or gh.dtype != state.dtype:
        raise TypeError(
            f"{name}: gi, gh and the state must share one float dtype, got "
            f"{gi.dtype}, {gh.dtype}, {state.dtype}; cast them with .to(dtype)"
        )


def gru_cell_gates(gi, gh, h):
    """The gate arithmetic of one GRU step: ``h'`` from the pre-activations and ``h``.

    ``gi = x W_ihᵀ + b_ih`` and ``gh = h W_hhᵀ + b_hh`` are ``(N, 3H)`` with gates r, z, n;
    ``h`` is ``(N, H)``; the result is ``(N, H)`` (formulas in the module docstring). One fused
    backend pass each way when the backend declares ``"gru_cell"``, else composite ops.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.recurrent import gru_cell_gates
    >>> h = gru_cell_gates(tl.zeros(1, 3), tl.zeros(1, 3), tl.ones(1, 1))
    >>> round(h.item(), 4)  # z = σ(0) = 0.5, n = tanh(0) = 0: h' = 0.5 n + 0.5 h
    0.5
    """
    _check("gru_cell_gates", 3, gi, gh, h)
    if "gru_cell" in h.backend.capabilities:
        return FusedGRUCell.apply(gi, gh, h)
    i_r, i_z, i_n = gi.chunk(3, -1)  # composite fallback
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (h - n)  # = (1 - z) n + z h


def lstm_cell_gates(gi, gh, c):
    """The gate arithmetic of one LSTM step: ``(h', c')`` from the pre-activations and ``c``.

    ``gi = x W_ihᵀ + b_ih`` and ``gh = h W_hhᵀ + b_hh`` are ``(N, 4H)`` with gates i, f, g, o;
    ``c`` is ``(N, H)``; ``h'`` and ``c'`` are ``(N, H)`` (formulas in the module docstring). One
    fused backend pass each way when the backend declares ``"lstm_cell"``, else composite ops.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.recurrent import lstm_cell_gates
    >>> h, c = lstm_cell_gates(tl.zeros(1, 4), tl.zeros(1, 4), tl.ones(1, 1))
    >>> round(c.item(), 4)  # f = σ(0) = 0.5, g = tanh(0) = 0: c' = 0.5 c
    0.5
    """
    _check("lstm_cell_gates", 4, gi, gh, c)
    if "lstm_cell" in c.backend.capabilities:
        hc = FusedLSTMCell.apply(gi, gh, c)
        return hc[0], hc[1]
    i, f, g, o = (gi + gh).chunk(4, -1)  # composite fallback
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c
