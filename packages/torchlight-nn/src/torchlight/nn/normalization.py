"""Normalization layers: ``LayerNorm`` and batch norm (``BatchNorm1d``/``BatchNorm2d``).

Batch norm normalises each channel ``c`` over the batch and spatial positions
(input ``(N, C)``, ``(N, C, L)`` or ``(N, C, H, W)``; ``m`` values per channel):

    μ_c = mean(x_c),   σ²_c = mean((x_c - μ_c)²)              (biased: used to normalise)
    y = (x - μ_c) / sqrt(σ²_c + eps) · γ_c + β_c

In training it also updates the running estimates used in eval mode, with PyTorch's momentum
convention (``momentum`` is the weight of the *new* value) and the *unbiased* batch variance:

    running_mean ← (1 - momentum) · running_mean + momentum · μ_c
    running_var  ← (1 - momentum) · running_var  + momentum · σ²_c · m / (m - 1)

``momentum=None`` gives the cumulative average: momentum ``1 / num_batches_tracked``. In
training the gradient flows through μ and σ² too (which is what makes train-mode batch norm's
gradient differ from eval mode's); with x̂ = (x - μ)·r, r = 1 / sqrt(σ² + eps) and ĝ = g·γ it
is, per channel (means over its ``m`` values),

    ∂L/∂x = r · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂)),   ∂L/∂γ = Σ g · x̂,   ∂L/∂β = Σ g

computed by one node (``torchlight.tensor.extension.batch_norm_training``, PyTorch's
``native_batch_norm``) rather than through the dozen ops of the expression; eval mode is those
ops.

Layer norm normalises over the trailing ``normalized_shape`` dims of every sample and uses the
backend's fused kernel (``tl.layer_norm``) when it offers one. Group norm splits the ``C``
channels into ``G`` groups and normalises each sample's group (its ``C/G`` channels and all
positions) the same way, with a per-channel affine; instance norm is group norm with one channel
per group (optionally tracking running statistics like batch norm). RMS norm only rescales:
``y = x / sqrt(mean(x²) + eps) · w`` over the trailing dims.
"""

import numpy as np

import torchlight as tl
from torchlight.tensor.extension import batch_norm_training

from . import init
from .module import Module
from .parameter import Parameter

