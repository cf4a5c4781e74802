"""``torchlight.nn``: modules, layers, losses and initialisers with PyTorch's names and semantics.

``import torchlight.nn as nn`` then ``nn.Linear``, ``nn.Conv2d``, ``nn.GRU``,
``nn.CrossEntropyLoss``, ``nn.functional`` (``F``), ``nn.init`` and ``nn.utils`` behave as
their PyTorch namesakes, including parameter names and default initialisations, so a PyTorch
state dict exported as numpy arrays loads with ``load_state_dict``.

``nn.save_state(module, path)`` / ``nn.load_state(module, path)`` (and ``nn.checkpoint``) are
resolved lazily from the ``checkpoint`` module.
"""

import importlib

from . import functional, init, modules, parallel, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
    Threshold,
)
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d
from .distance import CosineSimilarity, PairwiseDistance
from .embedding_bag import EmbeddingBag
from .fold import Fold, Unfold
from .linear import (
    Bilinear,
    Dropout,
    Dropout1d,
    Dropout2d,
    Embedding,
    Flatten,
    Identity,
    Linear,
    Unflatten,
)
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
from .margin_loss import (
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from .module import IncompatibleKeys, Module, StateDictError
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    LayerNorm,
    RMSNorm,
)
from .padding import (
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from .parallel import DataParallel
from .parameter import Buffer, Parameter
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .rnn import GRU, LSTM, RNN
from .rnn_cell import GRUCell, LSTMCell, RNNCell
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsampling import PixelShuffle, PixelUnshuffle, Upsample

__all__ = [
    "Module",
    "Parameter",
    "Buffer",
    "StateDictError",
    "IncompatibleKeys",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Identity",
    "Linear",
    "Flatten",
    "Unflatten",
    "Embedding",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "Upsample",
    "PixelShuffle",
    "PixelUnshuffle",
    "ZeroPad1d",
    "ZeroPad2d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "Fold",
    "Unfold",
    "EmbeddingBag",
    "Bilinear",
    "Softmax2d",
    "Conv1d",
    "Conv2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "LayerNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "GroupNorm",
    "RMSNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "GRUCell",
    "GRU",
    "LSTMCell",
    "LSTM",
    "RNNCell",
    "RNN",
    "MultiheadAttention",
    "Transformer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "ReLU",
    "LeakyReLU",
    "GELU",
    "SiLU",
    "Tanh",
    "Sigmoid",
    "Softplus",
    "Softmax",
    "LogSoftmax",
    "ELU",
    "SELU",
    "CELU",
    "Mish",
    "Hardtanh",
    "ReLU6",
    "Hardsigmoid",
    "Hardswish",
    "Softsign",
    "LogSigmoid",
    "GLU",
    "PReLU",
    "Softmin",
    "Threshold",
    "CosineSimilarity",
    "PairwiseDistance",
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "NLLLoss",
    "CrossEntropyLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "KLDivLoss",
    "MarginRankingLoss",
    "HingeEmbeddingLoss",
    "SoftMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "CosineEmbeddingLoss",
    "TripletMarginLoss",
    "GaussianNLLLoss",
    "PoissonNLLLoss",
    "DataParallel",
    "functional",
    "init",
    "utils",
    "parallel",
    "modules",
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
