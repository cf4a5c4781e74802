"""Recurrent layers over whole sequences: ``RNN``, ``GRU``, ``LSTM`` with PyTorch's parameters
(the one-step cells and their equations are in :mod:`torchlight.nn.rnn_cell`).

The multi-layer modules name their parameters ``weight_ih_l{k}``, ``weight_hh_l{k}``,
``bias_ih_l{k}``, ``bias_hh_l{k}`` (plus ``_reverse`` for the backward direction), so PyTorch
state dicts load; every weight and bias starts as ``U(-1/sqrt(H), 1/sqrt(H))``.

The sequence loop projects the whole input sequence through ``W_ih`` in one matmul before
stepping (only the ``W_hh h`` part depends on the previous step). When the backend offers the
fused GRU / LSTM cell, each direction of each layer is then a single autograd node over the whole
sequence (``torchlight.tensor.functions.recurrent.recurrent_layer``: the steps and their
backpropagation through time run on the backend), a packed batch included (each step runs on
the sequences that have it). Otherwise — an Elman ``RNN``, a backend without the cell, or while
``tl.jit`` records the ops for replay — backpropagation
through time is plain autograd over the unrolled steps, one fused cell (or the composite gate
arithmetic) per step.
"""

import torchlight as tl
from torchlight.jit import is_recording
from torchlight.tensor.functions.recurrent import layer_outputs, recurrent_layer

from . import functional as F
from .module import Module
from .parameter import Parameter
from .rnn_cell import (
    _check_nonlinearity,
    _gru_step,
    _lstm_step,
    _rnn_step,
    _uniform_reset,
    gru_cell,
    lstm_cell,
    rnn_relu_cell,
    rnn_tanh_cell,
)
from .utils.rnn import PackedSequence, pad_packed_sequence

__all__ = [
    "RNN",
    "GRU",
    "LSTM",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "gru_cell",
    "lstm_cell",
]


def _fused_layer(lstm, gi, h, c, w_hh, b_hh, reverse, sizes):
    """One direction of one layer as a single node (``recurrent_layer``): the output sequence
    ``(T, N, H)`` and the final ``h`` and ``c`` (``None`` for a GRU). ``sizes``: a packed
    batch's batch sizes, or ``None``."""
    states = recurrent_layer(
        "lstm" if lstm else "gru", gi, h, c if lstm else None, w_hh, b_hh, reverse, sizes
    )
    seq, last = layer_outputs(states, reverse)
    out = seq[:, 0]
    if lstm:  # h and c interleave in the buffer; PyTorch's output is contiguous (users .view it)
        out = out.contiguous()
    return out, last[0], (last[1] if lstm else None)


