"""Recurrent cells, one time step each: ``RNNCell``, ``GRUCell``, ``LSTMCell`` and their functional
forms, with PyTorch's parameters and equations.

Elman RNN (``weight_ih: (H, I)``, ``weight_hh: (H, H)``, ``act`` = tanh or relu)::

    h' = act(W_ih x + b_ih + W_hh h + b_hh)

GRU (gates stacked in the order r, z, n in ``weight_ih: (3H, I)`` and ``weight_hh: (3H, H)``)::

    r = σ(W_ir x + b_ir + W_hr h + b_hr)
    z = σ(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
    h' = (1 - z) ⊙ n + z ⊙ h

LSTM (gates i, f, g, o in ``weight_ih: (4H, I)``, ``weight_hh: (4H, H)``)::

    i, f, g, o = σ(·), σ(·), tanh(·), σ(·)   of   W_i* x + b_i* + W_h* h + b_h*
    c' = f ⊙ c + i ⊙ g
    h' = o ⊙ tanh(c')

Every weight and bias starts as ``U(-1/sqrt(H), 1/sqrt(H))`` (PyTorch's default). The step
helpers (``_gru_step``, ``_lstm_step``, ``_rnn_step``) take the input projection
``x W_ihᵀ + b_ih`` already computed, so the sequence modules of :mod:`torchlight.nn.rnn` project a
whole sequence in one matmul and step only the recurrent part.
"""

import math

import torchlight as tl
from torchlight.tensor.functions.recurrent import gru_cell_gates, lstm_cell_gates

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = [
    "RNNCell",
    "GRUCell",
    "LSTMCell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "gru_cell",
    "lstm_cell",
]


def _gru_step(gi, h, w_hh, b_hh):
    """One GRU step given the input projection ``gi = x W_ihᵀ + b_ih`` (``(N, 3H)``)."""
    return gru_cell_gates(gi, F.linear(h, w_hh, b_hh), h)


def _rnn_step(gi, h, w_hh, b_hh, nonlinearity):
    """One Elman step given ``gi = x W_ihᵀ + b_ih`` (``(N, H)``)."""
    pre = gi + h @ w_hh.T
    if b_hh is not None:
        pre = pre + b_hh
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()


def _check_nonlinearity(nonlinearity):
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
    return nonlinearity


def _lstm_step(gi, h, c, w_hh, b_hh):
    """One LSTM step given ``gi = x W_ihᵀ + b_ih`` (``(N, 4H)``); returns ``(h', c')``."""
    return lstm_cell_gates(gi, F.linear(h, w_hh, b_hh), c)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step ``tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)``: ``input (N, I)``, ``hx (N, H)`` → ``(N, H)``.

    >>> from torchlight.nn.rnn_cell import rnn_tanh_cell
    >>> rnn_tanh_cell(tl.zeros(2, 3), tl.zeros(2, 4), tl.ones(4, 3), tl.ones(4, 4)).tolist()
    [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    """
    return _rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, "tanh")


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step with ReLU: ``relu(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)``; shapes as :func:`rnn_tanh_cell`.

    >>> from torchlight.nn.rnn_cell import rnn_relu_cell
    >>> rnn_relu_cell(tl.ones(1, 2), tl.zeros(1, 1), -tl.ones(1, 2), tl.ones(1, 1)).tolist()
    [[0.0]]
    """
    return _rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, "relu")


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    r"""One GRU step (the function behind :class:`~torchlight.nn.GRUCell`), PyTorch's equations:

    .. math::
       r &= \sigma(W_{ir}x + b_{ir} + W_{hr}h + b_{hr}) \\
       z &= \sigma(W_{iz}x + b_{iz} + W_{hz}h + b_{hz}) \\
       n &= \tanh(W_{in}x + b_{in} + r \odot (W_{hn}h + b_{hn})) \\
       h' &= (1 - z) \odot n + z \odot h

    Shapes: ``input`` ``(N, in)``, ``hx`` ``(N, H)``, ``w_ih`` ``(3H, in)``, ``w_hh`` ``(3H, H)``,
    biases ``(3H,)``, gates stacked in the order r, z, n; returns ``h'`` ``(N, H)``.

    >>> H = 4
    >>> h = nn.rnn_cell.gru_cell(tl.zeros(2, 3), tl.zeros(2, H), tl.zeros(3 * H, 3), tl.zeros(3 * H, H))
    >>> h.shape
    (2, 4)
    """
    return _gru_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    r"""One LSTM step (the function behind :class:`~torchlight.nn.LSTMCell`):

    .. math::
       i, f, g, o &= \sigma(\cdot), \sigma(\cdot), \tanh(\cdot), \sigma(\cdot)
       \text{ of the four chunks of } W_{ih}x + b_{ih} + W_{hh}h + b_{hh} \\
       c' &= f \odot c + i \odot g, \qquad h' = o \odot \tanh(c')

    Shapes: ``input`` ``(N, in)``, ``hx = (h, c)`` each ``(N, H)``, ``w_ih`` ``(4H, in)``, ``w_hh``
    ``(4H, H)``, biases ``(4H,)``; returns ``(h', c')``.

    >>> h, c = nn.rnn_cell.lstm_cell(tl.zeros(2, 3), (tl.zeros(2, 5), tl.zeros(2, 5)),
    ...                         tl.zeros(20, 3), tl.zeros(20, 5))
    >>> h.shape, c.shape
    ((2, 5), (2, 5))
    """
    h, c = hx
    return _lstm_step(F.linear(input, w_ih, b_ih), h, c, w_hh, b_hh)


