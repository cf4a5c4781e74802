"""Constant padding modules: ``ZeroPad1d``/``ZeroPad2d``, ``ConstantPad1d``/``ConstantPad2d``.

``padding`` is an int (every side) or ``(left, right)`` for 1-D and ``(left, right, top, bottom)``
for 2-D, the order of :func:`torchlight.nn.functional.pad`.
"""

from . import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ZeroPad1d", "ZeroPad2d"]


class _ConstantPadNd(Module):
    _nd = 0

    def __init__(self, padding, value):
        super().__init__()
        n = 2 * self._nd
        self.padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {n} values, got {padding}")
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
