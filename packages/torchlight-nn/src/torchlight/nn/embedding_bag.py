"""``EmbeddingBag``: the sum, mean or max of the embeddings of each *bag* of indices, without
materialising the ``(bags, bag_size, dim)`` tensor of looked-up rows.

Bags come either as the rows of a 2-D ``input (B, N)`` or as one flat 1-D ``input`` cut at
``offsets`` (bag ``b`` is ``input[offsets[b]:offsets[b+1]]``). With ``E`` the looked-up rows
(one per index) and ``S`` the ``(B, n)`` 0/1 matrix saying which index belongs to which bag::

    sum:  S E        mean: (S E) / |bag|        max: elementwise max over each bag's rows

``per_sample_weights`` (``mode='sum'`` only) scale each row first; indices equal to
``padding_idx`` are left out (and do not count towards ``|bag|``); an empty bag gives zeros.
"""

import numpy as np

import torchlight as tl

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["embedding_bag", "EmbeddingBag"]


def _bags(input, offsets, include_last_offset):
    """The flat indices and, per index, its bag number (numpy), plus the bag count."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None")
        b, n = input.shape
        return input.reshape(-1), np.repeat(np.arange(b), n), b
    if input.ndim != 1 or offsets is None:
        raise ValueError("embedding_bag: a 1-D input needs offsets (the start of each bag)")
    starts = np.asarray(
        offsets.tolist() if isinstance(offsets, tl.Tensor) else offsets, dtype=np.int64
    )
    n = input.shape[0]
    if include_last_offset:
        starts, bags = starts[:-1], len(starts) - 1
    else:
        bags = len(starts)
    if bags and (starts[0] != 0 or np.any(np.diff(starts) < 0) or starts[-1] > n):
        raise ValueError(
            f"embedding_bag: offsets must start at 0 and be non-decreasing within {n}, got {starts}"
        )
    bag_of = np.searchsorted(starts, np.arange(n), side="right") - 1
    return input, bag_of, bags


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """``(bags, dim)``: the ``mode`` reduction of each bag's embeddings (see the module docstring).

    >>> w = tl.arange(8.0).reshape(4, 2)
    >>> F.embedding_bag(tl.tensor([0, 1, 3]), w, tl.tensor([0, 2]), mode="sum").tolist()
    [[2.0, 4.0], [6.0, 7.0]]
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}')"
        )
    flat, bag_of, bags = _bags(input, offsets, include_last_offset)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    rows = F.embedding(flat, weight, None, max_norm, norm_type)  # (n, D)
    keep = (
        np.ones(len(bag_of), dtype=bool)
        if padding_idx is None
        else np.asarray(flat.tolist()) != padding_idx
    )
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    if mode == "max":
        out = []
        for b in range(bags):
            members = np.nonzero((bag_of == b) & keep)[0]
            if len(members):
                out.append(rows.index_select(0, tl.tensor(members, device=rows.device)).amax(0))
            else:
                out.append(tl.zeros(weight.shape[1], dtype=weight.dtype, device=weight.device))
        return tl.stack(out, 0) if out else tl.zeros(0, weight.shape[1], dtype=weight.dtype)
    member = np.zeros((bags, len(bag_of)))
    member[bag_of[keep], np.nonzero(keep)[0]] = 1.0
    if mode == "mean":
        member /= np.maximum(member.sum(1, keepdims=True), 1.0)
    return tl.tensor(member, dtype=rows.dtype, device=rows.device) @ rows


class EmbeddingBag(Module):
    """``EmbeddingBag(num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
    scale_grad_by_freq=False, mode='mean', sparse=False, _weight=None, include_last_offset=False,
    padding_idx=None)``; ``forward(input, offsets=None, per_sample_weights=None) -> (bags, dim)``.

    >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
    >>> bag(tl.tensor([1, 2, 4, 5, 4, 3, 2, 9]), tl.tensor([0, 4])).shape
    (2, 3)
    """

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "EmbeddingBag: scale_grad_by_freq and sparse gradients are not supported"
            )
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"padding_idx must be within num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.mode = num_embeddings, embedding_dim, mode
        self.max_norm, self.norm_type, self.padding_idx = max_norm, norm_type, padding_idx
        self.scale_grad_by_freq, self.sparse, self.include_last_offset = (
            scale_grad_by_freq,
            sparse,
            include_last_offset,
        )
        if _weight is None:
            self.weight = Parameter(
                tl.empty(num_embeddings, embedding_dim, dtype=dtype, device=device)
            )
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        r"""Re-draw ``weight`` from :math:`\mathcal N(0, 1)`, with the ``padding_idx`` row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tl.no_grad():
                self.weight[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        include_last_offset=False,
        padding_idx=None,
    ):
        """An embedding bag whose weight is ``embeddings`` (2-D), frozen by default."""
        rows, cols = embeddings.shape
        bag = cls(
            rows,
            cols,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            mode,
            sparse,
            embeddings.detach(),
            include_last_offset,
            padding_idx,
        )
        bag.weight.requires_grad_(not freeze)
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        return embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            False,
            self.mode,
            False,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
