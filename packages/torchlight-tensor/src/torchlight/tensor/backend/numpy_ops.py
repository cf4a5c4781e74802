"""The numpy backend's elementwise kernels: one numpy expression per op of ``MAP_OPS``,
``ZIP_OPS`` and ``REDUCE_OPS`` (the formulas come from :mod:`torchlight.tensor.formulas`).

``MAP[op](x, out)``, ``ZIP[op](a, b, out=out)`` and ``REDUCE[op]`` (a ufunc whose ``reduce``
folds an axis) take ndarrays; :class:`~torchlight.tensor.backend.numpy.NumpyBackend` hands them
views of the tensors' storage. An op that is one numpy ufunc is that ufunc in the table (no
Python frame around it), which also lets numpy allocate its result (capability
``new_result``). The fused recurrent cells (``numpy_rnn``) share ``sigmoid``.
"""

import math

import numpy as np

from ..formulas import INV_SQRT_2PI, SQRT1_2, gelu_tanh_arg, gelu_tanh_slope

__all__ = [
    "MAP",
    "ZIP",
    "REDUCE",
    "POWER_FORMS",
    "WHOLE_POWER_MAX",
    "erf",
    "erf_libm",
    "relu",
    "ALLOCATING",
    "sigmoid",
    "whole_power",
]


_erf_py = np.frompyfunc(math.erf, 1, 1)


