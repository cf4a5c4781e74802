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

A whole layer over a sequence (:func:`recurrent_layer`) is one autograd node, :class:`CellSequence`
(also over a packed batch of sequences of different lengths, sorted longest first: step ``t``
then runs on the rows of the sequences that have it and copies the others' state through):
its forward runs the steps straight on the backend (``gh = h W_hhᵀ + b_hh``, then the fused cell)
and its backward walks them in reverse, carrying ``∂L/∂h`` (and ``∂L/∂c``) from step to step::

    ∂h_prev = (direct path of the cell) + ∂gh W_hh        (LSTM: ∂h_prev = ∂a W_hh)
    ∂W_hh = Σ_t ∂gh_tᵀ h_prev,t    ∂b_hh = Σ_t Σ_n ∂gh_t  (one matmul and one sum over all steps)

so a sequence of T steps costs one node instead of 3T (an index, a linear and a cell per step),
and the gradient of the input projection ``gi`` is written in place instead of T zero-filled
copies of it being added up. A backend with the ``cell_sequence`` capability runs all T steps
in one call each way (a compiled backend: one kernel, with no Python between the steps); it may
decline a size, and a packed batch always takes the step loop here.
"""

from typing import NamedTuple

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from ..backend.protocol import sequence_slots
from ..creation import filled
from ..dispatch import alloc, same_backend, view_of
from ..errors import ShapeError

__all__ = [
    "FusedGRUCell",
    "FusedLSTMCell",
    "CellSequence",
    "gru_cell_gates",
    "lstm_cell_gates",
    "recurrent_layer",
    "layer_outputs",
]


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


class _Cell(NamedTuple):
    """What :class:`CellSequence` needs to know of a cell kind."""

    capability: str
    gates: int  # gate blocks of width H in gi and gh
    slots: int  # states per step: h (GRU), or h and c (LSTM)
    workspace: int  # width of the cell's saved workspace, in units of H


CELLS = {"gru": _Cell("gru_cell", 3, 1, 4), "lstm": _Cell("lstm_cell", 4, 2, 5)}


def layer_outputs(states, reverse=False):
    """The ``(T, S, N, H)`` view of every step's states in time order and the final ``(S, N, H)``
    state, from the buffer :func:`recurrent_layer` returns.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.recurrent import layer_outputs, recurrent_layer
    >>> seq, last = layer_outputs(recurrent_layer("gru", tl.zeros(5, 2, 3), tl.ones(2, 1), None,
    ...                                           tl.zeros(3, 1)))
    >>> seq.shape, last.shape
    ((5, 1, 2, 1), (1, 2, 1))
    """
    steps = states.shape[0] - 1
    _, _, write, init = sequence_slots(steps, reverse)
    return states[write : write + steps], states[steps - init]


def _whole_layer(be, sizes):
    """Whether to offer the backend the whole layer (``cell_sequence``): a packed batch
    (``sizes``) always takes the step loop here."""
    return sizes is None and "cell_sequence" in be.capabilities


def _rows(view, rows, n):
    """The first ``rows`` of the ``n`` rows (dim 0) of ``view``: the sequences of a packed batch
    that are still running at a step (they come first: a packed batch is sorted by length)."""
    return view if rows == n else view.slice(0, 0, rows, 1)


def _zeros(shape, dtype, backend, like):
    return filled(shape, 0, dtype, backend, like=like)


def _steps_forward(be, kind, gi, w_hh, b_hh, st, ws, sizes, reverse):
    """The core's step loop of :class:`CellSequence`'s forward (views throughout): per step
    ``gh = h W_hhᵀ + b_hh`` (one BLAS product) and one cell call; a packed batch's finished
    sequences copy their state through."""
    steps, n, width = gi.shape
    order, read, write, _ = sequence_slots(steps, reverse)
    gh_all = alloc((n, width), w_hh.dtype, be, w_hh)._td
    w_t = w_hh._td.permute((1, 0))
    bias = None if b_hh is None else b_hh._td.expand((n, width))
    step = be.gru_cell if kind == "gru" else be.lstm_cell
    for t in order:
        prev, out = st.select(0, t + read), st.select(0, t + write)
        rows = n if sizes is None else sizes[t]
        if rows < n:  # a packed batch: sequences without step t keep their state
            be.map("copy", prev.slice(1, rows, n, 1), out.slice(1, rows, n, 1))
            if not rows:
                continue
            prev, out = prev.slice(1, 0, rows, 1), out.slice(1, 0, rows, 1)
        gh = _rows(gh_all, rows, n)
        be.matmul(prev.select(0, 0), w_t, gh)
        if bias is not None:
            be.zip("add", gh, _rows(bias, rows, n), gh)
        gi_t, ws_t = _rows(gi.select(0, t), rows, n), _rows(ws.select(0, t), rows, n)
        if kind == "gru":
            step(gi_t, gh, prev.select(0, 0), out.select(0, 0), ws_t)
        else:
            step(gi_t, gh, prev.select(0, 1), out, ws_t)


def _steps_backward(be, kind, g, states, w, ws, dgi, dgh, ct_all, sizes, reverse):
    """The core's step loop of :class:`CellSequence`'s backward: the steps in reverse, carrying
    ``∂L/∂state`` in ``ct_all``; a packed batch's finished sequences pass their gradient through."""
    st, (_, n, hid) = states._td, ct_all.shape
    order, read, write, _ = sequence_slots(g.shape[0] - 1, reverse)
    total_all = alloc(ct_all.shape, states.dtype, be, states)._td
    back_all = alloc((n, hid), states.dtype, be, states)._td if kind == "gru" else None
    for t in reversed(order):
        be.zip("add", g.select(0, t + write), ct_all, total_all)
        prev, total, ct, back = st.select(0, t + read), total_all, ct_all, back_all
        rows = n if sizes is None else sizes[t]
        if rows < n:  # finished sequences copied their state: its gradient passes unchanged
            be.map("copy", total.slice(1, rows, n, 1), ct.slice(1, rows, n, 1))
            if not rows:
                continue
            prev, total, ct = (v.slice(1, 0, rows, 1) for v in (prev, total, ct))
            back = None if back is None else _rows(back, rows, n)
        dgh_t = _rows(dgh.select(0, t), rows, n)
        if kind == "gru":
            be.gru_cell_backward(
                total.select(0, 0),
                prev.select(0, 0),
                _rows(ws.select(0, t), rows, n),
                _rows(dgi.select(0, t), rows, n),
                dgh_t,
                ct.select(0, 0),
            )
            be.matmul(dgh_t, w, back)
            be.zip("add", ct.select(0, 0), back, ct.select(0, 0))
        else:
            be.lstm_cell_backward(
                total,
                prev.select(0, 1),
                _rows(ws.select(0, t), rows, n),
                dgh_t,
                ct.select(0, 1),
            )
            be.matmul(dgh_t, w, ct.select(0, 0))


class CellSequence(Function):
    """A GRU or LSTM layer over a whole sequence as one node (see the module docstring).

    Inputs: ``gi`` ``(T, N, G·H)`` (every step's ``x W_ihᵀ + b_ih``), ``h0`` and, for an LSTM,
    ``c0`` ``(N, H)``, ``w_hh`` ``(G·H, H)``, ``b_hh`` ``(G·H,)`` or ``None``, the kind, and the
    direction. Output: ``states`` ``(T + 1, S, N, H)`` (``S`` = 1 for a GRU, 2 for an LSTM: h
    then c) holding the initial state and every step's: step ``t`` writes slot ``t + 1`` and reads
    slot ``t``, or, run in reverse, writes slot ``t`` and reads slot ``t + 1``. ``sizes`` (a
    packed batch): how many sequences, the first ones, have step ``t``; the others copy their
    state through that step, and their gradient passes through it unchanged.
    """

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, b_hh, kind, reverse, sizes=None):
        cell = CELLS[kind]
        steps, n, width = gi.shape
        hid = h0.shape[1]
        be = h0.backend
        states = alloc((steps + 1, cell.slots, n, hid), h0.dtype, be, h0)
        st = states._td
        init = st.select(0, sequence_slots(steps, reverse)[3])
        be.map("copy", h0._td, init.select(0, 0))
        if c0 is not None:
            be.map("copy", c0._td, init.select(0, 1))
        ws = alloc((steps, n, cell.workspace * hid), h0.dtype, be, h0)
        if not (
            _whole_layer(be, sizes)
            and be.cell_sequence(
                kind,
                gi.contiguous()._td,
                w_hh._td,
                None if b_hh is None else b_hh._td,
                st,
                ws._td,
                reverse,
            )
        ):
            _steps_forward(be, kind, gi._td, w_hh, b_hh, st, ws._td, sizes, reverse)
        ctx.save_for_backward(states, w_hh)
        ctx.ws, ctx.kind, ctx.reverse, ctx.sizes = ws, kind, reverse, sizes
        return states

    @staticmethod
    def backward(ctx, g):
        if GradMode.enabled:
            raise NotImplementedError(
                "a fused recurrent layer runs its backward on the backend directly, so it cannot be "
                "differentiated twice (create_graph=True); run the layer inside "
                "tl.jit.trace or on a backend without the cell capability to get the op-by-op graph"
            )
        states, w_hh = ctx.saved_tensors
        kind, reverse, ws = ctx.kind, ctx.reverse, ctx.ws._td
        cell = CELLS[kind]
        slots, n, hid = states.shape[1:]
        steps = states.shape[0] - 1
        width = cell.gates * hid
        be, dtype = states.backend, states.dtype
        g = g.contiguous()._td
        st = states._td
        sizes = ctx.sizes
        # a packed batch leaves the rows of finished sequences without gradient: start from zeros
        buf = alloc if sizes is None else _zeros
        dgi = buf((steps, n, width), dtype, be, states)
        # the LSTM's two pre-activation blocks share one gradient; the GRU's differ in the n gate
        dgh = dgi if kind == "lstm" else buf((steps, n, width), dtype, be, states)
        carry = filled((slots, n, hid), 0, dtype, be, like=states)  # ∂L/∂state from later steps
        ct, w = carry._td, w_hh._td
        _, read, _, init = sequence_slots(steps, reverse)
        if not (
            _whole_layer(be, sizes)
            and be.cell_sequence_backward(kind, g, st, w, ws, dgi._td, dgh._td, ct, reverse)
        ):
            _steps_backward(be, kind, g, states, w, ws, dgi._td, dgh._td, ct, sizes, reverse)
        # the initial state's slot holds a copy of h0 (and c0): its own gradient is theirs too
        be.zip("add", ct, g.select(0, init), ct)
        need = ctx.needs_input_grad
        dw = db = None
        if need[3] or need[4]:
            rows = dgh.reshape(steps * n, width)
            if need[3]:  # the states the steps read: slots 0..T-1, or 1..T in reverse
                h_prev = states[read : read + steps, 0].reshape(steps * n, hid)
                dw = rows.transpose(0, 1) @ h_prev
            if need[4]:
                db = rows.sum(0)
        dh0 = view_of(carry, ct.select(0, 0))
        dc0 = view_of(carry, ct.select(0, 1)) if slots == 2 else None
        return dgi, dh0, dc0, dw, db, None, None, None


