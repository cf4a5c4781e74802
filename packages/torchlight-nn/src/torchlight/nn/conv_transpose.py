"""Transposed convolutions (``conv_transpose1d/2d``, ``ConvTranspose1d/2d``), PyTorch's definition.

The transposed convolution is the adjoint of the convolution with the same arguments: every input
position scatters a weighted copy of the kernel into the output. For input ``x: (N, C, *S)`` and
weight ``w: (C, O/g, *k)``::

    y[n, γ·O/g + o, p·stride + j·dilation − padding] += x[n, γ·C/g + c, p] · w[γ·C/g + c, o, j]

and the output length along a dim of length ``L`` is
``(L − 1)·stride − 2·padding + dilation·(k − 1) + output_padding + 1``.

Implementation: the same thing as an ordinary convolution with stride 1 — insert ``stride − 1``
zeros between the input elements, pad each side by ``dilation·(k − 1) − padding`` (plus
``output_padding`` on the right; negative amounts crop), and cross-correlate with the kernel
flipped in every spatial dim and its in/out channels swapped within each group. Autograd
differentiates through those steps, so no separate backward is written.
"""

import math

import torchlight as tl

from . import init
from .conv import _conv, _tuple
from .module import Module
from .parameter import Parameter

__all__ = ["conv_transpose1d", "conv_transpose2d", "ConvTranspose1d", "ConvTranspose2d"]


def _insert_zeros(x, dim, stride):
    """``stride − 1`` zeros between consecutive elements of ``x`` along ``dim``."""
    if stride == 1:
        return x
    length = x.shape[dim]
    zeros_shape = list(x.shape)
    zeros_shape.insert(dim + 1, stride - 1)
    zeros = tl.zeros(*zeros_shape, dtype=x.dtype, device=x.device)
    spread = tl.cat([x.unsqueeze(dim + 1), zeros], dim + 1)  # (..., L, stride, ...)
    merged = spread.reshape(x.shape[:dim] + (length * stride,) + x.shape[dim + 1 :])
    return merged.narrow(dim, 0, (length - 1) * stride + 1)


def _pad_or_crop(x, dim, left, right):
    if left < 0:
        x = x.narrow(dim, -left, x.shape[dim] + left)
        left = 0
    if right < 0:
        x = x.narrow(dim, 0, x.shape[dim] + right)
        right = 0
    if left or right:
        pairs = [0, 0] * (x.ndim - 1 - dim) + [left, right]
        x = tl.pad(x, pairs)
    return x


def _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    if x.ndim == nd + 1:
        return _conv_transpose(
            x.unsqueeze(0),
            weight,
            bias,
            stride,
            padding,
            output_padding,
            groups,
            dilation,
            nd,
            name,
        ).squeeze(0)
    if x.ndim != nd + 2 or weight.ndim != nd + 2:
        raise tl.ShapeError(
            f"{name}: expected a {nd + 2}-D input and weight, got {x.shape} and {weight.shape}"
        )
    c, og = weight.shape[:2]
    if x.shape[1] != c or c % groups:
        raise tl.ShapeError(
            f"{name}: input has {x.shape[1]} channels, the weight {weight.shape} expects {c} "
            f"(divisible by groups={groups})"
        )
    stride, padding = _tuple(stride, nd, "stride"), _tuple(padding, nd, "padding")
    output_padding, dilation = (
        _tuple(output_padding, nd, "output_padding"),
        _tuple(dilation, nd, "dilation"),
    )
    kernel = weight.shape[2:]
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= max(s, d):
            raise ValueError(
                f"{name}: output_padding ({op}) must be smaller than either stride ({s}) or dilation ({d})"
            )
    for i in range(nd):
        dim = 2 + i
        x = _insert_zeros(x, dim, stride[i])
        edge = dilation[i] * (kernel[i] - 1) - padding[i]
        x = _pad_or_crop(x, dim, edge, edge + output_padding[i])
    # (C, O/g, *k) -> (O, C/g, *k), flipped in every spatial dim
    cg = c // groups
    w = (
        weight.reshape((groups, cg, og) + tuple(kernel))
        .transpose(1, 2)
        .reshape((groups * og, cg) + tuple(kernel))
    )
    for i in range(nd):
        rev = tl.arange(kernel[i] - 1, -1, -1, device=w.device)
        w = w.index_select(2 + i, rev)
    return _conv(x, w, bias, 1, 0, dilation, groups, nd, name)


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 1-D convolution of ``(N, C, L)`` with ``(C, O/groups, k)``; see the module docstring.

    >>> F.conv_transpose1d(tl.ones(1, 1, 3), tl.ones(1, 1, 2), stride=2).tolist()
    [[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]]
    """
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        1,
        "conv_transpose1d",
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 2-D convolution of ``(N, C, H, W)`` with ``(C, O/groups, kh, kw)``.

    >>> F.conv_transpose2d(tl.ones(1, 1, 2, 2), tl.ones(1, 1, 2, 2)).tolist()
    [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]
    """
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        2,
        "conv_transpose2d",
    )


class _ConvTransposeNd(Module):
    _nd = 0

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        nd = self._nd
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible "
                f"by groups ({groups})"
            )
        if padding_mode != "zeros":
            raise ValueError(f"Only 'zeros' padding mode is supported for {type(self).__name__}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, nd, "kernel_size")
        self.stride, self.padding = _tuple(stride, nd, "stride"), _tuple(padding, nd, "padding")
        self.output_padding = _tuple(output_padding, nd, "output_padding")
        self.dilation, self.padding_mode = _tuple(dilation, nd, "dilation"), padding_mode
        shape = (in_channels, out_channels // groups) + self.kernel_size
        self.weight = Parameter(tl.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(tl.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """As PyTorch: ``kaiming_uniform_(a=sqrt(5))``, whose fan-in is taken from dim 1 of the
        weight (``out_channels/groups · prod(kernel)``); bias ``U(±1/sqrt(fan_in))``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        nd = self._nd
        size = tuple(output_size)[-nd:]
        spatial = input.shape[-nd:]
        pads = []
        for i in range(nd):
            smallest = (
                (spatial[i] - 1) * self.stride[i]
                - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1)
                + 1
            )
            extra = size[i] - smallest
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(
                    f"{type(self).__name__}: requested output size {size} is not reachable from "
                    f"input size {tuple(spatial)}"
                )
            pads.append(extra)
        return tuple(pads)

    def forward(self, input, output_size=None):
        return _conv_transpose(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
            self._nd,
            type(self).__name__,
        )

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if any(self.padding):
            s += f", padding={self.padding}"
        if any(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + (", bias=False" if self.bias is None else "")


class ConvTranspose1d(_ConvTransposeNd):
    """``ConvTranspose1d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    output_padding=0, groups=1, bias=True, dilation=1)``: weight ``(in, out/groups, k)``;
    ``forward(input, output_size=None)`` on ``(N, C, L)``.

    >>> nn.ConvTranspose1d(4, 2, 3, stride=2)(tl.randn(1, 4, 5)).shape
    (1, 2, 11)
    """

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """``ConvTranspose2d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    output_padding=0, groups=1, bias=True, dilation=1)``: weight ``(in, out/groups, kh, kw)``.

    >>> up = nn.ConvTranspose2d(8, 4, kernel_size=4, stride=2, padding=1)   # the DCGAN upsampler
    >>> up(tl.randn(2, 8, 5, 5)).shape
    (2, 4, 10, 10)
    """

    _nd = 2
