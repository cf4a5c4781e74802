"""``torchlight.nn.modules.container``: the import path of ``torch.nn.modules.container`` (the same classes as
``torchlight.nn``)."""

from ..container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
