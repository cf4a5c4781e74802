"""Pooling: max, average and adaptive average, 1-D and 2-D, as pad + unfold + reduce.

Window geometry is the convolution's: along a dim of length ``L`` with kernel ``k``, stride
``s`` (default ``k``), padding ``p`` and dilation ``d`` there are
``⌊(L + 2p - d(k-1) - 1)/s⌋ + 1`` windows (``⌈·⌉`` with ``ceil_mode``, minus one if the last
window would start in the right padding). ``p <= k/2`` so no window is padding only.

* max pool pads with ``-inf`` (padding never wins) and takes the max over each window, one
  window offset at a time (:mod:`torchlight.tensor.functions.windows`); the gradient goes to
  the element that won (the first one on ties, like PyTorch). Average pooling sums the same
  offset views.
* avg pool pads with zeros and divides each window sum by its *divisor*: ``prod(k)`` in the plain
  case; with ``count_include_pad=False`` only real input elements count, and with
  ``ceil_mode`` elements past the right padding never count. The divisor is computed once per
  output position by sliding the same windows over a 0/1 mask of what counts.
* adaptive average pool with output size ``m`` averages bin ``i = [⌊iL/m⌋, ⌈(i+1)L/m⌉)``. That
  average is linear and separable over dims, so it is ``A_h · x · A_wᵀ`` with ``A[i, j] =
  1/|bin i|`` for ``j`` in bin ``i``: two matmuls with constant matrices, exact for every size.
* adaptive max pool takes the max over the same bins; a max over a rectangle is the max over
  its rows of the max over its columns, so it too goes one dim at a time (one ``amax`` per bin).
"""

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import torchlight as tl
from torchlight.tensor.functions.windows import Windows, window_max, window_sum, winners

from .conv import _tuple
from .module import Module

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
]


def _geometry(shape, kernel, stride, padding, dilation, ceil_mode, name):
    """Output sizes and the extra right padding ``ceil_mode`` needs, per spatial dim."""
    outs, extra = [], []
    for L, k, s, p, d in zip(shape, kernel, stride, padding, dilation):
        if p > k // 2:
            raise ValueError(
                f"{name}: pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k}"
            )
        span = d * (k - 1) + 1
        room = L + 2 * p - span
        if room < 0:
            raise tl.ShapeError(
                f"{name}: kernel span {span} is larger than the padded input size {L + 2 * p}"
            )
        if ceil_mode:
            n = -(-room // s) + 1
            if (n - 1) * s >= L + p:  # the last window would start inside the right padding
                n -= 1
        else:
            n = room // s + 1
        outs.append(n)
        extra.append(max(0, (n - 1) * s + span - (L + 2 * p)))
    return tuple(outs), tuple(extra)


def _prepare(x, kernel_size, stride, padding, dilation, nd, name):
    if x.ndim not in (nd + 1, nd + 2):
        raise tl.ShapeError(
            f"{name}: expected a {nd + 1}-D or {nd + 2}-D input, got shape {x.shape}"
        )
    kernel = _tuple(kernel_size, nd, "kernel_size")
    stride = (
        kernel if stride is None or stride == [] or stride == () else _tuple(stride, nd, "stride")
    )
    return kernel, stride, _tuple(padding, nd, "padding"), _tuple(dilation, nd, "dilation")


def _padded(x, kernel, stride, padding, dilation, ceil_mode, fill, name):
    """``x`` padded with ``fill`` (``padding`` each side, plus what ``ceil_mode`` adds on the
    right) and the number of windows per spatial dim."""
    outs, extra = _geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, name)
    flat = []
    for p, e in zip(reversed(padding), reversed(extra)):
        flat += [p, p + e]
    if any(flat):
        x = tl.pad(x, flat, value=fill)
    return x, outs


