"""Scalar op tables for compiled backends: one element in, one element out, chosen by an op code.

Op names become small integers (``MAP_CODES`` ...); a kernel takes the code as an argument and
calls one of the functions below, so a whole family of ops (every float unary op, say) compiles
into one machine-code function per dtype instead of one per op — that keeps JIT time small, and
the branch on a loop-invariant code costs a few compares per element.

Like ``indexing.py`` these are plain Python, written so that a JIT compiles them for the CPU and
for a GPU unchanged: ``compile_ops(jit)`` returns them compiled with a backend's decorator (a
CPU ``njit(...)``, a GPU ``jit(device=True)``), the calls between them (``sigmoid``, ``_ipow``,
the shared ``formulas``) bound to the compiled versions. Every such backend therefore computes
the same formulas:

* stable forms: ``sigmoid`` never overflows, ``softplus(x) = log1p(e^-|x|) + max(x, 0)``;
* max/min and relu propagate NaN (``a if a >= b or a != a else b``);
* IEEE results where Python's ``math`` would raise or go complex (log/sqrt of negatives and 0,
  1/0, e^710, 0 and negative bases to negative or fractional powers): a GPU JIT follows Python there, and
  GPU simulators and disabled-JIT debugging runs execute these bodies as Python. (Not covered: a
  float ``**`` that overflows raises under plain Python; compiled code gives inf.)

Families (who may receive which op is the backend's choice):

* ``unary_float``  every float unary op     ``unary_int``  copy/neg/abs/sign/square/relu
* ``unary_bool``   copy/logical_not          ``binary_float``  arithmetic and the ``*_back`` ops
* ``binary_int``   add/sub/mul/pow/maximum/minimum
* ``compare``      lt/le/gt/ge/eq/ne/logical_and/logical_or → bool (also bool add/mul/max/min)

Arithmetic with Python float constants happens in float64 and is rounded once when stored into
a float32 ``out``.
"""

import builtins
import math
from types import FunctionType, SimpleNamespace

from ..formulas import (
    EXP_MAX,
    GELU_TANH_C,
    GELU_TANH_K,
    INV_SQRT_2PI,
    SQRT1_2,
    gelu_tanh_arg,
    gelu_tanh_slope,
)
from .protocol import MAP_OPS

__all__ = ["MAP_CODES", "ZIP_CODES", "CMP_CODES", "compile_ops"]

# one code per op, in the contract's order (the kernels switch on the code, not the name)
MAP_CODES = {name: k for k, name in enumerate(MAP_OPS)}
ZIP_CODES = {
    name: k
    for k, name in enumerate(
        (
            "add",
            "sub",
            "mul",
            "div",
            "pow",
            "maximum",
            "minimum",
            "relu_back",
            "sigmoid_back",
            "tanh_back",
            "gelu_back",
            "gelu_tanh_back",
            "silu_back",
            "softplus_back",
        )
    )
}
CMP_CODES = {
    name: k
    for k, name in enumerate(
        (
            "lt",
            "le",
            "gt",
            "ge",
            "eq",
            "ne",
            "logical_and",
            "logical_or",
        )
    )
}


