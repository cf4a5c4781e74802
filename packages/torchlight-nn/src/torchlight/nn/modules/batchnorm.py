"""``torchlight.nn.modules.batchnorm``: the import path of ``torch.nn.modules.batchnorm`` (the same classes as
``torchlight.nn``)."""

from ..normalization import BatchNorm1d, BatchNorm2d

__all__ = ["BatchNorm1d", "BatchNorm2d"]
