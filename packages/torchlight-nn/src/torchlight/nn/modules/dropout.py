"""``torchlight.nn.modules.dropout``: the import path of ``torch.nn.modules.dropout`` (the same classes as
``torchlight.nn``)."""

from ..linear import Dropout

__all__ = ["Dropout"]
