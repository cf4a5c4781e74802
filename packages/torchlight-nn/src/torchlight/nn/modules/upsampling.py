"""``torchlight.nn.modules.upsampling``: the import path of ``torch.nn.modules.upsampling`` (the same
classes as ``torchlight.nn``)."""

from ..upsampling import Upsample

__all__ = ["Upsample"]
