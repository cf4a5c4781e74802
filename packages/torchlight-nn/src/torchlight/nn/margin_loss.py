"""Margin, ranking and embedding losses, plus the Gaussian and Poisson negative log-likelihoods.

Per-element (or per-sample) definitions, PyTorch's; ``y ∈ {1, −1}`` marks similar/dissimilar pairs:

* ``margin_ranking_loss(x1, x2, y)``: ``max(0, −y·(x1 − x2) + margin)``
* ``hinge_embedding_loss(x, y)``: ``x`` if ``y = 1``, ``max(0, margin − x)`` if ``y = −1``
* ``soft_margin_loss(x, y)``: ``log(1 + exp(−y·x))``
* ``multilabel_soft_margin_loss(x, y)``: ``−(1/C)·Σ_c w_c [y_c log σ(x_c) + (1 − y_c) log σ(−x_c)]`` per sample
* ``multi_margin_loss(x, y)``: ``(1/C)·Σ_{c≠y} w_y·max(0, margin − x_y + x_c)^p`` per sample
* ``cosine_embedding_loss(x1, x2, y)``: ``1 − cos`` if ``y = 1``, ``max(0, cos − margin)`` if ``y = −1``,
  with ``cos = x1·x2 / sqrt((‖x1‖² + ε)(‖x2‖² + ε))`` per row, ``ε = 1e-12``
* ``triplet_margin_loss(a, p, n)``: ``max(d(a, p) − d(a, n) + margin, 0)``, ``d`` = ``pairwise_distance``
  (``swap``: ``d(a, n) ← min(d(a, n), d(p, n))``)
* ``gaussian_nll_loss(μ, y, σ²)``: ``½(log max(σ², eps) + (μ − y)²/max(σ², eps))`` (``+ ½ log 2π`` with ``full``)
* ``poisson_nll_loss(x, y)``: ``exp(x) − y·x`` (``log_input``) or ``x − y·log(x + eps)``; ``full`` adds
  Stirling's ``y log y − y + ½ log(2π y)`` where ``y > 1``

then ``reduction`` (``'mean'``, ``'sum'``, ``'none'``) as in :mod:`torchlight.nn.loss`.
"""

import math

import torchlight as tl

from .functional import logsigmoid, pairwise_distance, softplus
from .loss import _Loss, _reduce, _WeightedLoss, legacy_reduction_args

__all__ = [
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "cosine_embedding_loss",
    "triplet_margin_loss",
    "gaussian_nll_loss",
    "poisson_nll_loss",
    "MarginRankingLoss",
    "HingeEmbeddingLoss",
    "SoftMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "CosineEmbeddingLoss",
    "TripletMarginLoss",
    "GaussianNLLLoss",
    "PoissonNLLLoss",
]

_COS_EPS = 1e-12  # PyTorch's EPSILON in cosine_embedding_loss


@legacy_reduction_args
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """``max(0, −y·(x1 − x2) + margin)``: ``x1`` should rank above ``x2`` where ``y = 1``.

    >>> F.margin_ranking_loss(tl.tensor([1.0]), tl.tensor([0.0]), tl.tensor([-1.0])).item()
    1.0
    """
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


@legacy_reduction_args
def hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):
    """``x`` where ``y = 1``, ``max(0, margin − x)`` where ``y = −1`` (``x`` is usually a distance).

    >>> F.hinge_embedding_loss(tl.tensor([0.3, 0.3]), tl.tensor([1.0, -1.0]), reduction="none").tolist()
    [0.30000001192092896, 0.699999988079071]
    """
    loss = tl.where(target == 1, input, 0.0) + tl.where(
        target == -1, (margin - input).clamp(min=0.0), 0.0
    )
    return _reduce(loss, reduction)


@legacy_reduction_args
def soft_margin_loss(input, target, reduction="mean"):
    """``log(1 + exp(−y·x))``, the two-class logistic loss with labels ±1.

    >>> round(F.soft_margin_loss(tl.tensor([0.0]), tl.tensor([1.0])).item(), 4)
    0.6931
    """
    return _reduce(softplus(-target * input, threshold=None), reduction)


