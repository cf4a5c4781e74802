"""``torchlight.nn.modules.padding``: the import path of ``torch.nn.modules.padding`` (the same
classes as ``torchlight.nn``)."""

from ..padding import ConstantPad1d, ConstantPad2d, ZeroPad1d, ZeroPad2d

__all__ = ["ConstantPad1d", "ConstantPad2d", "ZeroPad1d", "ZeroPad2d"]
