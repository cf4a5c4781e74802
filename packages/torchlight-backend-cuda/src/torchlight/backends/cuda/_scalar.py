"""Scalar op tables as CUDA device functions: one element in, one element out, chosen by an
integer op code (a kernel is compiled per dtype family and ndim, not per op).

The codes and the formulas match the CPU numba backend (same names, same stable forms: sigmoid
never overflows, softplus is ``log1p(exp(-|x|)) + max(x, 0)``, max/min propagate NaN).
Families: ``unary_float`` (every unary op), ``unary_int`` (copy/neg/abs/sign/square/relu),
``unary_bool`` (copy/logical_not), ``binary_float`` (arithmetic and the ``*_back`` ops),
``binary_int`` (add/sub/mul/pow/maximum/minimum), ``compare`` (→ bool; also bool add/mul/max/min).
"""

import math

from numba import cuda

__all__ = [
    "MAP_CODES", "ZIP_CODES", "CMP_CODES", "unary_float", "unary_int", "unary_bool",
    "binary_float", "binary_int", "compare", "identity", "sigmoid",
]

MAP_CODES = {name: k for k, name in enumerate((
    "copy", "neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square",
    "sin", "cos", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "softplus", "erf",
    "logical_not",
))}
ZIP_CODES = {name: k for k, name in enumerate((
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "relu_back", "sigmoid_back",
    "tanh_back", "gelu_back", "gelu_tanh_back", "silu_back", "softplus_back",
))}
CMP_CODES = {name: k for k, name in enumerate((
    "lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or",
))}

SQRT1_2 = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
TANH_C = math.sqrt(2.0 / math.pi)

_dev = cuda.jit(device=True)


@_dev
def sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@_dev
def identity(op, x):
    return x


@_dev
def unary_float(op, x):
    if op == 0:
        return x * 1.0
    if op == 1:
        return -x * 1.0
    if op == 2:
        return abs(x) * 1.0
    if op == 3:
        if x > 0:
            return 1.0
        if x < 0:
            return -1.0
        return x * 1.0  # 0, -0 or nan
    if op == 4:
        return math.exp(x)
    if op == 5:
        if x < 0:
            return math.nan
        if x == 0:
            return -math.inf
        return math.log(x)
    if op == 6:
        if x < 0:
            return math.nan
        return math.sqrt(x)
    if op == 7:
        if x < 0:
            return math.nan
        if x == 0:
            return math.inf
        return 1.0 / math.sqrt(x)
    if op == 8:
        if x == 0:
            return math.copysign(math.inf, x)
        return 1.0 / x
    if op == 9:
        return x * x * 1.0
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
        return 0.5 * x * (1.0 + math.tanh(TANH_C * (x + 0.044715 * x * x * x)))
    if op == 17:
        return x * sigmoid(x)
    if op == 18:
        return math.log1p(math.exp(-abs(x))) + (x * 1.0 if x > 0 else 0.0)
    if op == 19:
        return math.erf(x)
    return math.nan


@_dev
def unary_int(op, x):
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
    return x


@_dev
def unary_bool(op, x):
    if op == 20:
        return not x
    return x


@_dev
def binary_float(op, a, b):
    if op == 0:
        return a + b
    if op == 1:
        return a - b
    if op == 2:
        return a * b
    if op == 3:
        if b == 0:  # IEEE semantics (numba-cuda would otherwise follow Python and raise)
            if a == 0 or a != a:
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if op == 4:
        return a ** b
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
        t = math.tanh(TANH_C * (a + 0.044715 * a * a * a))
        d = 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * TANH_C * (1.0 + 3 * 0.044715 * a * a)
        return b * d
    if op == 12:  # silu_back(x, g)
        s = sigmoid(a)
        return b * (s * (1.0 + a * (1.0 - s)))
    if op == 13:  # softplus_back(x, g)
        return b * sigmoid(a)
    return math.nan


@_dev
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


@_dev
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


@_dev
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
