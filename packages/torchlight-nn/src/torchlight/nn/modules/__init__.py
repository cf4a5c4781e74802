"""``torchlight.nn.modules``: the import paths of ``torch.nn.modules`` for programs that use them.

Every class here is the one ``torchlight.nn`` exports; the submodules (``module``, ``linear``,
``activation``, ``container``, ``conv``, ``loss``, ``normalization``, ``batchnorm``, ``pooling``,
``rnn``, ``sparse``, ``dropout``, ``flatten``, ``distance``, ``transformer``, ``upsampling``,
``pixelshuffle``, ``padding``, ``fold``, ``instancenorm``) mirror PyTorch's file layout.

>>> from torchlight.nn.modules.linear import Linear
>>> Linear is nn.Linear
True
"""

from . import (
    activation,
    batchnorm,
    container,
    conv,
    distance,
    dropout,
    flatten,
    linear,
    loss,
    module,
    normalization,
    pooling,
    rnn,
    sparse,
    transformer,
)
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
    MultiheadAttention,
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
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import Dropout, Dropout1d, Dropout2d
from .flatten import Flatten, Unflatten
from .fold import Fold, Unfold
from .instancenorm import InstanceNorm1d, InstanceNorm2d
from .linear import Bilinear, Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from .module import Module
from .normalization import GroupNorm, LayerNorm, RMSNorm
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
from .pixelshuffle import PixelShuffle, PixelUnshuffle
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
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .sparse import Embedding, EmbeddingBag
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsampling import Upsample

__all__ = [
    "Bilinear", "Softmax2d",
    "EmbeddingBag",
    "InstanceNorm1d", "InstanceNorm2d", "instancenorm",
    "CircularPad1d", "CircularPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Fold", "Unfold", "fold",
    "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
    "ConvTranspose1d", "ConvTranspose2d", "Dropout1d", "Dropout2d", "ConstantPad1d", "ConstantPad2d", "ZeroPad1d",
    "ZeroPad2d", "PixelShuffle", "PixelUnshuffle", "Upsample", "padding", "pixelshuffle", "upsampling",
    "Module", "Identity", "Linear", "CELU", "ELU", "GELU", "GLU", "SELU", "Hardsigmoid", "Hardswish",
    "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU6", "Sigmoid", "SiLU",
    "Softmax", "Softmin", "Softplus", "Softsign", "Tanh", "Threshold", "MultiheadAttention", "ModuleDict",
    "ModuleList", "ParameterDict", "ParameterList", "Sequential", "Conv1d", "Conv2d", "BCELoss",
    "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss",
    "SmoothL1Loss", "GroupNorm", "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d", "GRU", "LSTM", "RNN", "GRUCell",
    "LSTMCell", "RNNCell", "Embedding", "Dropout", "Flatten", "Unflatten", "CosineSimilarity",
    "PairwiseDistance", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer", "activation", "batchnorm", "container", "conv", "distance", "dropout",
    "flatten", "linear", "loss", "module", "normalization", "pooling", "rnn", "sparse", "transformer",
]
