"""``torchlight.nn.functional`` (``F``): the stateless half of every layer.

A module owns parameters and calls one of these functions with them; the functions own the
maths. The small ones (activations, ``linear``, ``dropout``, ...) are defined here; convolution,
pooling, normalization and the losses live next to their modules and are re-exported, so
``F.conv2d``, ``F.batch_norm`` and ``F.cross_entropy`` are spelled as in PyTorch.
"""

import math

import torchlight as tl
from torchlight import Tensor

from .conv import conv1d, conv2d
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .normalization import batch_norm
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)

__all__ = [
    "linear", "relu", "leaky_relu", "gelu", "silu", "tanh", "sigmoid", "softplus", "logsigmoid",
    "softmax", "log_softmax", "dropout", "embedding", "layer_norm", "batch_norm", "normalize",
    "one_hot", "pad", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "mse_loss", "l1_loss", "smooth_l1_loss",
    "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div",
]


def linear(input, weight, bias=None):
    """``y = x Wᵀ + b`` over the last dim; ``W`` is ``(out_features, in_features)``.

    Leading dims are flattened into one batch dim first, so the product is a single 2-D matmul
    (and its backward ``dW = gᵀ x`` one more) instead of a broadcast batched one.

    >>> F.linear(tl.tensor([[1.0, 2.0]]), tl.tensor([[1.0, 1.0], [0.0, 1.0]]), tl.tensor([0.5, 0.0]))
    tensor([[3.5, 2. ]])
    """
    if input.shape[-1] != weight.shape[-1]:
        raise tl.ShapeError(
            f"linear: input has {input.shape[-1]} features (shape {input.shape}), the weight expects "
            f"{weight.shape[-1]} (weight shape {weight.shape})"
        )
    if input.ndim > 2:
        lead = input.shape[:-1]
        y = input.reshape(-1, input.shape[-1]) @ weight.T
        y = y.reshape(lead + (weight.shape[0],))
    else:
        y = input @ weight.T
    return y if bias is None else y + bias


