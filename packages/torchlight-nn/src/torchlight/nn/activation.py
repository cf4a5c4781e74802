"""Activation functions as modules (each one a thin wrapper over ``torchlight.nn.functional``).

``ReLU``: ``max(x, 0)``; ``LeakyReLU(α)``: ``x`` if ``x > 0`` else ``αx``; ``GELU``: ``x Φ(x)``
(``approximate='tanh'``: ``0.5x(1 + tanh(sqrt(2/π)(x + 0.044715x³)))``); ``SiLU``: ``x σ(x)``;
``Tanh``; ``Sigmoid``: ``1/(1 + e^{-x})``; ``Softplus(β, threshold)``: ``log(1 + e^{βx})/β``
(linear above the threshold); ``Softmax(dim)``: ``e^{x_i} / Σ_j e^{x_j}``; ``LogSoftmax(dim)``.

``inplace=`` is accepted for source compatibility with PyTorch and ignored: torchlight does not
modify autograd inputs in place.
"""

from . import functional as F
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softplus", "Softmax", "LogSoftmax"]


class ReLU(Module):
    r"""Applies :math:`\operatorname{ReLU}(x) = \max(x, 0)` elementwise (:func:`F.relu <torchlight.nn.functional.relu>`).

    Shape: any; the output has the input's shape. ``inplace`` is accepted for PyTorch compatibility
    (the result is always a new tensor).

    >>> nn.ReLU()(tl.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input)


class LeakyReLU(Module):
    r"""Applies :math:`x` for :math:`x > 0` and :math:`\text{negative\_slope}\cdot x` otherwise,
    elementwise: a ReLU that keeps a small gradient for negative inputs.

    Shape: any, output as input.

    >>> nn.LeakyReLU(0.1)(tl.tensor([-1.0, 2.0]))
    tensor([-0.1,  2. ])
    """
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class GELU(Module):
    r"""Applies the Gaussian error linear unit :math:`x\,\Phi(x)` elementwise (``approximate="tanh"``
    for GPT-2's tanh form); see :func:`torchlight.nn.functional.gelu`.

    Shape: any, output as input.

    >>> nn.GELU()(tl.tensor([0.0, 1.0]))
    tensor([0.    , 0.8413])
    """
    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    r"""Applies SiLU (swish) :math:`x\,\sigma(x)` elementwise.

    Shape: any, output as input.

    >>> nn.SiLU()(tl.tensor([0.0, 1.0]))
    tensor([0.    , 0.7311])
    """
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input)


class Tanh(Module):
    r"""Applies :math:`\tanh x` elementwise (outputs in :math:`(-1, 1)`).

    Shape: any, output as input.

    >>> nn.Tanh()(tl.tensor([0.0]))
    tensor([0.])
    """
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """Applies the logistic sigmoid :math:`1/(1 + e^{-x})` elementwise (outputs in :math:`(0, 1)`).

    Shape: any, output as input.

    >>> nn.Sigmoid()(tl.tensor([0.0]))
    tensor([0.5])
    """
    def forward(self, input):
        return F.sigmoid(input)


class Softplus(Module):
    r"""Applies :math:`\frac1\beta\log(1 + e^{\beta x})` elementwise, the identity where
    :math:`\beta x` > ``threshold`` (a smooth, always-positive ReLU).

    Shape: any, output as input.

    >>> nn.Softplus()(tl.tensor([0.0]))
    tensor([0.6931])
    """
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    r"""Applies :math:`e^{x_i}/\sum_j e^{x_j}` along ``dim``, so each slice is a probability
    distribution. ``dim=None`` picks PyTorch's legacy default (0 for 0-, 1- and 3-d inputs, else 1);
    pass it explicitly.

    Shape: any, output as input.

    >>> nn.Softmax(dim=-1)(tl.tensor([[0.0, 0.0]]))
    tensor([[0.5, 0.5]])
    """
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    r"""Applies :math:`x_i - \log\sum_j e^{x_j}` along ``dim`` (the log of :class:`Softmax`, computed
    stably); pair it with :class:`NLLLoss`, or use :class:`CrossEntropyLoss` on raw logits.

    Shape: any, output as input.

    >>> nn.LogSoftmax(dim=1)(tl.tensor([[0.0, 0.0]]))
    tensor([[-0.6931, -0.6931]])
    """
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
