"""Sampling from distributions given as tensors: ``multinomial``, ``bernoulli``.

Like every random factory, the draws come from torchlight's generator (``tl.manual_seed`` makes
them reproducible; ``generator=`` takes a :class:`~torchlight.Generator`) on the host, and the
result is handed to the input's (or the requested) device once. None of these has a gradient.
"""

import numpy as np

from . import dtypes
from .creation import from_numpy_on
from .errors import DTypeError, ShapeError
from .random import host_drawn, rng_of

__all__ = ["multinomial", "bernoulli"]


def _host_probs(input, name):
    if not input.dtype.is_floating_point:
        raise DTypeError(
            f"{name}: probabilities must be a floating point tensor, got {input.dtype}"
        )
    p = np.array(input.backend.to_numpy(input._td), dtype=np.float64)
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ShapeError(f"{name}: probabilities must be finite and non-negative")
    return p


def multinomial(input, num_samples, replacement=False, generator=None):
    """Draw ``num_samples`` category indices from the (unnormalised) weights in each row.

    ``input`` is 1-D (one distribution over its ``n`` categories) or 2-D (one per row); the
    result is int64 of shape ``(num_samples,)`` or ``(rows, num_samples)``. Without replacement
    a category is drawn at most once per row, so ``num_samples <= n`` and at least
    ``num_samples`` weights of each row must be positive.

    >>> import torchlight as tl
    >>> _ = tl.manual_seed(0)
    >>> s = tl.multinomial(tl.tensor([0.0, 1.0, 0.0]), 4, replacement=True)
    >>> s.tolist()
    [1, 1, 1, 1]
    """
    if input.ndim not in (1, 2):
        raise ShapeError(f"multinomial: input must be 1-D or 2-D, got shape {input.shape}")
    num_samples = int(num_samples)
    if num_samples <= 0:
        raise ShapeError(f"multinomial: num_samples must be positive, got {num_samples}")
    p = _host_probs(input, "multinomial")
    rows = p.reshape(-1, p.shape[-1])
    n = rows.shape[1]
    if not replacement and num_samples > n:
        raise ShapeError(
            f"multinomial: cannot draw {num_samples} samples without replacement from {n} categories"
        )
    rng = rng_of(generator)
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for r, w in enumerate(rows):
        total = w.sum()
        if total <= 0:
            raise ShapeError(
                f"multinomial: row {r} of the weights sums to 0; every row needs a positive weight"
            )
        if not replacement and np.count_nonzero(w) < num_samples:
            raise ShapeError(
                f"multinomial: row {r} has {np.count_nonzero(w)} positive weights, fewer than the "
                f"{num_samples} samples asked for without replacement"
            )
        out[r] = rng.choice(n, size=num_samples, replace=replacement, p=w / total)
    return from_numpy_on(
        out.reshape(p.shape[:-1] + (num_samples,)), input.backend, dtypes.int64, like=input
    )


def bernoulli(input, p=None, generator=None):
    """``1`` with probability ``p`` (default: the values of ``input``), else ``0``; ``input``'s
    shape and dtype.

    >>> import torchlight as tl
    >>> tl.bernoulli(tl.tensor([0.0, 1.0, 1.0])).tolist()
    [0.0, 1.0, 1.0]
    """
    if p is None:
        probs = _host_probs(input, "bernoulli")
    else:
        probs = np.full(input.shape, float(p))
    if np.any(probs > 1) or np.any(probs < 0):
        raise ShapeError("bernoulli: probabilities must lie in [0, 1]")
    return host_drawn(
        lambda: (rng_of(generator).random(input.shape) < probs).astype(input.dtype.np),
        lambda a: from_numpy_on(a, input.backend, input.dtype, like=input),
    )