def recurrent_layer(kind, gi, h0, c0, w_hh, b_hh=None, reverse=False, batch_sizes=None):
    """A GRU (``kind="gru"``) or LSTM (``"lstm"``) layer over a whole sequence as one autograd node.

    ``gi`` ``(T, N, G·H)`` holds every step's input projection ``x_t W_ihᵀ + b_ih`` (G = 3 gates
    r, z, n, or 4 gates i, f, g, o); ``h0`` (and ``c0`` for an LSTM, else ``None``) ``(N, H)``;
    ``w_hh`` ``(G·H, H)``; ``b_hh`` ``(G·H,)``. Returns ``states`` ``(T + 1, S, N, H)``: slot
    ``t + 1`` holds step ``t``'s ``h`` (and ``c``) and slot 0 the initial state, or, with
    ``reverse=True`` (the steps run from the last to the first), slot ``t`` holds step ``t``'s
    and slot ``T`` the initial state. The backend must declare ``"gru_cell"`` / ``"lstm_cell"``;
    ``torchlight.nn.GRU`` and ``LSTM`` use this when it does.

    ``batch_sizes`` runs a packed batch (a :class:`~torchlight.nn.utils.rnn.PackedSequence`'s,
    as Python ints, one per step, never increasing): only the first ``batch_sizes[t]`` sequences
    have step ``t``. A sequence's state is carried unchanged through the steps it lacks, so slot
    ``T`` (forward) holds each sequence's state after its last real step, and in reverse a
    sequence starts from ``h0`` at its own last step; what is written at the missing steps is
    that carried state, and no gradient reaches ``gi`` there.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.recurrent import recurrent_layer
    >>> s = recurrent_layer("gru", tl.zeros(5, 2, 3), tl.ones(2, 1), None, tl.zeros(3, 1))
    >>> s.shape  # (T + 1, 1, N, H)
    (6, 1, 2, 1)
    >>> round(s[5, 0, 0, 0].item(), 4)  # each step halves h: z = σ(0), n = tanh(0)
    0.0312
    """
    cell = CELLS.get(kind)
    if cell is None:
        raise ValueError(f"recurrent_layer: kind must be 'gru' or 'lstm', got {kind!r}")
    name = f"recurrent_layer({kind!r})"
    if gi.ndim != 3 or h0.ndim != 2:
        raise ShapeError(
            f"{name}: gi must be (T, N, G·H) and h0 (N, H), got shapes {gi.shape} and {h0.shape}"
        )
    n, hid = h0.shape
    width = cell.gates * hid
    want = {"gi": (gi.shape[0], n, width), "w_hh": (width, hid), "b_hh": (width,), "c0": (n, hid)}
    for what, t in (("gi", gi), ("w_hh", w_hh), ("b_hh", b_hh), ("c0", c0)):
        if t is None:
            continue
        if t.shape != want[what]:
            raise ShapeError(f"{name}: {what} must have shape {want[what]}, got {t.shape}")
        same_backend(h0, t)
        if t.dtype is not h0.dtype:
            raise TypeError(
                f"{name}: {what} is {t.dtype} but h0 is {h0.dtype}; cast with .to(dtype)"
            )
    if (c0 is None) != (kind == "gru"):
        raise ValueError(f"{name}: c0 is {'needed' if kind == 'lstm' else 'not used'} for {kind!r}")
    if not h0.dtype.is_floating_point or cell.capability not in h0.backend.capabilities:
        raise TypeError(
            f"{name}: needs a float dtype and a backend with the {cell.capability!r} capability "
            f"(got {h0.dtype} on {h0.backend.name!r}); use the composite cells "
            "(gru_cell_gates / lstm_cell_gates) step by step instead"
        )
    if batch_sizes is not None:
        sizes = tuple(int(b) for b in batch_sizes)
        steady = all(a >= b for a, b in zip(sizes, sizes[1:]))
        if (
            len(sizes) != gi.shape[0]
            or not steady
            or (sizes and not 0 <= sizes[-1] <= sizes[0] <= n)
        ):
            raise ValueError(
                f"{name}: batch_sizes must give, for each of the {gi.shape[0]} steps, how many of "
                f"the {n} sequences have it (never increasing, between 0 and {n}); got {list(sizes)}"
            )
        batch_sizes = sizes if not sizes or sizes[-1] < n else None  # all full: a plain batch
    return CellSequence.apply(gi, h0, c0, w_hh, b_hh, kind, reverse, batch_sizes)