@legacy_reduction_args
def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):
    """Per sample ``−mean_c w_c [y_c log σ(x_c) + (1 − y_c) log σ(−x_c)]`` for ``(N, C)`` logits
    and 0/1 targets.

    >>> round(F.multilabel_soft_margin_loss(tl.zeros(1, 3), tl.tensor([[1.0, 0.0, 1.0]])).item(), 4)
    0.6931
    """
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(-1), reduction)


@legacy_reduction_args
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, reduction="mean"):
    """Multi-class hinge loss on ``(N, C)`` scores and class indices ``(N,)``: per sample
    ``Σ_{c ≠ y} w_y·max(0, margin − x_y + x_c)^p / C`` (``p`` is 1 or 2).

    >>> F.multi_margin_loss(tl.tensor([[0.1, 0.2, 0.4, 0.8]]), tl.tensor([3])).item()
    0.32499998807907104
    """
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p}")
    c = input.shape[-1]
    x_y = input.gather(-1, target.unsqueeze(-1))
    hinge = (margin - x_y + input).clamp(min=0.0)
    if p == 2:
        hinge = hinge * hinge
    others = (tl.arange(c, device=input.device) != target.unsqueeze(-1)).to(input.dtype)
    loss = (hinge * others).sum(-1) / c
    if weight is not None:
        loss = loss * weight.index_select(0, target.reshape(-1)).reshape(target.shape)
    return _reduce(loss, reduction)


@legacy_reduction_args
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """``1 − cos(x1, x2)`` for similar pairs (``y = 1``), ``max(0, cos − margin)`` for
    dissimilar ones (``y = −1``); rows of ``(N, D)`` inputs.

    >>> F.cosine_embedding_loss(tl.tensor([[1.0, 0.0]]), tl.tensor([[0.0, 1.0]]), tl.tensor([1.0])).item()
    1.0
    """
    dot = (input1 * input2).sum(-1)
    cos = (
        dot
        / (((input1 * input1).sum(-1) + _COS_EPS) * ((input2 * input2).sum(-1) + _COS_EPS)).sqrt()
    )
    loss = tl.where(target == 1, 1 - cos, 0.0) + tl.where(
        target == -1, (cos - margin).clamp(min=0.0), 0.0
    )
    return _reduce(loss, reduction)


@legacy_reduction_args
def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction="mean"
):
    """``max(d(a, p) − d(a, n) + margin, 0)`` with ``d(u, v) = ‖u − v + eps‖_p`` (Schroff et al.).

    >>> a = tl.zeros(1, 2); pos = tl.tensor([[0.0, 1.0]]); neg = tl.tensor([[3.0, 0.0]])
    >>> round(F.triplet_margin_loss(a, pos, neg, margin=3.0).item(), 4)
    1.0
    """
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = tl.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log-likelihood of ``target`` under ``N(input, var)``: ``½(log v + (μ − y)²/v)``
    with ``v = max(var, eps)``; ``var`` may also lack the last dim or have it of size 1 (one
    variance per sample). The clamp is invisible to autograd, as in PyTorch.

    >>> round(F.gaussian_nll_loss(tl.zeros(2), tl.ones(2), tl.ones(2)).item(), 4)
    0.5
    """
    if var.ndim == input.ndim - 1:
        var = var.unsqueeze(-1)
    if bool((var.detach() < 0).any().item()):
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    var = var + (var.detach().clamp(min=eps) - var.detach())  # clamped value, identity gradient
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@legacy_reduction_args
def poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-8, reduction="mean"):
    """Negative log-likelihood of counts ``target`` under a Poisson of rate ``exp(input)``
    (``log_input``) or ``input``; ``full`` adds Stirling's approximation of ``log(y!)``.

    >>> round(F.poisson_nll_loss(tl.zeros(1), tl.ones(1)).item(), 4)
    1.0
    """
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = tl.where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + tl.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


class MarginRankingLoss(_Loss):
    """``MarginRankingLoss(margin=0.0, reduction='mean')``: :func:`margin_ranking_loss`.

    >>> nn.MarginRankingLoss(0.5)(tl.tensor([1.0]), tl.tensor([0.0]), tl.tensor([1.0])).item()
    0.0
    """

    @legacy_reduction_args
    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``HingeEmbeddingLoss(margin=1.0, reduction='mean')``: :func:`hinge_embedding_loss`.

    >>> round(nn.HingeEmbeddingLoss()(tl.tensor([0.25]), tl.tensor([-1.0])).item(), 4)
    0.75
    """

    @legacy_reduction_args
    def __init__(self, margin=1.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input, target):
        return hinge_embedding_loss(input, target, self.margin, self.reduction)


