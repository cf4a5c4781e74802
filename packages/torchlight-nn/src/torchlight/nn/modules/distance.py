"""``torchlight.nn.modules.distance``: the import path of ``torch.nn.modules.distance`` (the same classes as
``torchlight.nn``)."""

from ..distance import CosineSimilarity, PairwiseDistance

__all__ = ["CosineSimilarity", "PairwiseDistance"]
