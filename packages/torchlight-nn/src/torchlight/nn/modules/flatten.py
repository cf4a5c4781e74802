"""``torchlight.nn.modules.flatten``: the import path of ``torch.nn.modules.flatten`` (the same classes as
``torchlight.nn``)."""

from ..linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
