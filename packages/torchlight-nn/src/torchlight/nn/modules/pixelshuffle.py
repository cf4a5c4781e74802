"""``torchlight.nn.modules.pixelshuffle``: the import path of ``torch.nn.modules.pixelshuffle`` (the same
classes as ``torchlight.nn``)."""

from ..upsampling import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
