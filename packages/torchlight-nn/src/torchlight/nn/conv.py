"""Convolutions (``conv1d``/``conv2d`` and ``Conv1d``/``Conv2d``) as pad + unfold + matmul.

Cross-correlation, PyTorch's definition: for input ``x: (N, C, *S)`` and weight
``w: (O, C/g, *k)`` with ``g`` groups, output channel ``o`` in group ``γ = o // (O/g)`` is

    y[n, o, p] = b[o] + Σ_{c < C/g} Σ_{j} w[o, c, j] · x_pad[n, γ·C/g + c, p·stride + j·dilation]

for every output position ``p`` (a tuple over the spatial dims) and kernel offset ``j``. The
output size along a dim of length ``L`` is ``⌊(L + 2·pad - dilation·(k-1) - 1) / stride⌋ + 1``.

Implementation (im2col without loops over positions):

1. zero-pad the spatial dims (``tl.pad``);
2. every receptive field as one zero-copy strided view ``(N, C, *out, *k)``
   (:func:`~torchlight.tensor.functions.windows.unfold_windows`, dilation included);
3. split channels into groups, order the dims ``(N, g, C/g, *k, *out)`` and reshape: the one
   copy, giving columns ``(N, g, K, P)`` with ``K = C/g · prod(k)`` features and ``P`` positions;
4. one matmul, batched over ``N`` and the groups, with the weight reshaped to ``(g, O/g, K)``:
   ``(N, g, O/g, P)``, which is already the output's layout ``(N, O, *out)``.

Autograd needs nothing special: the backward of each of those view/matmul steps composes to the
transposed convolution (the windows' backward adds each kernel offset's gradient back at its
positions, col2im).
"""

import math

import torchlight as tl
from torchlight.tensor.functions.windows import unfold_windows

from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["conv1d", "conv2d", "Conv1d", "Conv2d", "conv_output_size"]


def _tuple(v, n, name):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(a) for a in v)
    if len(v) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {v}")
    return v


