"""``torchlight.nn.modules.dropout``: the import path of ``torch.nn.modules.dropout`` (the same classes as
``torchlight.nn``)."""

from ..linear import Dropout, Dropout1d, Dropout2d

__all__ = ["Dropout", "Dropout1d", "Dropout2d"]
