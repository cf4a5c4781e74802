"""``Distribution``: the interface every distribution shares (PyTorch's ``torch.distributions``).

A distribution has a ``batch_shape`` (independent distributions with different parameters,
e.g. one Normal per output unit) and an ``event_shape`` (the shape of one draw: ``()`` for the
scalar distributions here). ``sample(sample_shape)`` returns ``sample_shape + batch_shape +
event_shape``; ``log_prob(value)`` broadcasts ``value`` against the batch and returns one log
density per event. ``sample`` is detached from autograd; ``rsample`` (where it exists) uses the
reparameterisation trick so gradients flow back to the parameters.
"""

import numpy as np

import torchlight as tl
from torchlight import Tensor

__all__ = ["Distribution", "broadcast_all"]


def broadcast_all(*values):
    """Tensors of one broadcast shape from tensors and Python numbers (numbers take the dtype and
    device of the first tensor, float32 when there is none).

    >>> from torchlight.distributions.distribution import broadcast_all
    >>> a, b = broadcast_all(tl.zeros(3), 1.0)
    >>> b.shape
    (3,)
    """
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None and like.dtype.is_floating_point else tl.float32
    device = like.device if like is not None else None
    tensors = [
        v if isinstance(v, Tensor) else tl.tensor(float(v), dtype=dtype, device=device)
        for v in values
    ]
    shape = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    return [t if tuple(t.shape) == shape else t.expand(*shape) for t in tensors]


class Distribution:
    """Base class: subclasses set ``batch_shape``/``event_shape`` and implement ``sample`` or
    ``rsample``, ``log_prob``, ``entropy``, ``mean`` and ``variance``."""

    has_rsample = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        self._validate_args = validate_args

    @property
    def batch_shape(self):
        """The shape of the batch of independent distributions this object holds (the broadcast shape
        of its parameters).
        """
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one draw from one distribution of the batch: ``()`` for a scalar
        distribution, ``(k,)`` for a ``k``-dimensional one.
        """
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with tl.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        r"""A *reparameterised* sample of shape ``sample_shape + batch_shape + event_shape``: a
        differentiable function of the parameters and parameter-free noise (:math:`x = \mu + \sigma\epsilon`
        for a normal), so gradients flow from the sample back to the parameters. Distributions that
        cannot be reparameterised (discrete ones) raise ``NotImplementedError``: use :meth:`sample`.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterised sampler (use sample())"
        )

    def sample_n(self, n):
        """``n`` samples stacked along a new first dimension: ``sample((n,))``."""
        return self.sample((n,))

    def log_prob(self, value):
        r"""The log-density (or log-probability for a discrete distribution) :math:`\log p(x)` of
        ``value``: the value's shape without its trailing ``event_shape`` dimensions, broadcast with
        ``batch_shape``. Differentiable with respect to the parameters.
        """
        raise NotImplementedError

    def entropy(self):
        r"""The entropy :math:`H = -\mathrm{E}[\log p(X)]` (nats), one value per distribution of the batch."""
        raise NotImplementedError

    @property
    def mean(self):
        r"""The expected value :math:`\mathrm{E}[X]`, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError

    @property
    def variance(self):
        r"""The variance :math:`\mathrm{Var}[X]`, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError

    @property
    def stddev(self):
        """``sqrt(variance)``."""
        return self.variance.sqrt()

    def __repr__(self):
        return f"{type(self).__name__}(batch_shape={self._batch_shape}, event_shape={self._event_shape})"