def _uniform_reset(module):
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class _CellBase(Module):
    _gates = 1

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = self._gates * hidden_size
        self.weight_ih = Parameter(tl.empty(g, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(tl.empty(g, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(tl.empty(g, dtype=dtype, device=device))
            self.bias_hh = Parameter(tl.empty(g, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_reset(self)

    def _prepare(self, input, hx):
        if input.ndim not in (1, 2):
            raise tl.ShapeError(
                f"{type(self).__name__}: expected 1-D or 2-D input, got shape {input.shape}"
            )
        if input.shape[-1] != self.input_size:
            raise tl.ShapeError(
                f"{type(self).__name__}: input has {input.shape[-1]} features, expected {self.input_size}"
            )
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        zeros = tl.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        return x, batched, zeros

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(_CellBase):
    """``RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')``:
    ``h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (``h`` defaults to 0).

    >>> nn.RNNCell(3, 5)(tl.randn(2, 3)).shape
    (2, 5)
    """

    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        self.nonlinearity = _check_nonlinearity(nonlinearity)
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        x, batched, zeros = self._prepare(input, hx)
        h = zeros if hx is None else (hx if batched else hx.unsqueeze(0))
        out = _rnn_step(
            F.linear(x, self.weight_ih, self.bias_ih),
            h,
            self.weight_hh,
            self.bias_hh,
            self.nonlinearity,
        )
        return out if batched else out.squeeze(0)


class GRUCell(_CellBase):
    """``GRUCell(input_size, hidden_size, bias=True)``: ``h' = cell(x, h)`` (h defaults to 0).

    One step of :func:`~torchlight.nn.rnn_cell.gru_cell` with learned weights.

    Shape: ``x`` ``(N, input_size)`` (or ``(input_size,)``), ``h`` ``(N, hidden_size)``; returns
    ``h'`` ``(N, hidden_size)``.

    >>> cell = nn.GRUCell(3, 5)
    >>> cell(tl.randn(2, 3)).shape
    (2, 5)
    """

    _gates = 3

    def forward(self, input, hx=None):
        x, batched, zeros = self._prepare(input, hx)
        h = zeros if hx is None else (hx if batched else hx.unsqueeze(0))
        out = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(_CellBase):
    """``LSTMCell(input_size, hidden_size, bias=True)``: ``(h', c') = cell(x, (h, c))``.

    One step of :func:`~torchlight.nn.rnn_cell.lstm_cell` with learned weights.

    >>> h, c = nn.LSTMCell(3, 5)(tl.randn(2, 3))
    >>> h.shape, c.shape
    ((2, 5), (2, 5))
    """

    _gates = 4

    def forward(self, input, hx=None):
        x, batched, zeros = self._prepare(input, hx)
        if hx is None:
            h, c = zeros, zeros
        else:
            h, c = hx if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))
