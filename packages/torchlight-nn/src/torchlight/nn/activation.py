"""Activation functions as modules (each one a thin wrapper over ``torchlight.nn.functional``,
where each formula is written once).

``ReLU``: ``max(x, 0)``; ``LeakyReLU(α)``: ``x`` if ``x > 0`` else ``αx``; ``GELU``: ``x Φ(x)``
(``approximate='tanh'``: ``0.5x(1 + tanh(sqrt(2/π)(x + 0.044715x³)))``); ``SiLU``: ``x σ(x)``;
``Tanh``; ``Sigmoid``: ``1/(1 + e^{-x})``; ``Softplus(β, threshold)``: ``log(1 + e^{βx})/β``
(linear above the threshold); ``Softmax(dim)``: ``e^{x_i} / Σ_j e^{x_j}``; ``LogSoftmax(dim)``.

``inplace=`` is accepted for source compatibility with PyTorch and ignored: torchlight does not
modify autograd inputs in place.
"""

import torchlight as tl

from . import functional as F
from .module import Module
from .parameter import Parameter

__all__ = [
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
    "Softmax2d",
]


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


class ELU(Module):
    """``ELU(alpha=1.0, inplace=False)``: :func:`~torchlight.nn.functional.elu`, elementwise.

    >>> nn.ELU()(tl.tensor([-1.0, 2.0])).tolist()
    [-0.6321206092834473, 2.0]
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class SELU(Module):
    """``SELU(inplace=False)``: :func:`~torchlight.nn.functional.selu`.

    >>> round(nn.SELU()(tl.tensor([1.0])).item(), 4)
    1.0507
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input)


class CELU(Module):
    """``CELU(alpha=1.0, inplace=False)``: :func:`~torchlight.nn.functional.celu`.

    >>> round(nn.CELU(2.0)(tl.tensor([-1.0])).item(), 4)
    -0.7869
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class Mish(Module):
    """``Mish(inplace=False)``: ``x · tanh(softplus(x))``.

    >>> round(nn.Mish()(tl.tensor([1.0])).item(), 4)
    0.8651
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input)


class Hardtanh(Module):
    """``Hardtanh(min_val=-1.0, max_val=1.0, inplace=False)``: clamp to ``[min_val, max_val]``.

    >>> nn.Hardtanh()(tl.tensor([-3.0, 0.5])).tolist()
    [-1.0, 0.5]
    """

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(
                f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})"
            )
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Hardtanh):
    """``ReLU6(inplace=False)``: ``min(max(x, 0), 6)``.

    >>> nn.ReLU6()(tl.tensor([-1.0, 9.0])).tolist()
    [0.0, 6.0]
    """

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)


class Hardsigmoid(Module):
    """``Hardsigmoid(inplace=False)``: ``relu6(x + 3) / 6``.

    >>> nn.Hardsigmoid()(tl.tensor([0.0])).tolist()
    [0.5]
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input)


class Hardswish(Module):
    """``Hardswish(inplace=False)``: ``x · relu6(x + 3) / 6``.

    >>> nn.Hardswish()(tl.tensor([4.0])).tolist()
    [4.0]
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input)


class Softsign(Module):
    """``Softsign()``: ``x / (1 + |x|)``.

    >>> nn.Softsign()(tl.tensor([1.0])).tolist()
    [0.5]
    """

    def forward(self, input):
        return F.softsign(input)


class LogSigmoid(Module):
    """``LogSigmoid()``: ``log σ(x)``, stable for large ``|x|``.

    >>> round(nn.LogSigmoid()(tl.tensor([0.0])).item(), 4)
    -0.6931
    """

    def forward(self, input):
        return F.logsigmoid(input)


class GLU(Module):
    """``GLU(dim=-1)``: ``a · σ(b)`` for the two halves ``a, b`` of ``dim``.

    >>> nn.GLU()(tl.randn(2, 6)).shape
    (2, 3)
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """``PReLU(num_parameters=1, init=0.25)``: ``max(0, x) + a · min(0, x)`` with a learnt
    ``weight`` ``a`` (one slope, or one per channel of dim 1).

    >>> nn.PReLU()(tl.tensor([-4.0, 1.0])).tolist()
    [-1.0, 1.0]
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(tl.full((num_parameters,), init, dtype=dtype, device=device))

    def reset_parameters(self):
        """Set every slope back to ``init`` (0.25 by default)."""
        with tl.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softmin(Module):
    """``Softmin(dim=None)``: ``softmax(-x)`` along ``dim``.

    >>> [round(v, 4) for v in nn.Softmin(0)(tl.tensor([0.0, 1.0])).tolist()]
    [0.7311, 0.2689]
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Threshold(Module):
    """``Threshold(threshold, value, inplace=False)``: ``x`` where ``x > threshold``, else ``value``.

    >>> nn.Threshold(1.0, -1.0)(tl.tensor([0.5, 2.0])).tolist()
    [-1.0, 2.0]
    """

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}"


class Softmax2d(Module):
    """``Softmax2d()``: softmax over the channels (dim −3) at every position of ``(N, C, H, W)``
    or ``(C, H, W)`` input.

    >>> nn.Softmax2d()(tl.zeros(1, 4, 2, 2))[0, :, 0, 0].tolist()
    [0.25, 0.25, 0.25, 0.25]
    """

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise tl.ShapeError(
                f"Softmax2d: expected input of 3 or 4 dimensions, got shape {input.shape}"
            )
        return F.softmax(input, -3)
