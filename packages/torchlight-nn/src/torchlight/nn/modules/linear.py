"""``torchlight.nn.modules.linear``: the import path of ``torch.nn.modules.linear`` (the same classes as
``torchlight.nn``)."""

from ..linear import Bilinear, Identity, Linear

__all__ = ["Bilinear", "Identity", "Linear"]
