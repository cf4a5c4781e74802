"""``torchlight.nn.modules.linear``: the import path of ``torch.nn.modules.linear`` (the same classes as
``torchlight.nn``)."""

from ..linear import Identity, Linear

__all__ = ["Identity", "Linear"]