def relu(input, inplace=False):
    r"""Elementwise :math:`\max(x, 0)`; the function behind :class:`~torchlight.nn.ReLU`
    (``inplace`` is accepted and ignored).

    >>> F.relu(tl.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """
    return input.relu()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` for ``x > 0``, ``negative_slope · x`` otherwise.

    >>> F.leaky_relu(tl.tensor([-2.0, 3.0]), 0.1)
    tensor([-0.2,  3. ])
    """
    return input.leaky_relu(negative_slope)


def gelu(input, approximate="none"):
    """``x Φ(x)`` exactly, or ``0.5 x (1 + tanh(sqrt(2/π)(x + 0.044715 x³)))`` with ``'tanh'``.

    >>> F.gelu(tl.tensor([1.0])), F.gelu(tl.tensor([1.0]), approximate="tanh")
    (tensor([0.8413]), tensor([0.8412]))
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return input.gelu(approximate)


def silu(input, inplace=False):
    """``x σ(x)`` (a.k.a. swish).

    >>> F.silu(tl.tensor([1.0]))
    tensor([0.7311])
    """
    return input.silu()


def tanh(input):
    r"""Elementwise :math:`\tanh x`; the function behind :class:`~torchlight.nn.Tanh`.

    >>> F.tanh(tl.tensor([0.0]))
    tensor([0.])
    """
    return input.tanh()


def sigmoid(input):
    """Elementwise :math:`1/(1 + e^{-x})`; the function behind :class:`~torchlight.nn.Sigmoid`.

    >>> F.sigmoid(tl.tensor([0.0]))
    tensor([0.5])
    """
    return input.sigmoid()


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(β x)) / β``, and ``x`` itself where ``β x > threshold`` (there the two agree
    to float precision and the linear form cannot overflow).

    The backend's raw softplus kernel is already stable (``max(x, 0) + log1p(exp(-|x|))``); it is
    reached through ``Tensor.softplus(threshold=None)`` because ``Tensor.softplus``'s own
    threshold branch is inverted in torchlight-tensor 0.1.0 (it returns ``x`` *below* the
    threshold).

    >>> F.softplus(tl.tensor([0.0, 100.0]))
    tensor([  0.6931, 100.    ])
    """
    soft = input.softplus(1.0, None) if beta == 1 else (input * beta).softplus(1.0, None) / beta
    if threshold is None:
        return soft
    return tl.where(input * beta > threshold, input, soft)


def logsigmoid(input):
    """``log σ(x) = -softplus(-x)``, stable for large ``|x|``.

    >>> F.logsigmoid(tl.tensor([0.0, -200.0]))
    tensor([  -0.6931, -200.    ])
    """
    return -softplus(-input, threshold=None)


def _implicit_dim(ndim):
    # PyTorch's legacy choice when dim is omitted.
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None):
    r"""Softmax along ``dim``: :math:`e^{x_i}/\sum_j e^{x_j}` (see :func:`torchlight.softmax`).
    ``dim=None`` uses PyTorch's legacy implicit choice (0 for 0-, 1- and 3-d input, else 1), which
    is rarely the dimension you mean: pass ``dim``.

    >>> F.softmax(tl.tensor([[1.0, 1.0]]), dim=1)
    tensor([[0.5, 0.5]])
    """
    return input.softmax(_implicit_dim(input.ndim) if dim is None else dim)


def log_softmax(input, dim=None):
    r""":math:`x_i - \log\sum_j e^{x_j}` along ``dim``, computed stably (see
    :func:`torchlight.log_softmax`); ``dim=None`` as in :func:`softmax`.

    >>> F.log_softmax(tl.tensor([[0.0, 0.0]]), dim=1)
    tensor([[-0.6931, -0.6931]])
    """
    return input.log_softmax(_implicit_dim(input.ndim) if dim is None else dim)


def dropout(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero each element with probability ``p`` and scale the survivors by ``1/(1-p)``, so the
    expectation is unchanged (inverted dropout); the identity when not training.

    >>> F.dropout(tl.ones(4), p=0.5, training=False)
    tensor([1., 1., 1., 1.])
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = tl.rand(*input.shape, dtype=input.dtype, device=input.device, generator=generator) >= p
    return input * keep.to(input.dtype) * (1.0 / (1.0 - p))


def embedding(input, weight, padding_idx=None, max_norm=None):
    """Rows of ``weight`` picked by the int64 ``input``; the ``padding_idx`` row gets no gradient.

    >>> F.embedding(tl.tensor([2, 0]), tl.tensor([[0.0], [1.0], [2.0]]))
    tensor([[2.],
            [0.]])
    """
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm is not supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return tl.embedding(input, weight, padding_idx)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims (the backend's fused kernel when it
    has one): ``y = (x - μ) / sqrt(σ² + eps) · w + b`` with the biased variance.

    >>> F.layer_norm(tl.tensor([[1.0, 2.0, 3.0]]), (3,))
    tensor([[-1.2247,  0.    ,  1.2247]])
    """
    return tl.layer_norm(input, normalized_shape, weight, bias, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``x / max(‖x‖_p, eps)`` along ``dim``.

    >>> F.normalize(tl.tensor([[3.0, 4.0]]), dim=1)
    tensor([[0.6, 0.8]])
    """
    if p == 2:
        norm = (input * input).sum(dim, keepdim=True).sqrt()
    elif p == 1:
        norm = input.abs().sum(dim, keepdim=True)
    elif p == math.inf:
        norm = input.abs().amax(dim, keepdim=True)
    else:
        norm = (input.abs() ** p).sum(dim, keepdim=True) ** (1.0 / p)
    return input / norm.clamp(min=eps)


def one_hot(tensor, num_classes=-1):
    """int64 ``(..., num_classes)`` with a 1 at each index (``num_classes=-1``: max + 1).

    >>> F.one_hot(tl.tensor([0, 2]), num_classes=3)
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    if not isinstance(tensor, Tensor) or tensor.dtype is not tl.int64:
        raise tl.DTypeError("one_hot is only applicable to int64 index tensors")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    idx = tensor.unsqueeze(-1)
    if tensor.numel() and (int(tensor.min().item()) < 0 or int(tensor.max().item()) >= num_classes):
        raise tl.TensorIndexError(f"one_hot: class values must be in [0, {num_classes})")
    classes = tl.arange(num_classes, device=tensor.device)
    return (idx == classes).to(tl.int64)


def pad(input, pad, mode="constant", value=0.0):
    """PyTorch's ``F.pad``: ``(left, right)`` pairs starting from the last dimension.

    Only ``mode="constant"`` is supported.

    >>> F.pad(tl.ones(1, 2), (1, 1), value=0.5)
    tensor([[0.5, 1. , 1. , 0.5]])
    """
    return tl.pad(input, pad, mode=mode, value=value)
