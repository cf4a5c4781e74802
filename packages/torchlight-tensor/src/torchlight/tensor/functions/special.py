"""Elementwise functions built from the contract's ops: ``log1p``, ``expm1``, ``log2``, ``log10``,
``exp2``, ``erf``; and the fused statistics ``var_mean``/``std_mean``.

``log1p(x) = log(1 + x)`` loses every digit of a tiny ``x`` when ``1 + x`` is rounded; Goldberg's
correction recovers them: with ``u = 1 + x`` (rounded), ``log1p(x) = log(u) · x / (u - 1)``, and
``x`` itself where ``u == 1``. The factor ``x / (u - 1)`` undoes exactly the rounding of ``u``.
Likewise ``expm1(x) = (u - 1) · x / log(u)`` with ``u = exp(x)``. Both are composites, so their
gradients (``1 / (1 + x)`` and ``exp(x)``) come from autograd. ``erf`` is a backend map op with
derivative ``2/√π · exp(-x²)``.
"""

import math

from ..dispatch import normalize_dims
from .pointwise import float_operand, unary

__all__ = ["log1p", "expm1", "log2", "log10", "exp2", "erf", "var_mean", "std_mean"]


def log1p(x):
    """``log(1 + x)``, accurate for tiny ``x``.

    >>> import torchlight as tl
    >>> tl.log1p(tl.tensor([1e-10], dtype=tl.float64)).item()  # log(1 + 1e-10) would give 1.000000082690371e-10
    9.999999999500001e-11
    """
    x = float_operand(x)
    u = x + 1.0
    small = u == 1.0
    safe = (u - 1.0).masked_fill(small, 1.0)
    return (u.log() * (x / safe)).where(~small, x)


def expm1(x):
    """``exp(x) - 1``, accurate for tiny ``x``.

    >>> import torchlight as tl
    >>> tl.expm1(tl.tensor([1e-10], dtype=tl.float64)).item()  # exp(1e-10) - 1 would give 1.000000082740371e-10
    1.00000000005e-10
    """
    x = float_operand(x)
    u = x.exp()
    small = u == 1.0
    log_u = u.log().masked_fill(small, 1.0)
    return ((u - 1.0) * (x / log_u)).where(~small, x)


def log2(x):
    """Base-2 logarithm.

    >>> import torchlight as tl
    >>> tl.log2(tl.tensor([8.0])).tolist()
    [3.0]
    """
    return float_operand(x).log() * (1.0 / math.log(2.0))


def log10(x):
    """Base-10 logarithm.

    >>> import torchlight as tl
    >>> round(tl.log10(tl.tensor([1000.0])).item(), 5)
    3.0
    """
    return float_operand(x).log() * (1.0 / math.log(10.0))


def exp2(x):
    """``2 ** x``.

    >>> import torchlight as tl
    >>> tl.exp2(tl.tensor([3.0])).tolist()
    [8.0]
    """
    return (float_operand(x) * math.log(2.0)).exp()


def erf(x):
    """The error function ``2/√π ∫₀ˣ exp(-t²) dt``.

    >>> import torchlight as tl
    >>> round(tl.erf(tl.tensor([0.5])).item(), 6)
    0.5205
    """
    return unary("erf", x)


def var_mean(x, dim=None, unbiased=True, keepdim=False, correction=None):
    """``(var, mean)`` over ``dim`` in one call (see ``Tensor.var``).

    >>> import torchlight as tl
    >>> v, m = tl.var_mean(tl.tensor([1.0, 2.0, 3.0]))
    >>> v.item(), m.item()
    (1.0, 2.0)
    """
    dims = normalize_dims(dim, x.ndim) if dim is not None else None
    return x.var(dims, unbiased, keepdim, correction), float_operand(x).mean(dims, keepdim)


def std_mean(x, dim=None, unbiased=True, keepdim=False, correction=None):
    """``(std, mean)`` over ``dim`` in one call.

    >>> import torchlight as tl
    >>> s, m = tl.std_mean(tl.tensor([1.0, 3.0]), correction=0)
    >>> s.item(), m.item()
    (1.0, 2.0)
    """
    v, m = var_mean(x, dim, unbiased, keepdim, correction)
    return v.sqrt(), m
