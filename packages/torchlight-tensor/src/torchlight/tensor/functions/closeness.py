"""Comparing whole tensors: ``isclose``, ``allclose``, ``equal``.

``isclose`` is PyTorch's (and numpy's) test ``|a - b| <= atol + rtol·|b|``, elementwise, with
infinities close only to themselves and NaN close to NaN only when ``equal_nan``.
"""

from .pointwise import operands

__all__ = ["isclose", "allclose", "equal"]


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol·|other|`` (bool tensor, broadcast shape).

    >>> import torchlight as tl
    >>> tl.isclose(tl.tensor([1.0, 2.0]), tl.tensor([1.0 + 1e-7, 2.1])).tolist()
    [True, False]
    """
    a, b = operands(input.detach(), other.detach() if hasattr(other, "detach") else other)
    if not a.dtype.is_floating_point:
        return a == b
    inf = float("inf")
    both_finite = (a.abs() < inf) & (b.abs() < inf)  # False for NaN too
    # compare finite values only (zeros stand in elsewhere: inf - inf would warn and give NaN)
    fa, fb = a.masked_fill(~both_finite, 0.0), b.masked_fill(~both_finite, 0.0)
    within = both_finite & ((fa - fb).abs() <= atol + rtol * fb.abs())
    close = (a == b) | within  # a == b: equal infinities
    if equal_nan:
        close = close | ((a != a) & (b != b))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is :func:`isclose` (a Python bool).

    >>> import torchlight as tl
    >>> tl.allclose(tl.ones(3), tl.ones(3) + 1e-9)
    True
    """
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    """True when both tensors have the same shape and the same values (a Python bool).

    >>> import torchlight as tl
    >>> tl.equal(tl.tensor([1, 2]), tl.tensor([1, 2])), tl.equal(tl.ones(2), tl.ones(3))
    (True, False)
    """
    if input.shape != other.shape:
        return False
    return bool((input.detach() == other.detach()).all().item()) if input.numel() else True
