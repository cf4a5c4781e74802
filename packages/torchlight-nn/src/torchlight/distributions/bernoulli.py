"""``Bernoulli(probs=None, logits=None)``: ``1`` with probability ``p``, ``0`` otherwise.

With the logit ``ℓ = logit(p)``::

    log p(x) = x·ℓ − softplus(ℓ)           (ℓ = logit(p); stable for large |ℓ|)
    H = softplus(ℓ) − p·ℓ,   mean = p,   var = p(1 − p)
"""

import torchlight as tl

from .distribution import Distribution

__all__ = ["Bernoulli"]

_EPS = 1e-7  # probs are clamped to [eps, 1 − eps] before taking the logit


def _softplus(x):
    return x.softplus(1.0, None)  # the backend's stable max(x, 0) + log1p(exp(−|x|))


class Bernoulli(Distribution):
    """``Bernoulli(probs=None, logits=None)``; samples are floats 0.0/1.0 of the batch's shape.

    >>> from torchlight.distributions import Bernoulli
    >>> d = Bernoulli(probs=tl.tensor([0.0, 1.0]))
    >>> d.sample().tolist()
    [0.0, 1.0]
    >>> round(Bernoulli(logits=tl.tensor(0.0)).entropy().item(), 4)
    0.6931
    """

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Bernoulli: pass exactly one of probs or logits")
        if probs is not None:
            probs = probs if isinstance(probs, tl.Tensor) else tl.tensor(float(probs))
            self.probs = probs
            p = probs.clamp(_EPS, 1 - _EPS)
            self.logits = p.log() - (1 - p).log()
        else:
            logits = logits if isinstance(logits, tl.Tensor) else tl.tensor(float(logits))
            self.logits, self.probs = logits, logits.sigmoid()
        super().__init__(self.probs.shape, (), validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        """The most likely outcome: 1 where ``probs > 0.5``, else 0 (0 on a tie)."""
        return (self.probs > 0.5).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tl.no_grad():
            u = tl.rand(*shape, dtype=self.probs.dtype, device=self.probs.device)
            return (u < self.probs.detach()).to(self.probs.dtype)

    def log_prob(self, value):
        return value * self.logits - _softplus(self.logits)

    def entropy(self):
        return _softplus(self.logits) - self.probs * self.logits