def conv_output_size(length, kernel, stride=1, padding=0, dilation=1):
    """``⌊(L + 2·padding - dilation·(kernel-1) - 1) / stride⌋ + 1``."""
    return (length + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _padding_pairs(padding, kernel, stride, dilation, nd, name):
    """``padding`` as ``((left, right), ...)`` per spatial dim; accepts ints, tuples, 'valid', 'same'."""
    if padding == "valid":
        return ((0, 0),) * nd
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
        pairs = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            pairs.append((total // 2, total - total // 2))  # the extra one goes right, as PyTorch
        return tuple(pairs)
    if isinstance(padding, str):
        raise ValueError(f"{name}: invalid padding string {padding!r}, should be 'valid' or 'same'")
    return tuple((p, p) for p in _tuple(padding, nd, "padding"))


def _conv(x, weight, bias, stride, padding, dilation, groups, nd, name):
    if x.ndim == nd + 1:  # unbatched input (C, *S)
        return _conv(
            x.unsqueeze(0), weight, bias, stride, padding, dilation, groups, nd, name
        ).squeeze(0)
    if x.ndim != nd + 2:
        raise tl.ShapeError(
            f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, got shape {x.shape}"
        )
    if weight.ndim != nd + 2:
        raise tl.ShapeError(
            f"{name}: weight must be {nd + 2}-D (out, in/groups, *kernel), got shape {weight.shape}"
        )
    n, c = x.shape[:2]
    o, cg = weight.shape[:2]
    kernel = weight.shape[2:]
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    if c != cg * groups or o % groups:
        raise tl.ShapeError(
            f"{name}: input has {c} channels and weight shape {weight.shape} with groups={groups}; "
            f"expected {cg * groups} input channels and out_channels divisible by groups"
        )
    pairs = _padding_pairs(padding, kernel, stride, dilation, nd, name)
    flat_pad = [v for pair in reversed(pairs) for v in pair]
    if any(flat_pad):
        x = tl.pad(x, flat_pad)
    win = unfold_windows(x, kernel, stride, dilation)  # (N, C, *out, *k), a view
    out = win.shape[2 : 2 + nd]
    positions = math.prod(out)
    k_len = cg * math.prod(kernel)
    # (N, g, C/g, *out, *k) -> (N, g, C/g, *k, *out): patch columns with channel-major
    # features, the order of weight.reshape(O, C/g · prod(k)). Positions innermost: the copy
    # that reshape makes then moves runs of the input's rows (several times faster than runs
    # of kernel width), and y comes out (N, O, positions), already in its final layout.
    win = win.reshape((n, groups, cg) + out + tuple(kernel))
    perm = (0, 1, 2) + tuple(range(3 + nd, 3 + 2 * nd)) + tuple(range(3, 3 + nd))
    cols = win.permute(*perm).reshape(n, groups, k_len, positions)
    w = weight.reshape(groups, o // groups, k_len)
    y = w @ cols  # (N, g, O/g, P)
    y = y.reshape((n, o) + out)
    if bias is not None:
        y = y + bias.reshape((1, o) + (1,) * nd)
    return y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation of ``(N, C, L)`` with ``(O, C/groups, k)``; see the module docstring.

    >>> F.conv1d(tl.tensor([[[1.0, 2.0, 4.0, 7.0]]]), tl.tensor([[[-1.0, 1.0]]]))
    tensor([[[1., 2., 3.]]])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of ``(N, C, H, W)`` with ``(O, C/groups, kh, kw)``.

    >>> F.conv2d(tl.ones(1, 1, 4, 4), tl.ones(1, 1, 3, 3))
    tensor([[[[9., 9.],
              [9., 9.]]]])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


class _ConvNd(Module):
    _nd = 0
    _fn = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        nd = self._nd
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by groups ({groups})"
            )
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(
                f"padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got {padding_mode!r}"
            )
        if padding_mode != "zeros" and isinstance(padding, str) and padding != "valid":
            raise ValueError(f"padding={padding!r} is only supported with padding_mode='zeros'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, nd, "kernel_size")
        self.stride = _tuple(stride, nd, "stride")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd, "padding")
        self.dilation = _tuple(dilation, nd, "dilation")
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            _padding_pairs(
                padding, self.kernel_size, self.stride, self.dilation, nd, type(self).__name__
            )
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(tl.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(tl.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default: weight ~ U(±1/sqrt(fan_in)) via ``kaiming_uniform_(a=sqrt(5))``,
        bias ~ U(±1/sqrt(fan_in)) with ``fan_in = in_channels/groups · prod(kernel)``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        if self.padding_mode != "zeros" and not isinstance(self.padding, str):
            # PyTorch pads with the mode first, then convolves without padding
            from .padding import index_pad

            flat = [p for p in reversed(self.padding) for _ in range(2)]
            return _conv(
                index_pad(input, flat, self.padding_mode),
                self.weight,
                self.bias,
                self.stride,
                0,
                self.dilation,
                self.groups,
                self._nd,
                type(self).__name__,
            )
        return _conv(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self._nd,
            type(self).__name__,
        )

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding not in ((0,) * self._nd, "valid"):
            s += (
                f", padding={self.padding!r}"
                if isinstance(self.padding, str)
                else f", padding={self.padding}"
            )
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """``Conv1d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
    groups=1, bias=True)`` on ``(N, C, L)`` (or unbatched ``(C, L)``) input.

    Cross-correlation (as in every deep-learning library), for each output channel :math:`j`:

    .. math:: y_{n,j}(t) = b_j + \\sum_{c}\\sum_{u=0}^{k-1} w_{j,c,u}\\, x_{n,c}(s\\,t + d\\,u - p)

    Shape: ``(N, C_in, L)`` to ``(N, C_out, L_out)``,
    :math:`L_{out} = \\lfloor (L + 2p - d(k-1) - 1)/s \\rfloor + 1`; ``weight`` is
    ``(C_out, C_in / groups, k)``.

    >>> conv = nn.Conv1d(4, 6, kernel_size=3)
    >>> conv(tl.zeros(2, 4, 10)).shape
    (2, 6, 8)
    """

    _nd = 1


class Conv2d(_ConvNd):
    """``Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
    groups=1, bias=True)`` on ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) input.

    The 2-D version of :class:`Conv1d`: each output channel sums a ``(k_h, k_w)`` cross-correlation
    over the input channels of its group, plus a bias.

    Shape: ``(N, C_in, H, W)`` to ``(N, C_out, H_out, W_out)``, each spatial size
    :math:`\\lfloor (H + 2p - d(k-1) - 1)/s \\rfloor + 1`; ``weight`` is ``(C_out, C_in / groups, k_h, k_w)``.

    >>> conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
    >>> conv(tl.zeros(2, 3, 32, 32)).shape
    (2, 8, 32, 32)
    """

    _nd = 2
