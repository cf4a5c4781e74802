"""``torchlight.nn.modules.instancenorm``: the import path of ``torch.nn.modules.instancenorm`` (the same
classes as ``torchlight.nn``)."""

from ..normalization import InstanceNorm1d, InstanceNorm2d

__all__ = ["InstanceNorm1d", "InstanceNorm2d"]
