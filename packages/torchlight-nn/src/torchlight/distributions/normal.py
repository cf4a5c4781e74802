"""``Normal(loc, scale)``: the Gaussian ``N(μ, σ²)``.

The formulas::

    log p(x) = −(x − μ)² / (2σ²) − log σ − ½ log(2π)
    H = ½ + ½ log(2π) + log σ
    rsample = μ + σ·ε,  ε ~ N(0, 1)      (reparameterised: differentiable in μ and σ)
"""

import math

import torchlight as tl

from .distribution import Distribution, broadcast_all

__all__ = ["Normal"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(Distribution):
    """``Normal(loc, scale)``: mean ``loc``, standard deviation ``scale`` (> 0); both broadcast.

    >>> from torchlight.distributions import Normal
    >>> d = Normal(tl.zeros(2), 1.0)
    >>> d.sample((5,)).shape
    (5, 2)
    >>> [round(v, 4) for v in d.log_prob(tl.zeros(2)).tolist()]
    [-0.9189, -0.9189]
    """

    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if validate_args is not False and bool((self.scale.detach() <= 0).any().item()):
            raise ValueError("Normal: scale must be positive")
        super().__init__(self.loc.shape, (), validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        """The most likely value, ``loc`` (equal to the mean)."""
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = tl.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        var = self.scale * self.scale
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _HALF_LOG_2PI

    def entropy(self):
        return self.scale.log() + (0.5 + _HALF_LOG_2PI)