class SoftMarginLoss(_Loss):
    """``SoftMarginLoss(reduction='mean')``: :func:`soft_margin_loss`.

    >>> round(nn.SoftMarginLoss()(tl.tensor([0.0]), tl.tensor([-1.0])).item(), 4)
    0.6931
    """

    def forward(self, input, target):
        return soft_margin_loss(input, target, self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """``MultiLabelSoftMarginLoss(weight=None, reduction='mean')``: :func:`multilabel_soft_margin_loss`.

    >>> round(nn.MultiLabelSoftMarginLoss()(tl.zeros(2, 3), tl.ones(2, 3)).item(), 4)
    0.6931
    """

    def forward(self, input, target):
        return multilabel_soft_margin_loss(input, target, self.weight, self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """``MultiMarginLoss(p=1, margin=1.0, weight=None, reduction='mean')``: :func:`multi_margin_loss`.

    >>> nn.MultiMarginLoss()(tl.tensor([[5.0, 0.0]]), tl.tensor([0])).item()
    0.0
    """

    @legacy_reduction_args
    def __init__(self, p=1, margin=1.0, weight=None, reduction="mean"):
        super().__init__(weight, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return multi_margin_loss(input, target, self.p, self.margin, self.weight, self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``CosineEmbeddingLoss(margin=0.0, reduction='mean')``: :func:`cosine_embedding_loss`.

    >>> nn.CosineEmbeddingLoss()(tl.ones(2, 3), tl.ones(2, 3), tl.tensor([1.0, 1.0])).item()
    0.0
    """

    @legacy_reduction_args
    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)


class TripletMarginLoss(_Loss):
    """``TripletMarginLoss(margin=1.0, p=2.0, eps=1e-6, swap=False, reduction='mean')``:
    :func:`triplet_margin_loss`.

    >>> nn.TripletMarginLoss()(tl.zeros(4, 8), tl.zeros(4, 8), tl.ones(4, 8)).item()
    0.0
    """

    @legacy_reduction_args
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return triplet_margin_loss(
            anchor, positive, negative, self.margin, self.p, self.eps, self.swap, self.reduction
        )


class GaussianNLLLoss(_Loss):
    """``GaussianNLLLoss(full=False, eps=1e-6, reduction='mean')``; ``forward(input, target, var)``.

    >>> round(nn.GaussianNLLLoss(full=True)(tl.zeros(3), tl.zeros(3), tl.ones(3)).item(), 4)
    0.9189
    """

    @legacy_reduction_args
    def __init__(self, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class PoissonNLLLoss(_Loss):
    """``PoissonNLLLoss(log_input=True, full=False, eps=1e-8, reduction='mean')``: :func:`poisson_nll_loss`.

    >>> round(nn.PoissonNLLLoss(log_input=False)(tl.ones(2), tl.ones(2)).item(), 4)
    1.0
    """

    @legacy_reduction_args
    def __init__(self, log_input=True, full=False, eps=1e-8, reduction="mean"):
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return poisson_nll_loss(
            log_input, target, self.log_input, self.full, self.eps, self.reduction
        )
