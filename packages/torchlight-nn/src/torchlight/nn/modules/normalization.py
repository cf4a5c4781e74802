"""``torchlight.nn.modules.normalization``: the import path of ``torch.nn.modules.normalization`` (the same classes as
``torchlight.nn``)."""

from ..normalization import GroupNorm, LayerNorm, RMSNorm

__all__ = ["GroupNorm", "LayerNorm", "RMSNorm"]
