"""``torchlight.nn.functional`` (``F``): the stateless half of every layer.

A module owns parameters and calls one of these functions with them; the functions own the
maths. The small ones (activations, ``linear``, ``dropout``, ...) are defined here; convolution,
pooling, normalization and the losses live next to their modules and are re-exported, so
``F.conv2d``, ``F.batch_norm`` and ``F.cross_entropy`` are spelled as in PyTorch.
"""

import math

import torchlight as tl
from torchlight import Tensor
from torchlight.tensor.extension import linear as _linear
from torchlight.tensor.functions.windows import unfold_windows

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
from .normalization import batch_norm, group_norm, instance_norm, rms_norm
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)

__all__ = [
    "linear",
    "relu",
    "leaky_relu",
    "gelu",
    "silu",
    "tanh",
    "sigmoid",
    "softplus",
    "logsigmoid",
    "softmax",
    "log_softmax",
    "dropout",
    "embedding",
    "layer_norm",
    "batch_norm",
    "normalize",
    "one_hot",
    "pad",
    "conv1d",
    "conv2d",
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "scaled_dot_product_attention",
    "elu",
    "selu",
    "celu",
    "mish",
    "hardtanh",
    "relu6",
    "hardsigmoid",
    "hardswish",
    "softsign",
    "glu",
    "prelu",
    "softmin",
    "threshold",
    "group_norm",
    "rms_norm",
    "dropout1d",
    "dropout2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "interpolate",
    "upsample",
    "pixel_shuffle",
    "pixel_unshuffle",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "cosine_embedding_loss",
    "triplet_margin_loss",
    "gaussian_nll_loss",
    "poisson_nll_loss",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "gumbel_softmax",
    "unfold",
    "fold",
    "instance_norm",
    "embedding_bag",
    "affine_grid",
    "bilinear",
    "grid_sample",
    "cosine_similarity",
    "pairwise_distance",
    "multi_head_attention_forward",
]