def sigmoid(x):
    """1/(1+e^-x) without overflow for any x."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _sign(x):
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return x * 1.0  # 0, -0 or nan


def _exp(x):
    return math.inf if x > EXP_MAX else math.exp(x)


def _log(x):
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    return math.log(x)


def _sqrt(x):
    return math.nan if x < 0 else math.sqrt(x)


def _rsqrt(x):
    if x < 0:
        return math.nan
    if x == 0:
        return math.copysign(math.inf, x)  # 1/sqrt(-0) = 1/-0 = -inf
    return 1.0 / math.sqrt(x)


def _reciprocal(x):
    return math.copysign(math.inf, x) if x == 0 else 1.0 / x


def _unary_arith(op, x):
    # codes 0-9: copy .. square, with IEEE results where Python's math would raise
    if op == 0:
        return x * 1.0
    if op == 1:
        return -x * 1.0
    if op == 2:
        return abs(x) * 1.0
    if op == 3:
        return _sign(x)
    if op == 4:
        return _exp(x)
    if op == 5:
        return _log(x)
    if op == 6:
        return _sqrt(x)
    if op == 7:
        return _rsqrt(x)
    if op == 8:
        return _reciprocal(x)
    return x * x * 1.0


def _unary_activation(op, x):
    # codes 10-19: sin .. erf
    if op == 10:
        return math.sin(x)
    if op == 11:
        return math.cos(x)
    if op == 12:
        return math.tanh(x)
    if op == 13:
        return sigmoid(x)
    if op == 14:
        return x * 1.0 if (x > 0 or x != x) else 0.0
    if op == 15:
        return 0.5 * x * (1.0 + math.erf(x * SQRT1_2))
    if op == 16:
        return 0.5 * x * (1.0 + math.tanh(gelu_tanh_arg(x)))
    if op == 17:
        return x * sigmoid(x)
    if op == 18:
        return math.log1p(math.exp(-abs(x))) + (x * 1.0 if x > 0 else 0.0)
    if op == 19:
        return math.erf(x)
    return math.nan


def unary_float(op, x):
    # ``* 1.0``: every branch returns a float of one type, whatever x's float type is. Two
    # halves keep each switch short; the order of codes is the contract's MAP_OPS.
    if op <= 9:
        return _unary_arith(op, x)
    return _unary_activation(op, x)


def unary_int(op, x):
    if op == 0:
        return x
    if op == 1:
        return -x
    if op == 2:
        return abs(x)
    if op == 3:
        return 1 if x > 0 else (-1 if x < 0 else 0)
    if op == 9:
        return x * x
    if op == 14:
        return x if x > 0 else 0
    return 0


def unary_bool(op, x):
    if op == 20:
        return not x
    return x


def _div(a, b):
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _fpow(a, b):
    if a < 0 and b != math.floor(b):
        return math.nan  # Python would return a complex number
    if a == 0 and b < 0:  # Python raises; IEEE: ±inf (the sign of 0 kept for odd integer b)
        odd = b == math.floor(b) and 2.0 * math.floor(0.5 * b) != b
        return math.copysign(math.inf, a) if odd else math.inf
    return a**b


def binary_float(op, a, b):
    if op == 0:
        return a + b
    if op == 1:
        return a - b
    if op == 2:
        return a * b
    if op == 3:
        return _div(a, b)
    if op == 4:
        return _fpow(a, b)
    if op == 5:
        return a if (a >= b or a != a) else b
    if op == 6:
        return a if (a <= b or a != a) else b
    if op == 7:  # relu_back(x, g)
        return b if a > 0 else 0.0 * b
    if op == 8:  # sigmoid_back(y, g)
        return b * (a * (1.0 - a))
    if op == 9:  # tanh_back(y, g)
        return b * (1.0 - a * a)
    if op == 10:  # gelu_back(x, g)
        cdf = 0.5 * (1.0 + math.erf(a * SQRT1_2))
        return b * (cdf + a * INV_SQRT_2PI * math.exp(-0.5 * a * a))
    if op == 11:  # gelu_tanh_back(x, g)
        return b * gelu_tanh_slope(a, math.tanh(gelu_tanh_arg(a)))
    if op == 12:  # silu_back(x, g)
        s = sigmoid(a)
        return b * (s * (1.0 + a * (1.0 - s)))
    if op == 13:  # softplus_back(x, g)
        return b * sigmoid(a)
    return math.nan


def _ipow(a, b):
    if b < 0:  # PyTorch refuses integer tensors to negative powers; be total here
        if a == 1:
            return 1
        if a == -1:
            return -1 if b % 2 else 1
        return 0
    r = 1
    base = a
    e = b
    while e > 0:
        if e & 1:
            r *= base
        base *= base
        e >>= 1
    return r


def binary_int(op, a, b):
    if op == 0:
        return a + b
    if op == 1:
        return a - b
    if op == 2:
        return a * b
    if op == 4:
        return _ipow(a, b)
    if op == 5:
        return a if a >= b else b
    if op == 6:
        return a if a <= b else b
    return 0


def compare(op, a, b):
    if op == 0:
        return a < b
    if op == 1:
        return a <= b
    if op == 2:
        return a > b
    if op == 3:
        return a >= b
    if op == 4:
        return a == b
    if op == 5:
        return a != b
    if op == 6:
        return (a != 0) and (b != 0)
    return (a != 0) or (b != 0)


_ORDER = (
    gelu_tanh_arg,
    gelu_tanh_slope,
    sigmoid,
    _ipow,
    _sign,
    _exp,
    _log,
    _sqrt,
    _rsqrt,
    _reciprocal,
    _unary_arith,
    _unary_activation,
    _div,
    _fpow,
    unary_float,
    unary_int,
    unary_bool,
    binary_float,
    binary_int,
    compare,
)


def compile_ops(jit):
    """Every scalar function compiled with ``jit``, as attributes of a namespace.

    Each function is re-created over a fresh globals dict in which the functions it calls are
    already the compiled ones (a JIT resolves a global name when it compiles, and cannot call
    plain Python), so one body serves any decorator.
    """
    scope = {
        "__builtins__": builtins,
        "math": math,
        "SQRT1_2": SQRT1_2,
        "INV_SQRT_2PI": INV_SQRT_2PI,
        "EXP_MAX": EXP_MAX,
        "GELU_TANH_C": GELU_TANH_C,
        "GELU_TANH_K": GELU_TANH_K,
    }
    for fn in _ORDER:  # callees first
        copy = FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
        copy.__qualname__, copy.__module__, copy.__doc__ = (
            fn.__qualname__,
            fn.__module__,
            fn.__doc__,
        )
        scope[fn.__name__] = jit(copy)
    return SimpleNamespace(**{fn.__name__: scope[fn.__name__] for fn in _ORDER})
