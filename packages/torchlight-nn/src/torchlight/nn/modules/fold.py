"""``torchlight.nn.modules.fold``: the import path of ``torch.nn.modules.fold`` (the same classes as
``torchlight.nn``)."""

from ..fold import Fold, Unfold

__all__ = ["Fold", "Unfold"]
