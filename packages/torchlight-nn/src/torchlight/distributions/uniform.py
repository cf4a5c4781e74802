"""``Uniform(low, high)`` on ``[low, high)``.

The formulas::

    log p(x) = −log(high − low) inside, −inf outside
    H = log(high − low),   mean = (low + high)/2,   var = (high − low)²/12
    rsample = low + (high − low)·u,  u ~ U(0, 1)
"""

import math

import torchlight as tl

from .distribution import Distribution, broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """``Uniform(low, high)`` with ``low < high`` (broadcast).

    >>> from torchlight.distributions import Uniform
    >>> d = Uniform(0.0, 4.0)
    >>> round(d.log_prob(tl.tensor(1.0)).item(), 4), round(d.entropy().item(), 4)
    (-1.3863, 1.3863)
    """

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        if validate_args is not False and bool(
            (self.high.detach() <= self.low.detach()).any().item()
        ):
            raise ValueError("Uniform: low must be less than high")
        super().__init__(self.low.shape, (), validate_args)

    @property
    def mean(self):
        return (self.low + self.high) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = tl.rand(*shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        inside = (value >= self.low) * (value < self.high)
        return tl.where(inside, -(self.high - self.low).log(), -math.inf)

    def cdf(self, value):
        """``clamp((x − low)/(high − low), 0, 1)``."""
        return ((value - self.low) / (self.high - self.low)).clamp(0.0, 1.0)

    def entropy(self):
        return (self.high - self.low).log()