__all__ = [
    "batch_norm",
    "group_norm",
    "rms_norm",
    "instance_norm",
    "LayerNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "GroupNorm",
    "RMSNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
]


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Functional batch norm over dim 1 (channels); see the module docstring for the maths.

    With ``training=True`` batch statistics are used and, when given, ``running_mean`` and
    ``running_var`` are updated in place. With ``training=False`` the running statistics are used.

    >>> x = tl.tensor([[1.0, 10.0], [3.0, 30.0]])
    >>> F.batch_norm(x, None, None, training=True)
    tensor([[-1., -1.],
            [ 1.,  1.]])
    """
    if input.ndim < 2:
        raise tl.ShapeError(
            f"batch_norm: expected at least 2-D input (N, C, ...), got shape {input.shape}"
        )
    c = input.shape[1]
    stat_shape = (1, c) + (1,) * (input.ndim - 2)
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if t is not None and t.shape != (c,):
            raise tl.ShapeError(
                f"batch_norm: {name} has shape {t.shape}, expected ({c},) for input of shape {input.shape}"
            )
    if training:
        m = input.numel() // c
        if m <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {input.shape}"
            )
        if running_mean is None or running_var is None:
            running_mean = running_var = None
        if not input.dtype.is_floating_point:
            input = input.to(tl.get_default_dtype())
        weight, bias = (
            p if p is None or p.dtype is input.dtype else p.to(input.dtype) for p in (weight, bias)
        )
        return batch_norm_training(input, weight, bias, running_mean, running_var, momentum, eps)
    else:
        if running_mean is None or running_var is None:
            raise ValueError(
                "batch_norm: running_mean and running_var are needed when training=False"
            )
        mean, var = running_mean.reshape(stat_shape), running_var.reshape(stat_shape)
        centered = input - mean
    y = centered * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(stat_shape)
    if bias is not None:
        y = y + bias.reshape(stat_shape)
    return y


class LayerNorm(Module):
    """``LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True)``: weight
    initialised to ones, bias to zeros.

    .. math:: y = \\frac{x - \\mathrm{E}[x]}{\\sqrt{\\mathrm{Var}[x] + \\epsilon}}\\cdot\\gamma + \\beta

    with the mean and (biased) variance over the last ``len(normalized_shape)`` dimensions of each
    sample; :math:`\\gamma` (``weight``) and :math:`\\beta` (``bias``) have shape
    ``normalized_shape``.

    Shape: ``(*, *normalized_shape)``, output as input.

    >>> ln = nn.LayerNorm(3)
    >>> ln(tl.tensor([[1.0, 2.0, 3.0]])).detach()
    tensor([[-1.2247,  0.    ,  1.2247]])
    """

    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tl.empty(*self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(tl.empty(*self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Set ``weight`` to ones and ``bias`` to zeros (the identity affine map)."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return tl.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class _BatchNorm(Module):
    _dims: tuple[int, ...] = ()

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(tl.empty(num_features, dtype=dtype, device=device))
            self.bias = Parameter(tl.empty(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", tl.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", tl.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tl.zeros((), dtype=tl.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with tl.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input):
        if input.ndim not in self._dims:
            dims = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(
                f"{type(self).__name__}: expected {dims} input (got {input.ndim}D input of shape {input.shape})"
            )
        if input.shape[1] != self.num_features:
            raise tl.ShapeError(
                f"{type(self).__name__}({self.num_features}): input has {input.shape[1]} channels (shape {input.shape})"
            )

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with tl.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    r"""Batch norm over ``(N, C)`` or ``(N, C, L)`` input.

    In training each channel is normalised with the batch's mean and (biased) variance, then
    scaled by ``weight`` and shifted by ``bias``; the running statistics move towards the batch's
    (:math:`r \leftarrow (1 - m)\,r + m\,\text{stat}`, the unbiased variance) and are used in eval mode.

    >>> bn = nn.BatchNorm1d(2)
    >>> bn(tl.tensor([[1.0, 10.0], [3.0, 30.0]])).detach()
    tensor([[-1., -1.],
            [ 1.,  1.]])
    >>> bn.running_mean
    tensor([0.2, 2. ])
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over ``(N, C, H, W)`` input.

    Statistics are per channel, over ``N``, ``H`` and ``W``; otherwise as :class:`BatchNorm1d`.

    >>> nn.BatchNorm2d(16)(tl.randn(4, 16, 8, 8)).shape
    (4, 16, 8, 8)
    """

    _dims = (4,)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise ``(N, C, *)`` input over groups of ``C / num_groups`` channels (and all
    positions) per sample: ``(x − μ_g) / sqrt(σ²_g + eps) · w_c + b_c`` (biased variance).

    >>> y = F.group_norm(tl.arange(8.0).reshape(1, 4, 2), 2)
    >>> [round(v, 4) for v in y[0, 0].tolist()]
    [-1.3416, -0.4472]
    """
    if input.ndim < 2:
        raise tl.ShapeError(f"group_norm: expected input of shape (N, C, *), got {input.shape}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise ValueError(
            f"group_norm: num_channels ({c}) must be divisible by num_groups ({num_groups})"
        )
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdim=True)
    y = (centered * (var + eps).rsqrt()).reshape(input.shape)
    affine_shape = (c,) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(affine_shape)
    if bias is not None:
        y = y + bias.reshape(affine_shape)
    return y


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x²) + eps) · w`` over the trailing ``normalized_shape`` dims; ``eps=None``
    means the machine epsilon of the input's dtype (PyTorch's default).

    >>> [round(v, 4) for v in F.rms_norm(tl.tensor([3.0, 4.0]), (2,)).tolist()]
    [0.8485, 1.1314]
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape) :]) != shape:
        raise tl.ShapeError(
            f"rms_norm: input shape {input.shape} does not end with normalized_shape {shape}"
        )
    if eps is None:
        eps = float(np.finfo(np.float64 if input.dtype is tl.float64 else np.float32).eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y if weight is None else y * weight


class GroupNorm(Module):
    """``GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)``: :func:`group_norm` with a
    per-channel ``weight`` (ones) and ``bias`` (zeros); input ``(N, C, *)``.

    >>> gn = nn.GroupNorm(2, 4)
    >>> gn(tl.randn(3, 4, 5)).shape
    (3, 4, 5)
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups,
            num_channels,
            eps,
            affine,
        )
        if affine:
            self.weight = Parameter(tl.ones(num_channels, dtype=dtype, device=device))
            self.bias = Parameter(tl.zeros(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """Set ``weight`` to ones and ``bias`` to zeros (when ``affine``)."""
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input):
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise tl.ShapeError(
                f"GroupNorm: expected input of shape (N, {self.num_channels}, *), got {input.shape}"
            )
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """``RMSNorm(normalized_shape, eps=None, elementwise_affine=True)``: :func:`rms_norm` with a
    ``weight`` of ones (no bias), as in PyTorch.

    >>> nn.RMSNorm(8)(tl.randn(2, 8)).shape
    (2, 8)
    """

    def __init__(
        self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None
    ):
        super().__init__()
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tl.ones(*shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        """Set ``weight`` to ones (when ``elementwise_affine``)."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input):
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each channel of each sample of ``(N, C, *)`` over its positions:
    ``(x − μ_nc) / sqrt(σ²_nc + eps) · w_c + b_c``. With running statistics and
    ``use_input_stats``, they are updated (momentum as batch norm, the batch average of the
    per-instance mean and unbiased variance); ``use_input_stats=False`` normalises with them.

    >>> y = F.instance_norm(tl.tensor([[[1.0, 3.0], [0.0, 4.0]]]))
    >>> [[round(v, 4) for v in row] for row in y[0].tolist()]
    [[-1.0, 1.0], [-1.0, 1.0]]
    """
    if input.ndim < 3:
        raise tl.ShapeError(
            f"instance_norm: expected input of shape (N, C, *) with positions, got {input.shape}"
        )
    n, c = input.shape[:2]
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError(
                "instance_norm: use_input_stats=False needs running_mean and running_var"
            )
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if running_mean is not None and running_var is not None:
        with tl.no_grad():
            x = input.detach().reshape(n, c, -1)
            m = x.shape[-1]
            mean = x.mean(-1)
            var = ((x - mean.unsqueeze(-1)) ** 2).sum(-1) / max(m - 1, 1)
            running_mean.mul_(1 - momentum).add_(mean.mean(0) * momentum)
            running_var.mul_(1 - momentum).add_(var.mean(0) * momentum)
    return group_norm(input, c, weight, bias, eps)


class _InstanceNorm(Module):
    _dims = 0

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=False,
        track_running_stats=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(tl.ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(tl.zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", tl.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", tl.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tl.tensor(0))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input):
        unbatched = input.ndim == self._dims + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.ndim != self._dims + 2 or x.shape[1] != self.num_features:
            raise tl.ShapeError(
                f"{type(self).__name__}: expected input of shape (N, {self.num_features}, ...) with "
                f"{self._dims} spatial dims, got {input.shape}"
            )
        use_input_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked = self.num_batches_tracked + 1
        y = instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats,
            self.momentum,
            self.eps,
        )
        return y.squeeze(0) if unbatched else y

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """``InstanceNorm1d(num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False)``
    on ``(N, C, L)`` (or ``(C, L)``).

    >>> nn.InstanceNorm1d(3)(tl.randn(2, 3, 5)).shape
    (2, 3, 5)
    """

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """``InstanceNorm2d(num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False)``
    on ``(N, C, H, W)`` (or ``(C, H, W)``); the normalisation of style-transfer networks.

    >>> nn.InstanceNorm2d(3, affine=True)(tl.randn(2, 3, 4, 4)).shape
    (2, 3, 4, 4)
    """

    _dims = 2
