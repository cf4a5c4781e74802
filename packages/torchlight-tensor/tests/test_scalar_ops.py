"""The shared scalar op tables as plain Python (what the CUDA simulator runs, and what numba
compiles for both compiled backends) against numpy, including the IEEE edge cases."""

import math

import numpy as np
import pytest

from torchlight.tensor.backend.protocol import MAP_OPS
from torchlight.tensor.backend.scalar_ops import CMP_CODES, MAP_CODES, ZIP_CODES, compile_ops

OPS = compile_ops(lambda fn: fn)  # the bodies themselves, uncompiled
XS = [-1e4, -3.5, -1.0, -1e-8, -0.0, 0.0, 1e-8, 0.5, 2.0, 30.0, 1e4, math.inf, -math.inf, math.nan]


UNARY_REF = {
    "copy": lambda x: x,
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: 1 / x,
    "square": np.square,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": lambda x: np.exp(-np.logaddexp(0, -x)),
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x * np.exp(-np.logaddexp(0, -x)),
    "softplus": lambda x: np.logaddexp(0, x),
    "erf": math.erf,
}  # (math.erf: libm's, an implementation independent of the formulas under test)


def test_codes_cover_the_protocol():
    assert tuple(MAP_CODES) == MAP_OPS
    assert set(ZIP_CODES) | set(CMP_CODES) >= {
        "add",
        "sub",
        "mul",
        "div",
        "pow",
        "lt",
        "eq",
        "logical_or",
    }


@pytest.mark.parametrize("op", sorted(UNARY_REF))
def test_unary_float_matches_numpy(op):
    for x in XS:
        if op in ("sin", "cos") and math.isinf(x):
            continue  # Python's math raises for sin(inf); never reached on a float tensor's path
        if op in ("gelu", "gelu_tanh", "silu") and math.isinf(x):
            continue  # inf·0 forms: numpy gives nan, the formula too, but via different routes
        with np.errstate(all="ignore"):
            want = float(UNARY_REF[op](np.float64(x)))
        got = OPS.unary_float(MAP_CODES[op], x)
        if math.isnan(want):
            assert math.isnan(got), (op, x, got)
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300), (op, x)
            if want == 0 and op in ("neg", "copy", "reciprocal", "log"):
                assert math.copysign(1, got) == math.copysign(1, want), (op, x, "sign of zero")


@pytest.mark.parametrize(
    "op, a, b",
    [
        ("div", 1.0, 0.0),
        ("div", -1.0, 0.0),
        ("div", 1.0, -0.0),
        ("div", 0.0, 0.0),
        ("div", math.nan, 0.0),
        ("div", 3.0, 2.0),
        ("pow", -8.0, 1 / 3),
        ("pow", -2.0, 3.0),
        ("pow", 2.0, -1.0),
        ("pow", 0.0, -1.0),
        ("pow", -0.0, -3.0),
        ("pow", -0.0, -2.0),
        ("pow", 0.0, -0.5),
    ],
)
def test_division_and_power_are_ieee(op, a, b):
    with np.errstate(all="ignore"):
        want = (
            np.float64(a) / np.float64(b) if op == "div" else np.power(np.float64(a), np.float64(b))
        )
    got = OPS.binary_float(ZIP_CODES[op], a, b)
    assert (math.isnan(got) and math.isnan(want)) or got == want


def test_max_min_propagate_nan_and_int_pow_is_total():
    mx, mn = ZIP_CODES["maximum"], ZIP_CODES["minimum"]
    assert math.isnan(OPS.binary_float(mx, math.nan, 1.0)) and math.isnan(
        OPS.binary_float(mx, 1.0, math.nan)
    )
    assert math.isnan(OPS.binary_float(mn, 1.0, math.nan))
    pw = ZIP_CODES["pow"]
    assert [
        OPS.binary_int(pw, a, b) for a, b in ((3, 4), (-2, 3), (2, -1), (1, -5), (-1, -3), (-1, -2))
    ] == [81, -8, 0, 1, -1, 1]
    assert (
        OPS.compare(CMP_CODES["logical_and"], 2, 0) is False
        and OPS.compare(CMP_CODES["ne"], 1, 2) is True
    )
