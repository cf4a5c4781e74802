"""``torchlight.nn.modules.module``: the import path of ``torch.nn.modules.module`` (the same classes as
``torchlight.nn``)."""

from ..module import Module

__all__ = ["Module"]