def linear(input, weight, bias=None):
    """``y = x Wᵀ + b`` over the last dim; ``W`` is ``(out_features, in_features)``.

    Leading dims are flattened into one batch dim first, so the product is a single 2-D matmul
    (and its backward ``dW = gᵀ x`` one more) instead of a broadcast batched one.

    >>> F.linear(tl.tensor([[1.0, 2.0]]), tl.tensor([[1.0, 1.0], [0.0, 1.0]]), tl.tensor([0.5, 0.0]))
    tensor([[3.5, 2. ]])
    """
    return _linear(input, weight, bias)  # it checks the shapes


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1ᵀ W_k x2 + b_k`` for ``x1 (*, in1)``, ``x2 (*, in2)``, ``W (out, in1, in2)``: one
    matmul ``x1 · W`` (as ``(in1, out·in2)``) then a product with ``x2`` summed over ``in2``.

    >>> F.bilinear(tl.ones(1, 2), tl.ones(1, 3), tl.ones(4, 2, 3)).tolist()
    [[6.0, 6.0, 6.0, 6.0]]
    """
    out, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2:
        raise tl.ShapeError(
            f"bilinear: inputs with {input1.shape[-1]} and {input2.shape[-1]} features do not match "
            f"the weight {tuple(weight.shape)}"
        )
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    t = (x1 @ weight.permute(1, 0, 2).reshape(in1, out * in2)).reshape(-1, out, in2)
    y = (t * input2.reshape(-1, 1, in2)).sum(-1).reshape(*lead, out)
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


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A differentiable sample from the categorical ``softmax(logits)`` (Jang et al.):
    ``softmax((logits + g) / tau)`` with Gumbel noise ``g = −log(−log u)``, ``u ~ U(0, 1)``. With
    ``hard=True`` the result is the one-hot of its argmax in the forward pass and the soft sample's
    gradient in the backward pass (straight-through: ``y_hard − y_soft.detach() + y_soft``).

    >>> y = F.gumbel_softmax(tl.zeros(4, 3), hard=True)
    >>> y.sum(-1).tolist(), sorted(set(y.flatten().tolist()))
    ([1.0, 1.0, 1.0, 1.0], [0.0, 1.0])
    """
    u = tl.rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -((u.clamp(min=eps)).log().neg().clamp(min=eps)).log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim).unsqueeze(dim if dim >= 0 else y_soft.ndim + dim)
    positions = tl.arange(y_soft.shape[dim], device=y_soft.device)
    shape = [1] * y_soft.ndim
    shape[dim] = -1
    y_hard = (positions.reshape(*shape) == index).to(y_soft.dtype)
    return y_hard - y_soft.detach() + y_soft


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: every ``kh×kw`` patch of ``(N, C, H, W)`` as a column of ``(N, C·kh·kw, L)``
    (``L`` patches, row-major; features channel-major, as PyTorch).

    >>> F.unfold(tl.arange(9.0).reshape(1, 1, 3, 3), 2).tolist()
    [[[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0], [3.0, 4.0, 6.0, 7.0], [4.0, 5.0, 7.0, 8.0]]]
    """
    from .conv import _tuple

    if input.ndim != 4:
        raise tl.ShapeError(f"unfold: expected a 4-D (N, C, H, W) input, got shape {input.shape}")
    kernel, dilation = _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation")
    padding, stride = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    x = tl.pad(input, [padding[1], padding[1], padding[0], padding[0]]) if any(padding) else input
    win = unfold_windows(x, kernel, stride, dilation)  # (N, C, oh, ow, kh, kw)
    n, c, oh, ow = win.shape[:4]
    return win.permute(0, 1, 4, 5, 2, 3).reshape(n, c * kernel[0] * kernel[1], oh * ow)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of :func:`unfold`: sums the columns of ``(N, C·kh·kw, L)`` back into
    ``(N, C, H, W)`` (overlapping patch entries add up). It is a transposed convolution of the
    columns with one-hot kernels, one group per channel.

    >>> x = tl.arange(9.0).reshape(1, 1, 3, 3)
    >>> F.fold(F.unfold(x, 2), (3, 3), 2)[0, 0].tolist()
    [[0.0, 2.0, 2.0], [6.0, 16.0, 10.0], [6.0, 14.0, 8.0]]
    """
    from .conv import _tuple
    from .conv_transpose import conv_transpose2d

    out_hw, kernel = _tuple(output_size, 2, "output_size"), _tuple(kernel_size, 2, "kernel_size")
    dilation, padding, stride = (
        _tuple(dilation, 2, "dilation"),
        _tuple(padding, 2, "padding"),
        _tuple(stride, 2, "stride"),
    )
    batched = input.ndim == 3
    cols = input if batched else input.unsqueeze(0)
    n, ck, length = cols.shape
    kk = kernel[0] * kernel[1]
    if ck % kk:
        raise tl.ShapeError(
            f"fold: expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ck} and kernel_size={kernel}"
        )
    blocks = [
        (out_hw[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
        for i in range(2)
    ]
    if blocks[0] * blocks[1] != length:
        raise tl.ShapeError(
            f"fold: {length} columns do not match the {blocks[0]}×{blocks[1]} patches of "
            f"output_size {out_hw}"
        )
    eye = tl.eye(kk, dtype=input.dtype, device=input.device).reshape(kk, 1, kernel[0], kernel[1])
    weight = eye.repeat(ck // kk, 1, 1, 1)  # (C·kk, 1, kh, kw): channel c's k-th column → offset k
    # rows/cols that unfold's windows never reached at the bottom/right (a stride remainder) come
    # back as output_padding, so the result has exactly output_size
    remainder = tuple(
        (out_hw[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) % stride[i]
        for i in range(2)
    )
    y = conv_transpose2d(
        cols.reshape(n, ck, blocks[0], blocks[1]),
        weight,
        None,
        stride,
        padding,
        remainder,
        ck // kk,
        dilation,
    )
    return y if batched else y.squeeze(0)


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
    return input * _survivor_scale(keep, p, input.dtype)


def _survivor_scale(keep, p, dtype):
    """``1/(1-p)`` where ``keep``, else 0: built outside the graph, so the input's gradient is one
    product (``g · mask``) and the forward one multiplication on the graph."""
    return keep.to(dtype) * (1.0 / (1.0 - p))  # not in place: a jit trace records no in-place op


def _channel_dropout(input, p, training, nd, name):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (nd + 1, nd + 2):
        raise tl.ShapeError(
            f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D input, got shape {input.shape}"
        )
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    # one keep/drop draw per (sample, channel), broadcast over the spatial dims
    mask_shape = tuple(input.shape[: input.ndim - nd]) + (1,) * nd
    keep = tl.rand(*mask_shape, dtype=input.dtype, device=input.device) >= p
    return input * _survivor_scale(keep, p, input.dtype)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, L)`` (or ``(C, L)``) with probability ``p``, scaling the
    rest by ``1/(1-p)``; the identity when not training.

    >>> F.dropout1d(tl.ones(2, 3, 4), 0.5, training=False).shape
    (2, 3, 4)
    """
    return _channel_dropout(input, p, training, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, H, W)`` (or ``(C, H, W)``) with probability ``p``
    (Tompson et al.'s spatial dropout), scaling the rest by ``1/(1-p)``.

    >>> y = F.dropout2d(tl.ones(1, 8, 2, 2), 0.5)
    >>> sorted(set(y.sum((2, 3)).tolist()[0])) in ([0.0, 8.0], [0.0], [8.0])
    True
    """
    return _channel_dropout(input, p, training, 2, "dropout2d")


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` picked by the int64 ``input``; the ``padding_idx`` row gets no gradient.

    With ``max_norm``, the looked-up rows whose ``norm_type``-norm exceeds it are first scaled
    in place (outside autograd) by ``max_norm / (norm + 1e-7)``, as in PyTorch.

    >>> w = tl.tensor([[3.0, 4.0], [0.3, 0.4]])
    >>> F.embedding(tl.tensor([0]), w, max_norm=1.0).tolist(), w[1].tolist()
    ([[0.6000000238418579, 0.800000011920929]], [0.30000001192092896, 0.4000000059604645])
    """
    if scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding: scale_grad_by_freq and sparse gradients are not supported"
        )
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return tl.embedding(input, weight, padding_idx)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    import numpy as np

    with tl.no_grad():
        used = np.zeros(weight.shape[0], dtype=bool)
        used[np.unique(input.detach().numpy())] = True
        w = weight.detach()
        if norm_type == math.inf:
            norms = w.abs().amax(1)
        else:
            norms = (w.abs() ** norm_type).sum(1) ** (1.0 / norm_type)
        shrink = tl.tensor(used, device=w.device) * (norms > max_norm)
        scale = tl.where(shrink, max_norm / (norms + 1e-7), 1.0).to(w.dtype)
        w.mul_(scale.unsqueeze(1))


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
    """PyTorch's ``F.pad``: ``(left, right)`` pairs starting from the last dimension; ``mode`` is
    ``'constant'`` (with ``value``), ``'reflect'``, ``'replicate'`` or ``'circular'``.

    >>> F.pad(tl.tensor([[1.0, 2.0]]), (1, 1), mode="replicate").tolist()
    [[1.0, 1.0, 2.0, 2.0]]
    """
    if mode == "constant":
        return tl.pad(input, pad, mode=mode, value=0.0 if value is None else value)
    from .padding import index_pad

    return index_pad(input, pad, mode)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _exp_minus_one_neg(input):
    # exp(min(x, 0)) - 1: the branch where() discards for x > 0 must stay finite, or its zero
    # gradient times exp(x) = inf would give NaN.
    return input.clamp(max=0.0).exp() - 1.0


def elu(input, alpha=1.0, inplace=False):
    """``x`` for ``x > 0``, ``α (eˣ − 1)`` otherwise.

    >>> F.elu(tl.tensor([-1.0, 2.0])).tolist()
    [-0.6321206092834473, 2.0]
    """
    return tl.where(input > 0, input, _exp_minus_one_neg(input) * alpha)


def selu(input, inplace=False):
    """``scale · elu(x, α)`` with Klambauer et al.'s ``α ≈ 1.6733``, ``scale ≈ 1.0507``.

    >>> round(F.selu(tl.tensor([1.0])).item(), 4)
    1.0507
    """
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, α (e^{x/α} − 1))``.

    >>> round(F.celu(tl.tensor([-1.0]), alpha=2.0).item(), 4)
    -0.7869
    """
    return tl.where(input > 0, input, _exp_minus_one_neg(input / alpha) * alpha)


def mish(input, inplace=False):
    """``x · tanh(softplus(x))`` (Misra, 2019).

    >>> round(F.mish(tl.tensor([1.0])).item(), 4)
    0.8651
    """
    return input * softplus(input).tanh()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``x`` clamped to ``[min_val, max_val]``.

    >>> F.hardtanh(tl.tensor([-3.0, 0.5, 2.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    return input.clamp(min_val, max_val)


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``.

    >>> F.relu6(tl.tensor([-1.0, 3.0, 9.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    return input.clamp(0.0, 6.0)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``: 0 below −3, 1 above 3, linear between.

    >>> F.hardsigmoid(tl.tensor([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    return (input + 3.0).clamp(0.0, 6.0) / 6.0


def hardswish(input, inplace=False):
    """``x · relu6(x + 3) / 6`` (MobileNetV3).

    >>> F.hardswish(tl.tensor([-4.0, 1.0, 4.0])).tolist()
    [-0.0, 0.6666666865348816, 4.0]
    """
    return input * hardsigmoid(input)


def softsign(input):
    """``x / (1 + |x|)``.

    >>> F.softsign(tl.tensor([1.0, -3.0])).tolist()
    [0.5, -0.75]
    """
    return input / (input.abs() + 1.0)


def glu(input, dim=-1):
    """Gated linear unit: split ``input`` in halves ``a, b`` along ``dim``; ``a · σ(b)``. The
    size of ``dim`` must be even; the result has half of it.

    >>> F.glu(tl.tensor([[1.0, 2.0, 0.0, 0.0]])).tolist()
    [[0.5, 1.0]]
    """
    if input.shape[dim] % 2:
        raise tl.ShapeError(
            f"glu: halving dimension must be even, but dimension {dim} is size {input.shape[dim]}"
        )
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input, weight):
    """``max(0, x) + w · min(0, x)`` with a learnt slope ``w``: one value, or one per channel
    (dim 1 of the input).

    >>> F.prelu(tl.tensor([[-2.0, 3.0]]), tl.tensor([0.25])).tolist()
    [[-0.5, 3.0]]
    """
    w = weight
    if weight.numel() > 1:
        if input.ndim < 2 or input.shape[1] != weight.numel():
            raise tl.ShapeError(
                f"prelu: {weight.numel()} slopes need an input with that many channels (dim 1), "
                f"got shape {input.shape}"
            )
        w = weight.reshape((input.shape[1],) + (1,) * (input.ndim - 2))
    return input.relu() + w * input.clamp(max=0.0)


def softmin(input, dim=None):
    """``softmax(-x)`` along ``dim``.

    >>> [round(v, 4) for v in F.softmin(tl.tensor([0.0, 1.0]), dim=0).tolist()]
    [0.7311, 0.2689]
    """
    return softmax(-input, dim)


def threshold(input, threshold, value, inplace=False):
    """``x`` where ``x > threshold``, else ``value``.

    >>> F.threshold(tl.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
    [-1.0, 2.0]
    """
    return tl.where(input > threshold, input, tl.full_like(input, value))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``x1·x2 / max(‖x1‖ ‖x2‖, eps)`` along ``dim`` (inputs broadcast; ``dim`` is reduced).

    >>> F.cosine_similarity(tl.tensor([[1.0, 0.0]]), tl.tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """
    dot = (x1 * x2).sum(dim)
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return dot / (n1 * n2).clamp(min=eps * eps).sqrt()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``‖x1 − x2 + eps‖_p`` over the last dim (PyTorch adds ``eps`` to the difference).

    >>> round(F.pairwise_distance(tl.tensor([[0.0, 0.0]]), tl.tensor([[3.0, 4.0]])).item(), 4)
    5.0
    """
    d = x1 - x2 + eps
    if p == math.inf:
        return d.abs().amax(-1, keepdim=keepdim)
    return (d.abs() ** p).sum(-1, keepdim=keepdim) ** (1.0 / p)


# Imported last: these modules import this one at module level and must find it complete.
from .attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402
from .conv_transpose import conv_transpose1d, conv_transpose2d  # noqa: E402
from .embedding_bag import embedding_bag  # noqa: E402
from .margin_loss import (  # noqa: E402
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .sampling_grid import affine_grid, grid_sample  # noqa: E402
from .upsampling import interpolate, pixel_shuffle, pixel_unshuffle, upsample  # noqa: E402