def erf_libm(x, out=None):
    """``erf`` elementwise through ``math.erf`` (libm precision, one Python call per element): the
    fallback when scipy is not installed. ``x`` may be 0-d, where ``frompyfunc`` returns a bare
    Python float rather than an array, so the result is converted with ``np.asarray``."""
    x = np.asarray(x)
    r = np.asarray(_erf_py(x), dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    if out is None:
        return r
    out[...] = r
    return out


_erf_impl = None


def erf(x, out=None):
    """``erf`` elementwise: ``scipy.special.erf`` (vectorised) where scipy is installed, else
    :func:`erf_libm` (the same values, slower). scipy is imported at the first call, not with
    the backend: importing ``scipy.special`` takes most of a second, which every program (and
    every DataLoader worker) would pay at its first tensor even if it never calls ``erf``."""
    global _erf_impl
    if _erf_impl is None:
        try:
            from scipy.special import erf as _erf_impl
        except ImportError:  # pragma: no cover - depends on the environment (nox -s minimal)
            _erf_impl = erf_libm
    return _erf_impl(x, out=out)


def sigmoid(x, out=None, order="K"):
    r""":math:`\sigma(x) = 1 / (1 + e^{-x})` into ``out``, as written, in four in-place passes
    (without ``out``, the first pass allocates the result in ``order``, which is returned).

    Within 3 ulp of the exact value (2.4 at most over :math:`[-120, 120]` in float32,
    ``test_kernel_forms.py``): for large :math:`-x`, :math:`1/(1 + e^{-x})` is :math:`e^{x}` to
    within rounding; where :math:`e^{-x}` overflows to inf (:math:`x < -88.7` in float32) the
    result is 0, as PyTorch's, the true value lying below the smallest normal float (numpy's
    overflow warning is filtered for this module's calls, see ``numpy.py``). The form with
    :math:`e^{-|x|}` and a select took six passes and temporaries: 2.3x the time on 16x16.
    """
    out = np.negative(x, out=out, order=order)
    np.exp(out, out=out)
    np.add(out, 1.0, out=out)
    return np.reciprocal(out, out=out)


def _rsqrt(x, out):
    np.sqrt(x, out=out)
    np.reciprocal(out, out=out)


def _cube(x, out):
    np.multiply(np.square(x), x, out=out)  # the square apart: out may be x (pow_)


def _inverse_square(x, out):
    np.square(x, out=out)
    np.reciprocal(out, out=out)


# Exponents that numpy's power takes through the general powf, one call per element (x ** 3.0:
# 250x the time of two products), written as the products and roots they are: each within an
# ulp or two of powf's value (sqrt is exact), and the forms PyTorch's CPU kernel uses
POWER_FORMS = {
    2.0: lambda x, out: np.square(x, out=out),
    3.0: _cube,
    0.5: lambda x, out: np.sqrt(x, out=out),
    -0.5: _rsqrt,
    -1.0: lambda x, out: np.reciprocal(x, out=out),
    -2.0: _inverse_square,
}


#: whole exponents up to this size (other than :data:`POWER_FORMS`') are raised by squaring
WHOLE_POWER_MAX = 16


def whole_power(x, n, out):
    r"""``out = x ** n`` for a whole ``n``, :math:`1 < |n| \le` :data:`WHOLE_POWER_MAX`, by
    squaring and multiplying in float64 and rounding once into ``out``.

    powf takes 60 ns an element for ``x ** 4.0`` with negative ``x`` (20x this). The relative
    error of the float64 product is at most :math:`(|n| - 1)\,2^{-53}`, so a float32 result is
    the exact power rounded (within 0.51 ulp) and a float64 result is within :math:`|n|` ulp.
    """
    base = x.astype(np.float64)  # a copy, squared in place
    acc = None
    k = abs(n)
    while True:
        if k & 1:
            acc = base.copy() if acc is None else np.multiply(acc, base, out=acc)
        k >>= 1
        if not k:
            break
        np.square(base, out=base)
    if n < 0:
        np.reciprocal(acc, out=acc)
    np.copyto(out, acc, casting="same_kind")


def _power(a, b, out):
    """``out = a ** b``; a float tensor to one number (``b`` 0-d, or expanded with zero strides
    as the numba backend hands it) by the exponent's form in :data:`POWER_FORMS`, or by
    :func:`whole_power` for a whole exponent; anything else by numpy's power."""
    if not any(b.strides) and b.size and a.dtype == out.dtype and out.dtype.kind == "f":
        e = float(b.flat[0])
        form = POWER_FORMS.get(e)
        if form is not None:
            form(a, out)
            return
        if e.is_integer() and 1 < abs(e) <= WHOLE_POWER_MAX:
            whole_power(a, int(e), out)
            return
    np.power(a, b, out=out)


def _gelu(x, out):
    np.multiply(x, 0.5 * (1.0 + erf(x * SQRT1_2)), out=out)


def _gelu_tanh_inner(x):
    return np.tanh(gelu_tanh_arg(x))


def _gelu_tanh(x, out):
    np.multiply(0.5 * x, 1.0 + _gelu_tanh_inner(x), out=out)


def _silu(x, out):
    s = np.empty_like(out)
    sigmoid(x, s)
    np.multiply(x, s, out=out)


def relu(x, out=None, order="K"):
    """``max(x, 0)``: one ufunc call, which allocates the result (in ``order``) when no ``out``
    is given."""
    return np.maximum(x, 0, out=out, order=order)


ALLOCATING = frozenset({"relu", "sigmoid"})
"""The entries of :data:`MAP` that are no ufunc but, called without ``out``, allocate their result
(in ``order``) and return it as a ufunc does: the numpy backend offers them with the ufuncs as
``new_result_ops``."""


def _softplus(x, out):
    np.add(np.log1p(np.exp(-np.abs(x))), np.maximum(x, 0), out=out)


MAP = {
    "copy": lambda x, out: np.copyto(out, x, casting="unsafe"),
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "reciprocal": np.reciprocal,
    "square": np.square,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "relu": relu,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": _silu,
    "softplus": _softplus,
    "erf": lambda x, out: erf(x, out=out),
    "logical_not": np.logical_not,
}


def _gelu_back(x, g, out):
    cdf = 0.5 * (1.0 + erf(x * SQRT1_2))
    np.multiply(g, cdf + x * INV_SQRT_2PI * np.exp(-0.5 * x * x), out=out)


def _gelu_tanh_back(x, g, out):
    np.multiply(g, gelu_tanh_slope(x, _gelu_tanh_inner(x)), out=out)


def _silu_back(x, g, out):
    s = np.empty_like(out)
    sigmoid(x, s)
    np.multiply(g, s * (1.0 + x * (1.0 - s)), out=out)


def _softplus_back(x, g, out):
    sigmoid(x, out)
    np.multiply(out, g, out=out)


ZIP = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "pow": _power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "relu_back": lambda x, g, out: np.multiply(g, x > 0, out=out),
    "sigmoid_back": lambda y, g, out: np.multiply(g, y * (1.0 - y), out=out),
    "tanh_back": lambda y, g, out: np.multiply(g, 1.0 - y * y, out=out),
    "gelu_back": _gelu_back,
    "gelu_tanh_back": _gelu_tanh_back,
    "silu_back": _silu_back,
    "softplus_back": _softplus_back,
}

REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