def _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, name):
    if x.ndim == nd + 1:
        res = _max_pool(
            x.unsqueeze(0),
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode,
            return_indices,
            nd,
            name,
        )
        return (res[0].squeeze(0), res[1].squeeze(0)) if return_indices else res.squeeze(0)
    kernel, stride, padding, dilation = _prepare(
        x, kernel_size, stride, padding, dilation, nd, name
    )
    padded, outs = _padded(x, kernel, stride, padding, dilation, ceil_mode, float("-inf"), name)
    values = window_max(padded, kernel, stride, dilation, outs)
    if not return_indices:
        return values
    # PyTorch's indices: flat positions in the (unpadded) input plane.
    with tl.no_grad():
        local = winners(padded, values, Windows.of(kernel, stride, dilation, outs)).numpy()
    grids = np.meshgrid(*[np.arange(n) for n in outs], indexing="ij")
    offsets = np.unravel_index(local, kernel)
    flat_index = np.zeros(local.shape, dtype=np.int64)
    for d in range(nd):
        coord = grids[d] * stride[d] - padding[d] + offsets[d] * dilation[d]
        flat_index = flat_index * x.shape[2 + d] + coord
    return values, tl.tensor(flat_index, dtype=tl.int64, device=x.device)


def _avg_pool(
    x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, name
):
    if x.ndim == nd + 1:
        return _avg_pool(
            x.unsqueeze(0),
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor_override,
            nd,
            name,
        ).squeeze(0)
    kernel, stride, padding, dilation = _prepare(x, kernel_size, stride, padding, 1, nd, name)
    padded, outs = _padded(x, kernel, stride, padding, dilation, ceil_mode, 0.0, name)
    sums = window_sum(padded, kernel, stride, dilation, outs)
    if divisor_override:
        return sums / divisor_override
    _, extra = _geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, name)
    if count_include_pad and not any(extra):
        return sums / math.prod(kernel)
    # Count, per window, the positions that belong to the input (plus the explicit padding when
    # count_include_pad): slide the windows over a 0/1 mask of the padded plane.
    mask = np.zeros(tuple(L + 2 * p + e for L, p, e in zip(x.shape[2:], padding, extra)))
    inner = tuple(
        slice(0 if count_include_pad else p, (p if count_include_pad else 0) + L + p)
        for L, p in zip(x.shape[2:], padding)
    )
    mask[inner] = 1.0
    for d in range(nd):
        mask = np.lib.stride_tricks.sliding_window_view(mask, kernel[d], axis=d)
        mask = mask[(slice(None),) * d + (slice(None, None, stride[d]),)].sum(-1)
    divisor = tl.tensor(mask, dtype=x.dtype, device=x.device)
    return sums / divisor


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    r"""1-D max pooling: the maximum of each window of ``kernel_size`` elements, windows ``stride``
    apart (``kernel_size`` by default), after padding both sides with ``-inf`` by ``padding``;
    ``dilation`` spaces the window's elements; ``ceil_mode`` keeps a last partial window. With
    ``return_indices=True`` also the flat index of each maximum.

    Shapes: ``(N, C, L)`` or ``(C, L)`` to ``(N, C, L_out)`` with
    :math:`L_{out} = \lfloor (L + 2p - d(k - 1) - 1)/s \rfloor + 1`.

    >>> F.max_pool1d(tl.tensor([[[1.0, 3.0, 2.0, 5.0]]]), 2)
    tensor([[[3., 5.]]])
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d"
    )


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """2-D max pooling over ``(H, W)`` windows; arguments (ints or pairs) and output sizes as
    :func:`max_pool1d`, per spatial dimension.

    Shapes: ``(N, C, H, W)`` or ``(C, H, W)`` to ``(N, C, H_out, W_out)``.

    >>> F.max_pool2d(tl.arange(16.0).view(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d"
    )


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling: the mean of each window (zero-padded by ``padding``; the padding counts in
    the divisor unless ``count_include_pad=False``). Shapes as :func:`max_pool1d`.

    >>> F.avg_pool1d(tl.tensor([[[1.0, 3.0, 2.0, 6.0]]]), 2)
    tensor([[[2., 4.]]])
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d"
    )


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """2-D average pooling over ``(H, W)`` windows; ``divisor_override`` replaces the window size as
    the divisor. Shapes as :func:`max_pool2d`.

    >>> F.avg_pool2d(tl.ones(1, 1, 4, 4), 2).shape
    (1, 1, 2, 2)
    """
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        2,
        "avg_pool2d",
    )


