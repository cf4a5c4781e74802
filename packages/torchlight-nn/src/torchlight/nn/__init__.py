"""``torchlight.nn``: modules, layers, losses and initialisers with PyTorch's names and semantics.

``import torchlight.nn as nn`` then ``nn.Linear``, ``nn.Conv2d``, ``nn.GRU``,
``nn.CrossEntropyLoss``, ``nn.functional`` (``F``), ``nn.init`` and ``nn.utils`` behave as
their PyTorch namesakes, including parameter names and default initialisations, so a PyTorch
state dict exported as numpy arrays loads with ``load_state_dict``.

``nn.save_state(module, path)`` / ``nn.load_state(module, path)`` (and ``nn.checkpoint``) are
resolved lazily from the ``checkpoint`` module.
"""

import importlib

from . import functional, init, utils
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .linear import Dropout, Embedding, Flatten, Identity, Linear, Unflatten
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import IncompatibleKeys, Module, StateDictError
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .parameter import Buffer, Parameter
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "Module", "Parameter", "Buffer", "StateDictError", "IncompatibleKeys",
    "Sequential", "ModuleList", "ModuleDict",
    "Identity", "Linear", "Flatten", "Unflatten", "Embedding", "Dropout",
    "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
    "GRUCell", "GRU", "LSTMCell", "LSTM", "RNNCell", "RNN",
    "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerEncoderLayer",
    "TransformerDecoder", "TransformerDecoderLayer",
    "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softplus", "Softmax", "LogSoftmax",
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss", "BCELoss",
    "BCEWithLogitsLoss", "KLDivLoss",
    "functional", "init", "utils",
]

_LAZY = {"checkpoint": None, "save_state": "save_state", "load_state": "load_state"}


def __getattr__(name):
    # checkpoint.py is imported on first use: it is optional at import time and keeps
    # ``import torchlight.nn`` light.
    if name in _LAZY:
        mod = importlib.import_module(".checkpoint", __name__)
        value = mod if _LAZY[name] is None else getattr(mod, _LAZY[name])
        globals()[name] = value
        return value
    raise AttributeError(f"module 'torchlight.nn' has no attribute {name!r}")
