"""``Independent(base, reinterpreted_batch_ndims)``: treat the last batch dims of ``base`` as one
event, e.g. a diagonal Gaussian from a batch of ``Normal``\\ s::

    batch_shape = base.batch_shape[:-k],  event_shape = base.batch_shape[-k:] + base.event_shape
    log p(x) = Σ over the last k batch dims of base.log_prob(x),  H = Σ of base.entropy()
"""

from .distribution import Distribution

__all__ = ["Independent"]


class Independent(Distribution):
    """``Independent(base_distribution, reinterpreted_batch_ndims)``.

    >>> from torchlight.distributions import Independent, Normal
    >>> d = Independent(Normal(tl.zeros(4, 3), 1.0), 1)
    >>> d.batch_shape, d.event_shape, d.log_prob(tl.zeros(4, 3)).shape
    ((4,), (3,), (4,))
    """

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        k = int(reinterpreted_batch_ndims)
        shape = base_distribution.batch_shape
        if not 0 <= k <= len(shape):
            raise ValueError(
                f"Independent: reinterpreted_batch_ndims ({k}) must be in [0, {len(shape)}] for batch "
                f"shape {shape}"
            )
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, k
        self.has_rsample = base_distribution.has_rsample
        split = len(shape) - k
        super().__init__(
            shape[:split], shape[split:] + base_distribution.event_shape, validate_args
        )

    def _sum_rightmost(self, value):
        k = self.reinterpreted_batch_ndims
        return value if k == 0 else value.sum(tuple(range(value.ndim - k, value.ndim)))

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._sum_rightmost(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum_rightmost(self.base_dist.entropy())