def _bin_matrix(length, size, like):
    """``(size, length)`` averaging matrix of adaptive pooling's bins."""
    a = np.zeros((size, length))
    for i in range(size):
        lo, hi = (i * length) // size, -(-((i + 1) * length) // size)
        a[i, lo:hi] = 1.0 / (hi - lo)
    return tl.tensor(a, dtype=like.dtype, device=like.device)


def _adaptive_avg(x, output_size, nd, name):
    if x.ndim not in (nd + 1, nd + 2):
        raise tl.ShapeError(
            f"{name}: expected a {nd + 1}-D or {nd + 2}-D input, got shape {x.shape}"
        )
    spatial = x.shape[x.ndim - nd :]
    sizes = (
        (output_size,) * nd
        if isinstance(output_size, int) or output_size is None
        else tuple(output_size)
    )
    sizes = tuple(s if o is None else o for s, o in zip(spatial, sizes))
    if any(o <= 0 for o in sizes):
        raise ValueError(f"{name}: output_size must be positive, got {sizes}")
    y = x
    if sizes[-1] != spatial[-1]:
        y = y @ _bin_matrix(spatial[-1], sizes[-1], x).T  # average along the last dim
    if nd == 2 and sizes[0] != spatial[0]:
        y = _bin_matrix(spatial[0], sizes[0], x) @ y  # ... and along the one before
    return y if y is not x else x.clone()


def adaptive_avg_pool1d(input, output_size):
    r"""1-D average pooling to a fixed ``output_size``: bin :math:`i` of :math:`L_{out}` averages
    elements :math:`\lfloor iL/L_{out}\rfloor` to :math:`\lceil (i+1)L/L_{out}\rceil - 1` (bins may
    overlap). ``(N, C, L)`` to ``(N, C, output_size)``.

    >>> F.adaptive_avg_pool1d(tl.tensor([[[1.0, 2.0, 3.0, 4.0]]]), 2)
    tensor([[[1.5, 3.5]]])
    """
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """2-D average pooling to a fixed ``output_size`` (an int, a pair, ``None`` keeping that size);
    ``(N, C, H, W)`` to ``(N, C, *output_size)``. ``output_size=1`` is global average pooling.

    >>> F.adaptive_avg_pool2d(tl.ones(2, 3, 5, 7), 1).shape
    (2, 3, 1, 1)
    """
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


