"""``Unfold`` (im2col) and ``Fold`` (col2im) modules over :func:`~torchlight.nn.functional.unfold`
and :func:`~torchlight.nn.functional.fold`."""

from . import functional as F
from .module import Module

__all__ = ["Unfold", "Fold"]


class Unfold(Module):
    """``Unfold(kernel_size, dilation=1, padding=0, stride=1)``: ``(N, C, H, W)`` → ``(N, C·kh·kw, L)``.

    >>> nn.Unfold(kernel_size=2, stride=2)(tl.randn(1, 3, 4, 4)).shape
    (1, 12, 4)
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = (
            kernel_size,
            dilation,
            padding,
            stride,
        )

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class Fold(Module):
    """``Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)``: ``(N, C·kh·kw, L)`` →
    ``(N, C, H, W)``, summing overlaps.

    >>> nn.Fold((4, 4), 2, stride=2)(tl.randn(1, 12, 4)).shape
    (1, 3, 4, 4)
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self):
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )
