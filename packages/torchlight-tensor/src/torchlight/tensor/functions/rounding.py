"""Rounding and integer division: ``floor``, ``ceil``, ``trunc``, ``round``, ``floor_divide``
(``//``), ``remainder`` (``%``) and ``div(..., rounding_mode=)``.

The backend contract has no rounding primitive, so these are computed on the host (numpy) and
handed back to the tensor's device — correct on every backend, one round trip per call, which is
acceptable for what they are used for (index arithmetic, bucketing, quantisation). Rounding is
piecewise constant: its derivative is 0 wherever it exists, and that is the gradient (as in
PyTorch). ``remainder`` on floats is ``a - b·floor(a / b)``, so its gradient (1 for ``a``,
``-floor(a / b)`` for ``b``) comes from the composite. Integer results are exact.
"""

import numpy as np

from torchlight.autograd import Function

from .. import dtypes
from ..creation import from_numpy_on
from ..dispatch import same_backend
from .pointwise import operands

__all__ = ["Rounding", "floor", "ceil", "trunc", "round", "floor_divide", "remainder", "div"]

_OPS = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round}


def _host(arr, backend, dtype, like):
    # numpy hands a 0-d result back as a scalar, and ascontiguousarray makes that 1-d: the shape
    # is restored, so tl.tensor(5.0) // 2 is 0-d as in PyTorch, not of shape (1,)
    return from_numpy_on(
        np.ascontiguousarray(arr).reshape(np.shape(arr)), backend, dtype, like=like
    )


class Rounding(Function):
    """``op(x)`` on the host; the gradient is 0 (the derivative of a step function)."""

    @staticmethod
    def forward(ctx, x, op, decimals):
        arr = x.backend.to_numpy(x._td)
        out = np.round(arr, decimals) if op == "round" else _OPS[op](arr)
        return _host(out.astype(x.dtype.np, copy=False), x.backend, x.dtype, x)

    @staticmethod
    def backward(ctx, g):
        return g * 0.0, None, None


def _rounding(x, op, decimals=0):
    if not x.dtype.is_floating_point:
        return x.clone()  # integers are already whole
    return Rounding.apply(x, op, decimals)


def floor(x):
    """The largest integer ≤ each element (same dtype).

    >>> import torchlight as tl
    >>> tl.floor(tl.tensor([-1.5, 0.5, 2.0])).tolist()
    [-2.0, 0.0, 2.0]
    """
    return _rounding(x, "floor")


def ceil(x):
    """The smallest integer ≥ each element (same dtype).

    >>> import torchlight as tl
    >>> tl.ceil(tl.tensor([-1.5, 0.5])).tolist()
    [-1.0, 1.0]
    """
    return _rounding(x, "ceil")


def trunc(x):
    """Each element rounded towards zero (same dtype).

    >>> import torchlight as tl
    >>> tl.trunc(tl.tensor([-1.7, 1.7])).tolist()
    [-1.0, 1.0]
    """
    return _rounding(x, "trunc")


def round(x, decimals=0):  # noqa: A001 - PyTorch's name
    """Round half to even (like PyTorch and numpy), to ``decimals`` decimal places.

    >>> import torchlight as tl
    >>> tl.round(tl.tensor([0.5, 1.5, 2.567]), decimals=0).tolist()
    [0.0, 2.0, 3.0]
    """
    return _rounding(x, "round", decimals)


def _int_binary(fn, a, b):
    backend = same_backend(a, b)
    x, y = a.backend.to_numpy(a._td), b.backend.to_numpy(b._td)
    if np.any(y == 0):
        raise ZeroDivisionError(
            "integer division or remainder by zero (an element of the divisor is 0)"
        )
    return _host(fn(x, y).astype(np.int64), backend, dtypes.int64, a)


def floor_divide(a, b):
    """``floor(a / b)`` elementwise (Python's ``//``); integers stay integers, exactly.

    >>> import torchlight as tl
    >>> (tl.tensor([7, -7]) // 2).tolist(), tl.floor_divide(tl.tensor([7.0]), 2).tolist()
    ([3, -4], [3.0])
    """
    x, y = operands(a, b)
    if x.dtype.is_floating_point:
        return floor(x / y)
    return _int_binary(np.floor_divide, x, y)


def remainder(a, b):
    """``a - b·floor(a / b)`` elementwise (Python's ``%``: the sign of the divisor).

    >>> import torchlight as tl
    >>> (tl.tensor([7, -7]) % 3).tolist(), tl.remainder(tl.tensor([-1.5]), 1.0).tolist()
    ([1, 2], [0.5])
    """
    x, y = operands(a, b)
    if x.dtype.is_floating_point:
        return x - y * floor(x / y)
    return _int_binary(np.remainder, x, y)


def div(a, b, rounding_mode=None):
    """``a / b`` (true division, a float result); ``rounding_mode="trunc"`` rounds the quotient
    towards zero, ``"floor"`` down (then integer inputs give an integer result, as in PyTorch).

    >>> import torchlight as tl
    >>> tl.div(tl.tensor([7, -7]), 2).tolist(), tl.div(tl.tensor([7, -7]), 2, rounding_mode="trunc").tolist()
    ([3.5, -3.5], [3, -3])
    """
    if rounding_mode is None:
        return a / b if hasattr(a, "dtype") else b.__rtruediv__(a)
    if rounding_mode == "floor":
        return floor_divide(a, b)
    if rounding_mode == "trunc":
        x, y = operands(a, b)
        if x.dtype.is_floating_point:
            return trunc(x / y)
        return _int_binary(lambda p, q: np.sign(p) * np.sign(q) * (np.abs(p) // np.abs(q)), x, y)
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
