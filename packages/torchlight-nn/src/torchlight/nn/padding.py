"""Padding: the ``reflect``/``replicate``/``circular`` modes of ``F.pad`` and the padding modules
(``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad``, ``CircularPad``, 1-D and 2-D).

``padding`` is an int (every side) or ``(left, right)`` for 1-D and ``(left, right, top, bottom)``
for 2-D, the order of :func:`torchlight.nn.functional.pad`. The non-constant modes read, for
output position ``i`` of a dim of length ``L`` padded by ``l`` on the left (``j = i − l``):

* ``reflect``:   ``x[|j|]`` left of the edge, ``x[2(L − 1) − j]`` right of it (the edge is not repeated);
* ``replicate``: ``x[clamp(j, 0, L − 1)]``;
* ``circular``:  ``x[j mod L]``;

i.e. one ``index_select`` per padded dim, whose backward adds the gradients of copies together.
"""

import numpy as np

import torchlight as tl

from . import functional as F
from .module import Module

__all__ = [
    "index_pad",
    "ConstantPad1d",
    "ConstantPad2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
]

_MODES = ("reflect", "replicate", "circular")


def index_pad(input, pad, mode):
    """``F.pad`` for ``mode`` in ``reflect``, ``replicate``, ``circular`` (see the module docstring).

    >>> from torchlight.nn.padding import index_pad
    >>> index_pad(tl.tensor([[1.0, 2.0, 3.0]]), (2, 1), "reflect").tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """
    if mode not in _MODES:
        raise ValueError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}"
        )
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise tl.ShapeError(
            f"pad: expected an even number of values for at most {input.ndim} dims, got {pad}"
        )
    y = input
    for k in range(len(pad) // 2):
        dim = input.ndim - 1 - k
        left, right = int(pad[2 * k]), int(pad[2 * k + 1])
        if left < 0 or right < 0:
            raise ValueError(f"pad: negative padding {pad} is not supported with mode {mode!r}")
        if not left and not right:
            continue
        length = y.shape[dim]
        limit = length - 1 if mode == "reflect" else (length if mode == "circular" else None)
        if limit is not None and max(left, right) > limit:
            raise ValueError(
                f"pad: {mode} padding of {max(left, right)} needs a dimension longer than that, "
                f"but dim {dim} has size {length}"
            )
        j = np.arange(-left, length + right)
        if mode == "reflect":
            j = np.abs(j)
            j = np.where(j > length - 1, 2 * (length - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, length - 1)
        else:
            j = j % length
        y = y.index_select(dim, tl.tensor(j, device=y.device))
    return y


class _ConstantPadNd(Module):
    _nd = 0

    def __init__(self, padding, value):
        super().__init__()
        n = 2 * self._nd
        self.padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(
                f"{type(self).__name__}: padding must be an int or {n} values, got {padding}"
            )
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, value=self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """``ConstantPad1d(padding, value)``: pad the last dim with ``value``.

    >>> nn.ConstantPad1d((1, 2), 9.0)(tl.zeros(1, 2)).tolist()
    [[9.0, 0.0, 0.0, 9.0, 9.0]]
    """

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """``ConstantPad2d(padding, value)``: pad the last two dims with ``value``.

    >>> nn.ConstantPad2d(1, 0.5)(tl.zeros(1, 1, 2, 2)).shape
    (1, 1, 4, 4)
    """

    _nd = 2


class ZeroPad1d(ConstantPad1d):
    """``ZeroPad1d(padding)``: pad the last dim with zeros.

    >>> nn.ZeroPad1d(1)(tl.ones(1, 2)).tolist()
    [[0.0, 1.0, 1.0, 0.0]]
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):
    """``ZeroPad2d(padding)``: pad the last two dims with zeros.

    >>> nn.ZeroPad2d((1, 1, 2, 0))(tl.ones(1, 1, 2, 2)).shape
    (1, 1, 4, 4)
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class _IndexPadNd(_ConstantPadNd):
    _mode = ""

    def __init__(self, padding):
        super().__init__(padding, None)

    def forward(self, input):
        return index_pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"padding={self.padding}"


class ReflectionPad1d(_IndexPadNd):
    """``ReflectionPad1d(padding)``: mirror the last dim at its edges (edges not repeated).

    >>> nn.ReflectionPad1d(2)(tl.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]
    """

    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_IndexPadNd):
    """``ReflectionPad2d(padding)``: mirror the last two dims (CycleGAN's generator pads so).

    >>> nn.ReflectionPad2d(1)(tl.randn(1, 3, 4, 4)).shape
    (1, 3, 6, 6)
    """

    _nd, _mode = 2, "reflect"


class ReplicationPad1d(_IndexPadNd):
    """``ReplicationPad1d(padding)``: repeat the edge values of the last dim.

    >>> nn.ReplicationPad1d((1, 2))(tl.tensor([[1.0, 2.0]])).tolist()
    [[1.0, 1.0, 2.0, 2.0, 2.0]]
    """

    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_IndexPadNd):
    """``ReplicationPad2d(padding)``: repeat the edge values of the last two dims.

    >>> nn.ReplicationPad2d(1)(tl.ones(1, 1, 2, 2)).tolist()[0][0][0]
    [1.0, 1.0, 1.0, 1.0]
    """

    _nd, _mode = 2, "replicate"


class CircularPad1d(_IndexPadNd):
    """``CircularPad1d(padding)``: wrap the last dim around.

    >>> nn.CircularPad1d(1)(tl.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[3.0, 1.0, 2.0, 3.0, 1.0]]
    """

    _nd, _mode = 1, "circular"


class CircularPad2d(_IndexPadNd):
    """``CircularPad2d(padding)``: wrap the last two dims around (a torus).

    >>> nn.CircularPad2d(1)(tl.ones(1, 1, 2, 2)).shape
    (1, 1, 4, 4)
    """

    _nd, _mode = 2, "circular"
