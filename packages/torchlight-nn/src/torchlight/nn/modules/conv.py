"""``torchlight.nn.modules.conv``: the import path of ``torch.nn.modules.conv`` (the same classes as
``torchlight.nn``)."""

from ..conv import Conv1d, Conv2d
from ..conv_transpose import ConvTranspose1d, ConvTranspose2d

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]
