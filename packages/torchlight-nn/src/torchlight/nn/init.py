"""``torchlight.nn.init``: fill tensors in place with PyTorch's initialisation schemes.

Fan conventions (PyTorch's): a weight of shape ``(out, in, *kernel)`` has
``fan_in = in · prod(kernel)`` and ``fan_out = out · prod(kernel)``; so a ``Linear(in, out)``
weight (stored ``(out, in)``) has ``fan_in = in``.

* Xavier/Glorot keeps the variance of activations and gradients equal across a linear layer:
  ``std = gain · sqrt(2 / (fan_in + fan_out))``; the uniform version uses bound ``sqrt(3) · std``
  (a uniform on ``[-a, a]`` has variance ``a²/3``).
* Kaiming/He keeps the forward (``mode='fan_in'``) or backward (``'fan_out'``) variance constant
  through a rectifier: ``std = gain / sqrt(fan)``, ``gain = calculate_gain(nonlinearity, a)``.
  PyTorch's default ``Linear``/``Conv`` init is ``kaiming_uniform_(w, a=sqrt(5))``, i.e.
  ``gain = sqrt(2 / (1 + 5)) = 1/sqrt(3)`` and bound ``sqrt(3) · gain / sqrt(fan_in) = 1/sqrt(fan_in)``.

Every function runs under ``no_grad`` (initialisation is not part of the graph), returns the
tensor, and draws from torchlight's seeded generator (``tl.manual_seed``) or ``generator=``.
"""

import math

import numpy as np

import torchlight as tl

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "zeros_",
    "ones_",
    "constant_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "orthogonal_",
    "calculate_fan_in_and_fan_out",
]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table).

    linear / conv / sigmoid: 1; tanh: 5/3; relu: sqrt(2); leaky_relu(slope): sqrt(2 / (1 + slope²))
    (slope defaults to 0.01); selu: 3/4.

    >>> nn.init.calculate_gain("relu") == 2 ** 0.5, nn.init.calculate_gain("tanh")
    (True, 1.6666666666666667)
    """
    linear = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity!r}")


def calculate_fan_in_and_fan_out(tensor):
    """``(fan_in, fan_out)`` of a weight shaped ``(out, in, *receptive_field)``.

    >>> nn.init.calculate_fan_in_and_fan_out(tl.empty(16, 3, 5, 5))   # a Conv2d weight
    (75, 400)
    """
    if tensor.ndim < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (shape {tensor.shape})"
        )
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b).

    >>> w = nn.init.uniform_(tl.empty(2, 3), -0.1, 0.1)
    >>> bool((w.abs() <= 0.1).all())
    True
    """
    with tl.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std²).

    >>> w = nn.init.normal_(tl.empty(10000), std=0.02)
    >>> abs(w.std().item() - 0.02) < 0.001
    True
    """
    with tl.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val):
    """Fill ``tensor`` with ``val`` in place, outside autograd; returns it.

    >>> w = nn.Parameter(tl.zeros(2))
    >>> nn.init.constant_(w, 0.5)
    Parameter containing:
    tensor([0.5, 0.5], requires_grad=True)
    """
    with tl.no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    """Fill ``tensor`` with 0 in place, outside autograd (the usual bias initialisation); returns it.

    >>> nn.init.zeros_(tl.ones(2))
    tensor([0., 0.])
    """
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fill ``tensor`` with 1 in place, outside autograd (a norm layer's weight); returns it.

    >>> nn.init.ones_(tl.zeros(2))
    tensor([1., 1.])
    """
    return constant_(tensor, 1.0)


def eye_(tensor):
    """The identity matrix (2-D tensors only).

    >>> nn.init.eye_(tl.empty(2, 3))
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape {tensor.shape}")
    with tl.no_grad():
        return tensor.copy_(tl.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with ``a = gain · sqrt(6 / (fan_in + fan_out))``.

    >>> w = nn.init.xavier_uniform_(tl.empty(4, 8))        # fan_in 8, fan_out 4
    >>> bool((w.abs() <= (6 / (8 + 4)) ** 0.5).all())
    True
    """
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std²) with ``std = gain · sqrt(2 / (fan_in + fan_out))``.

    >>> w = nn.init.xavier_normal_(tl.empty(200, 300))
    >>> abs(w.std().item() - (2 / 500) ** 0.5) < 0.005
    True
    """
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with ``bound = sqrt(3) · gain / sqrt(fan)``.

    >>> w = nn.init.kaiming_uniform_(tl.empty(16, 9), nonlinearity="relu")
    >>> bool((w.abs() <= (6 / 9) ** 0.5).all())          # sqrt(3) * sqrt(2) / sqrt(9)
    True
    """
    if 0 in tensor.shape:
        return tensor  # PyTorch warns and does nothing for zero-element tensors
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²) with ``std = gain / sqrt(fan)``.

    >>> w = nn.init.kaiming_normal_(tl.empty(256, 512), nonlinearity="relu")
    >>> abs(w.std().item() - (2 / 512) ** 0.5) < 0.005
    True
    """
    if 0 in tensor.shape:
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std²) conditioned on ``a <= x <= b`` (absolute bounds, as in PyTorch).

    Rejection sampling: draw normals, keep those inside [a, b], redraw the rest. Each round
    keeps a fraction ``p = Φ(β) - Φ(α)`` (``α = (a-mean)/std``), so it is fast unless the
    interval sits far in a tail; that case raises instead of looping for a long time.

    >>> w = nn.init.trunc_normal_(tl.empty(1000), a=-1.0, b=1.0)
    >>> bool((w.abs() <= 1.0).all())
    True
    """
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    phi = lambda z: 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))  # noqa: E731
    p = phi((b - mean) / std) - phi((a - mean) / std)
    if p < 1e-4:
        raise ValueError(
            f"trunc_normal_: [a, b] = [{a}, {b}] holds only {p:.2e} of N({mean}, {std}²); "
            "rejection sampling would be too slow (move mean or widen the bounds)"
        )
    n = tensor.numel()
    out = np.empty(0)
    while out.size < n:
        want = max(16, int((n - out.size) / p * 1.1) + 1)
        draw = tl.randn(want, dtype=tl.float64, generator=generator).numpy() * std + mean
        out = np.concatenate([out, draw[(draw >= a) & (draw <= b)]])
    with tl.no_grad():
        return tensor.copy_(
            tl.tensor(out[:n].reshape(tensor.shape), dtype=tensor.dtype, device=tensor.device)
        )


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian matrix (Saxe et al.).

    The tensor is viewed as ``(rows, numel / rows)``. ``Q`` of ``A = QR`` is orthonormal; the
    signs of ``diag(R)`` are multiplied into ``Q`` so the result is uniformly (Haar) distributed.

    >>> q = nn.init.orthogonal_(tl.empty(3, 3))
    >>> bool(((q @ q.T) - tl.eye(3)).abs().max() < 1e-5)
    True
    """
    if tensor.ndim < 2:
        raise ValueError(
            f"Only tensors with 2 or more dimensions are supported, got shape {tensor.shape}"
        )
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = tl.randn(rows, cols, dtype=tl.float64, generator=generator).numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with tl.no_grad():
        return tensor.copy_(
            tl.tensor((gain * q).reshape(tensor.shape), dtype=tensor.dtype, device=tensor.device)
        )
