"""``Categorical(probs=None, logits=None)``: one of ``K`` classes, over the last dim::

    p_k = probs_k / Σ_j probs_j      or      log p_k = logits_k − logsumexp(logits)
    log p(k) = log p_k,   H = −Σ_k p_k log p_k

Sampling is inverse-CDF: ``k = #{j : u > P_j}`` for ``u ~ U(0, 1)`` and the cumulative
probabilities ``P_j = Σ_{i≤j} p_i`` (a matmul with a triangular matrix of ones, so it runs on
any device).
"""

import numpy as np

import torchlight as tl

from .distribution import Distribution

__all__ = ["Categorical"]


def _probs_and_logits(probs, logits, name):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: pass exactly one of probs or logits")
    if probs is not None:
        if probs.ndim < 1:
            raise ValueError(f"{name}: probs must have at least one dimension")
        probs = probs / probs.sum(-1, keepdim=True)
        # a zero probability gets the most negative finite logit instead of log 0 = −inf
        tiny = float(np.finfo(np.float64 if probs.dtype is tl.float64 else np.float32).tiny)
        return probs, probs.clamp(min=tiny).log()
    logits = logits - logits.logsumexp(-1, keepdim=True)
    return logits.exp(), logits


class Categorical(Distribution):
    """``Categorical(probs=None, logits=None)``: ``probs`` (non-negative, normalised here) or
    ``logits`` (unnormalised log-probabilities), shape ``batch_shape + (K,)``. Samples are int64
    class indices of shape ``sample_shape + batch_shape``.

    >>> from torchlight.distributions import Categorical
    >>> d = Categorical(probs=tl.tensor([0.0, 1.0, 0.0]))
    >>> d.sample((4,)).tolist()
    [1, 1, 1, 1]
    >>> round(Categorical(logits=tl.zeros(4)).entropy().item(), 4)
    1.3863
    """

    def __init__(self, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _probs_and_logits(probs, logits, "Categorical")
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1], (), validate_args)

    @property
    def param_shape(self):
        """The shape of ``probs`` (and ``logits``): ``batch_shape + (num_categories,)``."""
        return tuple(self.probs.shape)

    @property
    def mean(self):
        raise NotImplementedError("Categorical has no mean (its values are labels)")

    @property
    def mode(self):
        """The most likely category, ``probs.argmax(-1)`` (the first on a tie)."""
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        k = self._num_events
        with tl.no_grad():
            p = self.probs.detach()
            cdf = p @ tl.ones(k, k, dtype=p.dtype, device=p.device).triu()  # P_j = Σ_{i≤j} p_i
            shape = tuple(sample_shape) + self._batch_shape
            u = tl.rand(*shape, 1, dtype=p.dtype, device=p.device)
            # u > P_j for exactly the classes before the drawn one
            idx = (u > cdf.expand(*shape, k)).to(tl.int64).sum(-1)
            return idx.clamp(max=k - 1)

    def log_prob(self, value):
        value = value.to(tl.int64)
        shape = tuple(np.broadcast_shapes(tuple(value.shape), self._batch_shape))
        logits = self.logits.expand(*shape, self._num_events)
        return logits.gather(-1, value.expand(*shape).unsqueeze(-1)).squeeze(-1)

    def entropy(self):
        # 0·log 0 = 0: a zero probability contributes nothing (its log is −inf)
        plogp = tl.where(self.probs > 0, self.probs * self.logits, 0.0)
        return -plogp.sum(-1)

    def enumerate_support(self):
        """The classes ``0 .. K−1``, shaped ``(K,) + (1,)*len(batch_shape)`` and expanded over the batch."""
        values = tl.arange(self._num_events, device=self.probs.device)
        values = values.reshape((self._num_events,) + (1,) * len(self._batch_shape))
        return values.expand(self._num_events, *self._batch_shape)
