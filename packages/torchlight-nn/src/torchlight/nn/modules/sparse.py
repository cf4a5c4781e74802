"""``torchlight.nn.modules.sparse``: the import path of ``torch.nn.modules.sparse`` (the same classes as
``torchlight.nn``)."""

from ..embedding_bag import EmbeddingBag
from ..linear import Embedding

__all__ = ["Embedding", "EmbeddingBag"]
