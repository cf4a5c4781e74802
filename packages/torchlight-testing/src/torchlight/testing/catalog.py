"""The op catalog: for every named op of the backend contract, what it computes and on what.

Each entry gives a numpy *reference* (computed in float64, independent of any backend), the
dtypes on which the op is meaningful, the input domain to sample from, and the result dtype.
The conformance kit walks this catalog; :func:`check_catalog_complete` fails when the protocol
names an op the catalog does not describe, which is the reminder that adding an op to the
contract means adding it here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from torchlight.tensor.backend.protocol import MAP_OPS, REDUCE_OPS, ZIP_OPS
from torchlight.tensor.formulas import INV_SQRT_2PI, SQRT1_2, gelu_tanh_arg, gelu_tanh_slope

__all__ = [
    "OpSpec",
    "MAP_CATALOG",
    "ZIP_CATALOG",
    "REDUCE_CATALOG",
    "FLOAT",
    "INT",
    "BOOL",
    "ALL",
    "tolerance",
    "check_catalog_complete",
    "sample",
]

FLOAT = ("float32", "float64")
INT = ("int64",)
BOOL = ("bool",)
ALL = FLOAT + INT + BOOL

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # stable for any magnitude


def _gelu(x):
    return x * 0.5 * (1.0 + _erf(x * SQRT1_2))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(gelu_tanh_arg(x)))


def _softplus(x):
    return np.logaddexp(0.0, x)


def _gelu_back(x, g):
    return g * (0.5 * (1.0 + _erf(x * SQRT1_2)) + x * np.exp(-0.5 * x * x) * INV_SQRT_2PI)


def _gelu_tanh_back(x, g):
    return g * gelu_tanh_slope(x, np.tanh(gelu_tanh_arg(x)))


def _silu_back(x, g):
    s = _sigmoid(x)
    return g * s * (1 + x * (1 - s))


@dataclass(frozen=True)
class OpSpec:
    """One catalog entry.

    ``ref`` takes float64 (or the int/bool input) arrays and returns the exact-ish result;
    ``domain`` maps a dtype name to ``(low, high)`` for uniform sampling (ints: inclusive);
    ``out`` names the result dtype (``None``: same as the input); ``second`` is the domain of
    the second operand of a binary op when it differs.
    """

    name: str
    ref: object
    dtypes: tuple = FLOAT
    domain: dict = field(default_factory=dict)
    second: dict = field(default_factory=dict)
    out: str | None = None
    rtol32: float = 2e-6
    atol32: float = 1e-6


_D = {"float32": (-3.0, 3.0), "float64": (-3.0, 3.0), "int64": (-9, 9), "bool": (0, 1)}
_POS = {"float32": (0.1, 4.0), "float64": (0.1, 4.0)}
_WIDE = {"float32": (-40.0, 40.0), "float64": (-40.0, 40.0)}


def _m(name, ref, dtypes=FLOAT, domain=None, **kw):
    return OpSpec(name, ref, dtypes, {**_D, **(domain or {})}, **kw)


MAP_CATALOG = {
    s.name: s
    for s in [
        _m("copy", lambda x: x, ALL),
        _m("neg", np.negative, FLOAT + INT),
        _m("abs", np.abs, FLOAT + INT),
        _m("sign", np.sign, FLOAT + INT),
        _m("exp", np.exp, rtol32=4e-6),
        _m("log", np.log, domain=_POS, rtol32=4e-6),
        _m("sqrt", np.sqrt, domain=_POS),
        _m("rsqrt", lambda x: 1.0 / np.sqrt(x), domain=_POS, rtol32=4e-6),
        _m("reciprocal", np.reciprocal, domain=_POS),
        _m("square", np.square, FLOAT + INT),
        _m("sin", np.sin, rtol32=4e-6, atol32=2e-6),
        _m("cos", np.cos, rtol32=4e-6, atol32=2e-6),
        _m("tanh", np.tanh, domain=_WIDE, rtol32=4e-6),
        _m("sigmoid", _sigmoid, domain=_WIDE, rtol32=4e-6),
        _m("relu", lambda x: np.maximum(x, 0), FLOAT + INT),
        _m("gelu", _gelu, rtol32=1e-5, atol32=2e-6),
        _m("gelu_tanh", _gelu_tanh, rtol32=1e-5, atol32=2e-6),
        _m("silu", lambda x: x * _sigmoid(x), domain=_WIDE, rtol32=1e-5, atol32=2e-6),
        _m("softplus", _softplus, domain=_WIDE, rtol32=1e-5, atol32=2e-6),
        _m("erf", _erf, rtol32=1e-5, atol32=2e-6),
        _m("logical_not", np.logical_not, BOOL, out="bool"),
    ]
}

_CMP = FLOAT + INT + BOOL
_Y = {"float32": (-0.99, 0.99), "float64": (-0.99, 0.99)}
_S = {"float32": (0.01, 0.99), "float64": (0.01, 0.99)}

ZIP_CATALOG = {
    s.name: s
    for s in [
        _m("add", lambda a, b: a + b if a.dtype != np.bool_ else a | b, ALL),
        _m("sub", np.subtract, FLOAT + INT),
        _m("mul", lambda a, b: a * b if a.dtype != np.bool_ else a & b, ALL),
        _m("div", np.true_divide, domain={}, second=_POS),
        _m(
            "pow",
            np.power,
            FLOAT + INT,
            domain={**_POS, "int64": (0, 5)},
            second={"float32": (-2.0, 2.0), "float64": (-2.0, 2.0), "int64": (0, 3)},
            rtol32=1e-5,
        ),
        _m("maximum", np.maximum, ALL),
        _m("minimum", np.minimum, ALL),
        _m("lt", np.less, _CMP, out="bool"),
        _m("le", np.less_equal, _CMP, out="bool"),
        _m("gt", np.greater, _CMP, out="bool"),
        _m("ge", np.greater_equal, _CMP, out="bool"),
        _m("eq", np.equal, _CMP, out="bool"),
        _m("ne", np.not_equal, _CMP, out="bool"),
        _m("logical_and", np.logical_and, BOOL, out="bool"),
        _m("logical_or", np.logical_or, BOOL, out="bool"),
        _m("relu_back", lambda x, g: g * (x > 0)),
        _m("sigmoid_back", lambda y, g: g * y * (1 - y), domain=_S),
        _m("tanh_back", lambda y, g: g * (1 - y * y), domain=_Y),
        _m("gelu_back", _gelu_back, rtol32=1e-5, atol32=4e-6),
        _m("gelu_tanh_back", _gelu_tanh_back, rtol32=1e-5, atol32=4e-6),
        _m("silu_back", _silu_back, domain=_WIDE, rtol32=1e-5, atol32=4e-6),
        _m("softplus_back", lambda x, g: g * _sigmoid(x), domain=_WIDE, rtol32=1e-5, atol32=2e-6),
    ]
}


def _argref(fn):
    return lambda x, axis: fn(x, axis=axis, keepdims=True)


REDUCE_CATALOG = {
    s.name: s
    for s in [
        OpSpec(
            "sum",
            lambda x, axis: np.sum(x, axis=axis, keepdims=True),
            FLOAT + INT,
            dict(_D),
            rtol32=1e-5,
            atol32=1e-5,
        ),
        OpSpec(
            "prod",
            lambda x, axis: np.prod(x, axis=axis, keepdims=True),
            FLOAT + INT,
            {"float32": (0.6, 1.4), "float64": (0.6, 1.4), "int64": (-2, 2)},
            rtol32=2e-5,
            atol32=1e-6,
        ),
        OpSpec("max", lambda x, axis: np.max(x, axis=axis, keepdims=True), ALL, dict(_D)),
        OpSpec("min", lambda x, axis: np.min(x, axis=axis, keepdims=True), ALL, dict(_D)),
        OpSpec("argmax", _argref(np.argmax), FLOAT + INT, dict(_D), out="int64"),
        OpSpec("argmin", _argref(np.argmin), FLOAT + INT, dict(_D), out="int64"),
    ]
}


def tolerance(dtype: str, spec: OpSpec | None = None) -> tuple:
    """``(rtol, atol)`` for comparing a backend's result of ``dtype`` with the float64 reference."""
    if dtype == "float32":
        return (spec.rtol32, spec.atol32) if spec else (2e-6, 1e-6)
    if dtype == "float64":
        return 1e-12, 1e-13
    return 0.0, 0.0


def sample(rng: np.random.Generator, shape, dtype: str, domain=None) -> np.ndarray:
    """Random values of ``dtype`` in ``domain`` (``(low, high)``; ints inclusive)."""
    lo, hi = (domain or _D)[dtype] if isinstance(domain, dict) else (domain or _D[dtype])
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "int64":
        # int bounds here (mypy sees the float bounds of the other dtypes in the same tuples)
        return rng.integers(cast(int, lo), cast(int, hi) + 1, size=shape, dtype=np.int64)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def check_catalog_complete() -> list:
    """Names the protocol lists but the catalog does not describe (and vice versa)."""
    problems = []
    for kind, names, cat in (
        ("map", MAP_OPS, MAP_CATALOG),
        ("zip", ZIP_OPS, ZIP_CATALOG),
        ("reduce", REDUCE_OPS, REDUCE_CATALOG),
    ):
        problems += [f"{kind} op {n!r} has no catalog entry" for n in names if n not in cat]
        problems += [
            f"catalog {kind} op {n!r} is not in the protocol" for n in cat if n not in names
        ]
    return problems
