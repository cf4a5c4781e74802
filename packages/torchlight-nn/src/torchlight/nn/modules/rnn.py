"""``torchlight.nn.modules.rnn``: the import path of ``torch.nn.modules.rnn`` (the same classes as
``torchlight.nn``)."""

from ..rnn import GRU, LSTM, RNN
from ..rnn_cell import GRUCell, LSTMCell, RNNCell

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]