class _MaxPoolNd(Module):
    _fn: Callable[..., Any] | None = None  # max_pool1d / max_pool2d in the subclasses

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
            self.return_indices,
        )

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    r"""1-D max pooling layer; see :func:`~torchlight.nn.functional.max_pool1d` for the arguments.

    Shape: ``(N, C, L)`` or ``(C, L)`` to ``(N, C, L_out)``,
    :math:`L_{out} = \lfloor (L + 2p - d(k - 1) - 1)/s \rfloor + 1` (stride ``s`` defaults to ``k``).

    >>> nn.MaxPool1d(2)(tl.zeros(8, 4, 10)).shape
    (8, 4, 5)
    """

    _fn = staticmethod(max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling layer; see :func:`~torchlight.nn.functional.max_pool2d`.

    Shape: ``(N, C, H, W)`` to ``(N, C, H_out, W_out)``, each spatial size as in :class:`MaxPool1d`.

    >>> nn.MaxPool2d(2)(tl.zeros(8, 4, 28, 28)).shape
    (8, 4, 14, 14)
    """

    _fn = staticmethod(max_pool2d)


class AvgPool1d(Module):
    """1-D average pooling layer; see :func:`~torchlight.nn.functional.avg_pool1d`.

    Shape: ``(N, C, L)`` to ``(N, C, L_out)`` as in :class:`MaxPool1d` (without dilation).

    >>> nn.AvgPool1d(2)(tl.tensor([[[1.0, 3.0, 2.0, 6.0]]]))
    tensor([[[2., 4.]]])
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad

    def forward(self, input):
        return avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """2-D average pooling layer; see :func:`~torchlight.nn.functional.avg_pool2d`.

    Shape: ``(N, C, H, W)`` to ``(N, C, H_out, W_out)``.

    >>> nn.AvgPool2d(2)(tl.zeros(1, 3, 8, 8)).shape
    (1, 3, 4, 4)
    """

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    """Average pooling to a fixed length ``output_size`` whatever the input length; see
    :func:`~torchlight.nn.functional.adaptive_avg_pool1d`.

    Shape: ``(N, C, L)`` to ``(N, C, output_size)``.

    >>> nn.AdaptiveAvgPool1d(3)(tl.zeros(2, 4, 10)).shape
    (2, 4, 3)
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed ``(H_out, W_out)``; ``AdaptiveAvgPool2d(1)`` is the global
    average pooling at the end of a CNN. See :func:`~torchlight.nn.functional.adaptive_avg_pool2d`.

    Shape: ``(N, C, H, W)`` to ``(N, C, *output_size)``.

    >>> nn.AdaptiveAvgPool2d((1, 1))(tl.zeros(2, 16, 7, 7)).shape
    (2, 16, 1, 1)
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


def _adaptive_max(x, output_size, nd, return_indices, name):
    if return_indices:
        raise NotImplementedError(f"{name}: return_indices=True is not supported")
    if x.ndim not in (nd + 1, nd + 2):
        raise tl.ShapeError(
            f"{name}: expected a {nd + 1}-D or {nd + 2}-D input, got shape {x.shape}"
        )
    spatial = x.shape[x.ndim - nd :]
    sizes = (
        (output_size,) * nd
        if isinstance(output_size, int) or output_size is None
        else tuple(output_size)
    )
    sizes = tuple(s if o is None else o for s, o in zip(spatial, sizes))
    if any(o <= 0 for o in sizes):
        raise ValueError(f"{name}: output_size must be positive, got {sizes}")
    y = x
    for i, (length, size) in enumerate(zip(spatial, sizes)):
        dim = x.ndim - nd + i
        bins = []
        for j in range(size):
            lo, hi = (j * length) // size, -(-((j + 1) * length) // size)
            bins.append(y.narrow(dim, lo, hi - lo).amax(dim, keepdim=True))
        y = tl.cat(bins, dim)
    return y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over ``output_size`` bins ``[⌊iL/m⌋, ⌈(i+1)L/m⌉)`` of the last dim of ``(N, C, L)``.

    >>> F.adaptive_max_pool1d(tl.tensor([[[1.0, 5.0, 2.0, 0.0, 3.0]]]), 2).tolist()
    [[[5.0, 3.0]]]
    """
    return _adaptive_max(input, output_size, 1, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over the adaptive bins of the last two dims of ``(N, C, H, W)``.

    >>> F.adaptive_max_pool2d(tl.arange(16.0).reshape(1, 1, 4, 4), 1).tolist()
    [[[[15.0]]]]
    """
    return _adaptive_max(input, output_size, 2, return_indices, "adaptive_max_pool2d")


class AdaptiveMaxPool1d(Module):
    """``AdaptiveMaxPool1d(output_size)``: :func:`adaptive_max_pool1d`.

    >>> nn.AdaptiveMaxPool1d(3)(tl.randn(2, 4, 10)).shape
    (2, 4, 3)
    """

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return adaptive_max_pool1d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """``AdaptiveMaxPool2d(output_size)``: :func:`adaptive_max_pool2d` (``output_size`` an int,
    a pair, or a pair with ``None`` keeping that dim).

    >>> nn.AdaptiveMaxPool2d((1, None))(tl.randn(2, 3, 5, 7)).shape
    (2, 3, 1, 7)
    """

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return adaptive_max_pool2d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"
