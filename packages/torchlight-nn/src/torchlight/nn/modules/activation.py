"""``torchlight.nn.modules.activation``: the import path of ``torch.nn.modules.activation`` (the same classes as
``torchlight.nn``)."""

from ..activation import (
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
from ..attention import MultiheadAttention

__all__ = ["Softmax2d", "CELU", "ELU", "GELU", "GLU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU6", "Sigmoid", "SiLU", "Softmax", "Softmin", "Softplus", "Softsign", "Tanh", "Threshold", "MultiheadAttention"]
