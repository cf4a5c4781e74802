"""Distance modules: ``CosineSimilarity`` and ``PairwiseDistance`` (formulas in
:func:`~torchlight.nn.functional.cosine_similarity` and
:func:`~torchlight.nn.functional.pairwise_distance`)."""

from . import functional as F
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """``CosineSimilarity(dim=1, eps=1e-8)``: ``x1·x2 / max(‖x1‖ ‖x2‖, eps)`` along ``dim``.

    >>> nn.CosineSimilarity(dim=1)(tl.ones(3, 4), tl.ones(3, 4)).tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``PairwiseDistance(p=2.0, eps=1e-6, keepdim=False)``: ``‖x1 − x2 + eps‖_p`` over the last dim.

    >>> nn.PairwiseDistance()(tl.zeros(2, 3), tl.zeros(2, 3)).shape
    (2,)
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