class _RNNBase(Module):
    _gates = 1
    _lstm = False

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if proj_size:
            raise NotImplementedError("proj_size is not supported")
        if not 0 <= dropout <= 1:
            raise ValueError(f"dropout should be a number in range [0, 1], got {dropout}")
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        dirs = 2 if bidirectional else 1
        g = self._gates * hidden_size
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                setattr(
                    self,
                    "weight_ih" + sfx,
                    Parameter(tl.empty(g, in_size, dtype=dtype, device=device)),
                )
                setattr(
                    self,
                    "weight_hh" + sfx,
                    Parameter(tl.empty(g, hidden_size, dtype=dtype, device=device)),
                )
                if bias:
                    setattr(
                        self, "bias_ih" + sfx, Parameter(tl.empty(g, dtype=dtype, device=device))
                    )
                    setattr(
                        self, "bias_hh" + sfx, Parameter(tl.empty(g, dtype=dtype, device=device))
                    )
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_reset(self)

    def flatten_parameters(self):
        """A no-op kept for PyTorch compatibility: there it packs the weights into one cuDNN
        buffer; here every step already reads the parameters directly.

        >>> nn.LSTM(4, 8).flatten_parameters()
        """

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        p = self._parameters
        return (
            p["weight_ih" + sfx],
            p["weight_hh" + sfx],
            p.get("bias_ih" + sfx),
            p.get("bias_hh" + sfx),
        )

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        return self._forward(input, hx)

    def _forward_packed(self, packed, hx):
        # Run time-major over the sorted, padded batch; steps past a sequence's end leave its
        # state unchanged, so h_n is each sequence's last real state, in both directions.
        padded, _ = pad_packed_sequence(packed._replace(unsorted_indices=None))
        sizes = [int(b) for b in packed.batch_sizes.tolist()]
        if hx is not None and packed.sorted_indices is not None:
            idx = packed.sorted_indices
            hx = (
                (hx[0].index_select(1, idx), hx[1].index_select(1, idx))
                if self._lstm
                else hx.index_select(1, idx)
            )
        out, state = self._forward(padded, hx, sizes=sizes, time_major=True)
        data = tl.cat([out[t, :bs] for t, bs in enumerate(sizes)], 0)
        if packed.unsorted_indices is not None:
            idx = packed.unsorted_indices
            state = (
                (state[0].index_select(1, idx), state[1].index_select(1, idx))
                if self._lstm
                else state.index_select(1, idx)
            )
        return PackedSequence(
            data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
        ), state

    def _forward(self, input, hx=None, sizes=None, time_major=False):
        name = type(self).__name__
        if input.ndim not in (2, 3):
            raise tl.ShapeError(
                f"{name}: expected 2-D (unbatched) or 3-D input, got shape {input.shape}"
            )
        if input.shape[-1] != self.input_size:
            raise tl.ShapeError(
                f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}"
            )
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first and not time_major:
            x = x.transpose(0, 1)  # work time-major: (T, N, I)
        steps, n = x.shape[0], x.shape[1]
        dirs = 2 if self.bidirectional else 1
        state_shape = (self.num_layers * dirs, n, self.hidden_size)
        if hx is None:
            zeros = tl.zeros(*state_shape, dtype=x.dtype, device=x.device)
            h0, c0 = zeros, zeros
        else:
            h0, c0 = hx if self._lstm else (hx, None)
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = None if c0 is None else c0.unsqueeze(1)
            for what, t in (("h0", h0), ("c0", c0)):
                if t is not None and t.shape != state_shape:
                    raise tl.ShapeError(
                        f"{name}: expected hidden size {state_shape} for {what}, got {t.shape}"
                    )
        h_n, c_n = [], []
        layer_in = x
        fused = (
            self._gates != 1
            and steps > 0
            and x.dtype.is_floating_point
            and ("lstm_cell" if self._lstm else "gru_cell") in x.backend.capabilities
            and not is_recording()
        )
        masks = None
        if sizes is not None and not fused:  # (T, N, 1): which sequences have step t
            lengths = [sum(bs > b for bs in sizes) for b in range(n)]  # sorted: longest first
            steps_col = tl.arange(steps, device=x.device).reshape(-1, 1, 1)
            masks = steps_col < tl.tensor(lengths, device=x.device).reshape(1, -1, 1)
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                gi = F.linear(
                    layer_in, w_ih, b_ih
                )  # (T, N, G·H): every step's input projection at once
                h = h0[layer * dirs + d]
                c = None if c0 is None else c0[layer * dirs + d]
                if fused:
                    out, h, c = _fused_layer(self._lstm, gi, h, c, w_hh, b_hh, d == 1, sizes)
                    outs.append(out)
                    h_n.append(h)
                    c_n.append(c)
                    continue
                seq = [None] * steps
                for t in range(steps) if d == 0 else reversed(range(steps)):
                    h_prev, c_prev = h, c
                    if self._lstm:
                        h, c = _lstm_step(gi[t], h, c, w_hh, b_hh)
                    elif self._gates == 3:
                        h = _gru_step(gi[t], h, w_hh, b_hh)
                    else:
                        h = _rnn_step(gi[t], h, w_hh, b_hh, self.nonlinearity)
                    if masks is not None:  # packed input: finished sequences keep their state
                        h = tl.where(masks[t], h, h_prev)
                        c = None if c is None else tl.where(masks[t], c, c_prev)
                    seq[t] = h
                outs.append(tl.stack(seq, 0))
                h_n.append(h)
                c_n.append(c)
            layer_in = outs[0] if dirs == 1 else tl.cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        output = layer_in
        h_n = tl.stack(h_n, 0)
        c_n = tl.stack(c_n, 0) if self._lstm else None
        if batched and self.batch_first and not time_major:
            output = output.transpose(0, 1)
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        return (output, (h_n, c_n)) if self._lstm else (output, h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    """``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0, bidirectional=False)``; ``forward(input, h0=None) -> (output, h_n)``, shapes as :class:`GRU`.

    >>> out, h = nn.RNN(3, 5, num_layers=2)(tl.randn(7, 2, 3))
    >>> out.shape, h.shape
    ((7, 2, 5), (2, 2, 5))
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        self.nonlinearity = _check_nonlinearity(nonlinearity)
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )


class GRU(_RNNBase):
    """``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0,
    bidirectional=False)``; ``forward(input, h0=None) -> (output, h_n)``.

    ``output``: ``(T, N, D·H)`` (``(N, T, D·H)`` with ``batch_first``), the last layer's hidden
    state at every step; ``h_n``: ``(num_layers·D, N, H)``, every layer's final state.

    >>> gru = nn.GRU(3, 5, num_layers=2, batch_first=True)
    >>> out, h_n = gru(tl.randn(4, 7, 3))
    >>> out.shape, h_n.shape
    ((4, 7, 5), (2, 4, 5))
    """

    _gates = 3


class LSTM(_RNNBase):
    """``LSTM(...)`` with GRU's arguments; ``forward(input, (h0, c0)=None) -> (output, (h_n, c_n))``.

    >>> out, (h_n, c_n) = nn.LSTM(3, 5)(tl.randn(7, 4, 3))
    >>> out.shape, h_n.shape, c_n.shape
    ((7, 4, 5), (1, 4, 5), (1, 4, 5))
    """

    _gates = 4
    _lstm = True
