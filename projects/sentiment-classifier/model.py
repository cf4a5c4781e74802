"""The three sentence classifiers, each a ``torchlight.nn.Module`` mapping a batch to ``(B, 2)`` logits.

* ``MeanPoolClassifier`` (``--model mean``, the seed's design): word embedding → masked mean
  over the real tokens → MLP.
* ``BagClassifier`` (``--model bag``): TF-IDF (optionally NB-scaled) word + character n-gram
  bag. The embedding of every n-gram is summed with its weight (a sparse ``x · E`` product):
  with ``hidden=0`` the table has two columns and the sum *is* the logits (logistic regression
  trained with torchlight); with ``hidden=H`` it is a hidden layer followed by ReLU and a linear.
* ``TextCNN`` (``--model cnn``): word embedding → parallel ``Conv1d`` of several widths → ReLU →
  max over the real positions → dropout → linear (Kim, 2014).
"""

from __future__ import annotations

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def _mlp(d_in: int, hidden: int, dropout: float, n_classes: int = 2) -> nn.Module:
    if hidden <= 0:
        return nn.Sequential(nn.Dropout(dropout), nn.Linear(d_in, n_classes))
    return nn.Sequential(
        nn.Dropout(dropout),
        nn.Linear(d_in, hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, n_classes),
    )


class MeanPoolClassifier(nn.Module):
    def __init__(self, num_ids: int, embed_dim: int = 64, hidden: int = 64, dropout: float = 0.3):
        super().__init__()
        self.embed = nn.Embedding(num_ids, embed_dim, padding_idx=0)
        with tl.no_grad():  # N(0, 1) rows are large next to a mean of a few words; start smaller
            self.embed.weight.mul_(0.1)
        self.head = _mlp(embed_dim, hidden, dropout)

    def forward(self, ids, lengths):
        mask = (ids != 0).to(tl.float32).unsqueeze(-1)  # (B, L, 1)
        summed = (self.embed(ids) * mask).sum(1)  # (B, D)
        pooled = summed / lengths.to(tl.float32).clamp(min=1.0).unsqueeze(-1)
        return self.head(pooled)


class BagClassifier(nn.Module):
    """``hidden=0``: logits = Σ_f w_f E[f] + b with a ``(num_ids, 2)`` table — logistic regression on
    the weighted bag. ``hidden=H``: h = ReLU(Σ_f w_f E[f] + b) with an ``(num_ids, H)`` table, then
    dropout and ``Linear(H, 2)`` — a one-hidden-layer MLP on the bag (fastText-like)."""

    def __init__(self, num_ids: int, hidden: int = 0, dropout: float = 0.0):
        super().__init__()
        self.hidden = hidden
        width = hidden if hidden > 0 else 2
        self.embed = nn.Embedding(num_ids, width, padding_idx=0)
        with tl.no_grad():
            self.embed.weight.mul_(0.0 if hidden <= 0 else 0.05)
        self.bias = nn.Parameter(tl.zeros(width))
        if hidden > 0:
            self.drop = nn.Dropout(dropout)
            self.out = nn.Linear(hidden, 2)

    def forward(self, ids, weights):
        # weights are 0 on padding, so padding contributes nothing (and its row stays 0 anyway)
        z = (self.embed(ids) * weights.unsqueeze(-1)).sum(1) + self.bias
        if self.hidden <= 0:
            return z
        return self.out(self.drop(F.relu(z)))


class TextCNN(nn.Module):
    def __init__(
        self,
        num_ids: int,
        embed_dim: int = 64,
        channels: int = 64,
        widths=(2, 3, 4),
        dropout: float = 0.5,
    ):
        super().__init__()
        self.widths = tuple(widths)
        self.embed = nn.Embedding(num_ids, embed_dim, padding_idx=0)
        with tl.no_grad():
            self.embed.weight.mul_(0.1)
        self.convs = nn.ModuleList(
            [nn.Conv1d(embed_dim, channels, w, padding=w // 2) for w in self.widths]
        )
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(channels * len(self.widths), 2)

    def forward(self, ids, lengths):
        x = self.embed(ids).permute(0, 2, 1)  # (B, D, L)
        L = ids.shape[1]
        pooled = []
        # max over real positions only: padded positions are pushed down before the max
        valid = (
            (tl.arange(L, device=ids.device).unsqueeze(0) < lengths.unsqueeze(1))
            .to(tl.float32)
            .unsqueeze(1)
        )  # (B, 1, L)
        for conv in self.convs:
            # padding w//2 each side; the first L outputs: position p sees tokens p - w//2 .. p - w//2 + w - 1
            h = F.relu(conv(x))[:, :, :L]  # (B, C, L)
            pooled.append((h * valid - (1.0 - valid) * 1e4).amax(-1))
        return self.out(self.drop(tl.cat(pooled, 1)))


MODELS = {"mean": MeanPoolClassifier, "bag": BagClassifier, "cnn": TextCNN}
ENCODING = {"mean": "tokens", "bag": "bag", "cnn": "tokens"}


def build_model(kind: str, num_ids: int, cfg: dict) -> nn.Module:
    if kind == "mean":
        return MeanPoolClassifier(num_ids, cfg["embed_dim"], cfg["hidden"], cfg["dropout"])
    if kind == "bag":
        return BagClassifier(num_ids, cfg["hidden"], cfg["dropout"])
    if kind == "cnn":
        return TextCNN(num_ids, cfg["embed_dim"], cfg["channels"], cfg["widths"], cfg["dropout"])
    raise ValueError(f"unknown model {kind!r}; choose from {sorted(MODELS)}")
