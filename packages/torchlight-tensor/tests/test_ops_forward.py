"""Forward values of every op against numpy, on random shapes, layouts and broadcasts.

Each property draws a shape, a dtype (float32/float64) and a *layout* (see
``tltensor_helpers.Maker.build``): the tensor under test is a permuted, step-sliced,
stride-0-broadcast or offset view, built with torchlight view ops while the oracle applies the
same layout change with numpy. Oracles are computed in float64 from the very values the tensor
holds; tolerances are those of the tensor's dtype.
"""

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view
from tltensor_helpers import (
    FLOATS,
    LAYOUTS,
    Maker,
    assert_close,
    broadcastable_pair,
    np_erf,
    np_log_softmax,
    np_softmax,
    shapes,
)

import torchlight as tl

seeds = st.integers(0, 2**32 - 1)
layouts = st.sampled_from(LAYOUTS)
float_dtypes = st.sampled_from(FLOATS)


def f64(a):
    return np.asarray(a, dtype=np.float64)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_C = math.sqrt(2.0 / math.pi)

# name -> (torchlight function, numpy oracle on float64, value kind)
UNARY = {
    "neg": (lambda x: -x, lambda a: -a, "float"),
    "neg_method": (lambda x: x.neg(), lambda a: -a, "float"),
    "abs": (lambda x: x.abs(), np.abs, "float"),
    "abs_builtin": (lambda x: abs(x), np.abs, "float"),
    "exp": (tl.exp, np.exp, "float"),
    "log": (tl.log, np.log, "positive"),
    "sqrt": (tl.sqrt, np.sqrt, "positive"),
    "rsqrt": (tl.rsqrt, lambda a: 1.0 / np.sqrt(a), "positive"),
    "reciprocal": (lambda x: x.reciprocal(), lambda a: 1.0 / a, "nonzero"),
    "square": (lambda x: x.square(), np.square, "float"),
    "sign": (lambda x: x.sign(), np.sign, "ties"),
    "sin": (tl.sin, np.sin, "float"),
    "cos": (tl.cos, np.cos, "float"),
    "tanh": (tl.tanh, np.tanh, "float"),
    "sigmoid": (tl.sigmoid, _sigmoid, "float"),
    "relu": (tl.relu, lambda a: np.maximum(a, 0.0), "float"),
    "leaky_relu": (lambda x: x.leaky_relu(), lambda a: np.where(a > 0, a, 0.01 * a), "float"),
    "leaky_relu_0.2": (lambda x: x.leaky_relu(0.2), lambda a: np.where(a > 0, a, 0.2 * a), "float"),
    "gelu": (tl.gelu, lambda a: 0.5 * a * (1.0 + np_erf(a / math.sqrt(2.0))), "float"),
    "gelu_tanh": (
        lambda x: tl.gelu(x, approximate="tanh"),
        lambda a: 0.5 * a * (1.0 + np.tanh(_C * (a + 0.044715 * a**3))),
        "float",
    ),
    "silu": (tl.silu, lambda a: a * _sigmoid(a), "float"),
    "softplus": (tl.softplus, lambda a: np.logaddexp(0.0, a), "float"),
    "softplus_beta2": (
        lambda x: tl.softplus(x, beta=2.0),
        lambda a: np.logaddexp(0.0, 2 * a) / 2,
        "float",
    ),
    "softplus_threshold": (
        lambda x: tl.softplus(x, beta=1.0, threshold=1.0),
        lambda a: np.where(a > 1.0, a, np.logaddexp(0.0, a)),
        "float",
    ),
    "clamp": (lambda x: tl.clamp(x, -1.0, 0.5), lambda a: np.clip(a, -1.0, 0.5), "float"),
    "clamp_min": (lambda x: x.clamp(min=0.25), lambda a: np.maximum(a, 0.25), "float"),
    "clamp_max": (lambda x: x.clamp(max=-0.5), lambda a: np.minimum(a, -0.5), "float"),
    "clip": (lambda x: x.clip(-2, 2), lambda a: np.clip(a, -2, 2), "float"),
    "clone": (lambda x: x.clone(), lambda a: a, "float"),
    "contiguous": (lambda x: x.contiguous(), lambda a: a, "float"),
    "pow_scalar": (lambda x: x**3, lambda a: a**3, "float"),
    "pow_half": (lambda x: x**0.5, np.sqrt, "positive"),
    "rpow_scalar": (lambda x: 2.0**x, lambda a: 2.0**a, "float"),
    "add_scalar": (lambda x: x + 1.5, lambda a: a + 1.5, "float"),
    "radd_scalar": (lambda x: 1.5 + x, lambda a: 1.5 + a, "float"),
    "sub_scalar": (lambda x: x - 2, lambda a: a - 2, "float"),
    "rsub_scalar": (lambda x: 2 - x, lambda a: 2 - a, "float"),
    "mul_scalar": (lambda x: x * -3, lambda a: a * -3, "float"),
    "rmul_scalar": (lambda x: 0.5 * x, lambda a: 0.5 * a, "float"),
    "div_scalar": (lambda x: x / 4, lambda a: a / 4, "float"),
    "rdiv_scalar": (lambda x: 3 / x, lambda a: 3 / a, "nonzero"),
    "add_alpha": (lambda x: x.add(x, alpha=2), lambda a: 3 * a, "float"),
    "sub_alpha": (lambda x: x.sub(1.0, alpha=3), lambda a: a - 3, "float"),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(shape=shapes(0, 4, 1, 4), layout=layouts, dtype=float_dtypes, seed=seeds)
def test_unary_forward(name, shape, layout, dtype, seed):
    fn, ref, kind = UNARY[name]
    a, x = Maker(seed, dtype, kind=kind).build(shape, layout)
    y = fn(x)
    assert y.dtype == x.dtype, f"{name} must keep the float dtype"
    assert_close(y, ref(f64(a)), dtype)


@pytest.mark.parametrize(
    "name", ["sigmoid", "softplus", "silu", "tanh", "gelu", "gelu_tanh", "exp"]
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_extreme_inputs_stay_finite_and_exact(name, dtype):
    """Large |x| must not overflow to nan: sigmoid(±1000) is 1/0, softplus(1000) is 1000."""
    fn, ref, _ = UNARY[name]
    a = np.array([-1000.0, -80.0, -30.0, 0.0, 30.0, 80.0, 1000.0], dtype=dtype)
    if name == "exp":
        a = np.array([-1000.0, -50.0, 0.0, 50.0], dtype=dtype)
    with np.errstate(over="ignore"):
        expected = ref(f64(a))
    y = fn(tl.tensor(a)).to_numpy()
    assert not np.isnan(y).any()
    assert_close(y, expected.astype(dtype), dtype)


def test_relu_and_abs_keep_integer_dtype():
    x = tl.tensor([-2, 0, 3])
    assert (-x).dtype == tl.int64 and x.abs().dtype == tl.int64 and x.relu().dtype == tl.int64
    assert x.sign().tolist() == [-1, 0, 1]
    assert x.relu().tolist() == [0, 0, 3]


@pytest.mark.parametrize("fn", [tl.exp, tl.log, tl.sqrt, tl.sin, tl.tanh, tl.sigmoid, tl.gelu])
def test_float_ops_on_int_promote_to_float32(fn):
    a = np.array([1, 2, 3])
    y = fn(tl.tensor(a))
    assert y.dtype == tl.float32
    assert_close(
        y,
        {
            tl.exp: np.exp,
            tl.log: np.log,
            tl.sqrt: np.sqrt,
            tl.sin: np.sin,
            tl.tanh: np.tanh,
            tl.sigmoid: _sigmoid,
            tl.gelu: lambda v: 0.5 * v * (1 + np_erf(v / math.sqrt(2))),
        }[fn](f64(a)),
        np.float32,
    )


# --- binary ops with broadcasting -------------------------------------------------------------

BINARY = {
    "add": (lambda x, y: x + y, np.add, "float"),
    "sub": (lambda x, y: x - y, np.subtract, "float"),
    "mul": (lambda x, y: x * y, np.multiply, "float"),
    "div": (lambda x, y: x / y, np.divide, "nonzero"),
    "pow": (lambda x, y: x**y, np.power, "positive"),
    "maximum": (tl.maximum, np.maximum, "ties"),
    "minimum": (tl.minimum, np.minimum, "ties"),
    "max_tensor": (lambda x, y: x.max(y), np.maximum, "ties"),
    "min_tensor": (lambda x, y: x.min(y), np.minimum, "ties"),
    "add_method": (lambda x, y: x.add(y), np.add, "float"),
    "sub_method": (lambda x, y: x.sub(y, alpha=2), lambda a, b: a - 2 * b, "float"),
    "mul_method": (lambda x, y: x.mul(y), np.multiply, "float"),
    "div_method": (lambda x, y: x.div(y), np.divide, "nonzero"),
}

COMPARE = {
    "lt": (lambda x, y: x < y, np.less),
    "le": (lambda x, y: x <= y, np.less_equal),
    "gt": (lambda x, y: x > y, np.greater),
    "ge": (lambda x, y: x >= y, np.greater_equal),
    "eq": (lambda x, y: x == y, np.equal),
    "ne": (lambda x, y: x != y, np.not_equal),
    "eq_method": (lambda x, y: x.eq(y), np.equal),
    "lt_method": (lambda x, y: x.lt(y), np.less),
}


@st.composite
def operand_pairs(draw, kind="float", dtype=None):
    sa, sb = broadcastable_pair(draw)
    dtype = dtype or draw(float_dtypes)
    m = Maker(draw(seeds), dtype, kind=kind)
    a, x = m.build(sa, draw(layouts))
    if kind in ("positive", "nonzero"):  # only the base needs the domain restriction for pow
        m.kind = "float" if kind == "positive" else kind
    b, y = m.build(sb, draw(layouts))
    return a, x, b, y, dtype


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_forward_broadcasting(name, data):
    fn, ref, kind = BINARY[name]
    a, x, b, y, dtype = data.draw(operand_pairs(kind))
    out = fn(x, y)
    assert out.shape == np.broadcast_shapes(a.shape, b.shape)
    assert_close(out, ref(f64(a), f64(b)), dtype)


@pytest.mark.parametrize("name", sorted(COMPARE))
@given(data=st.data())
def test_comparisons_return_bool(name, data):
    fn, ref = COMPARE[name]
    a, x, b, y, _ = data.draw(operand_pairs("ties"))
    out = fn(x, y)
    assert out.dtype == tl.bool
    assert_close(out, ref(a, b), np.bool_)
    # and against a Python scalar on either side
    assert_close(fn(x, 0.0), ref(a, 0.0), np.bool_)


@given(data=st.data())
def test_logical_and_or_not(data):
    a, x, b, y, _ = data.draw(operand_pairs("ties"))
    ma, mb = x > 0, y < 0.5
    assert_close(ma & mb, (a > 0) & (b < 0.5), np.bool_)
    assert_close(ma | mb, (a > 0) | (b < 0.5), np.bool_)
    assert_close(~ma, ~(a > 0), np.bool_)
    assert_close(ma.logical_not(), ~(a > 0), np.bool_)


def test_mixed_float_dtypes_promote_to_float64():
    a = tl.tensor([1.5, 2.5], dtype=tl.float32)
    b = tl.tensor([0.25, 4.0], dtype=tl.float64)
    for out in (a + b, b + a, a * b, a / b, a - b, a**b, tl.maximum(a, b)):
        assert out.dtype == tl.float64
    np.testing.assert_array_equal((a + b).numpy(), [1.75, 6.5])


@pytest.mark.parametrize(
    "make, expected_dtype, expected",
    [
        (lambda: tl.tensor([1, 2]) + tl.tensor([0.5, 0.5]), tl.float32, [1.5, 2.5]),
        (lambda: tl.tensor([0.5, 0.5]) + tl.tensor([1, 2]), tl.float32, [1.5, 2.5]),
        (
            lambda: tl.tensor([1, 2]) + tl.tensor([0.5, 0.5], dtype=tl.float64),
            tl.float64,
            [1.5, 2.5],
        ),
        (lambda: tl.tensor([1, 2]) / tl.tensor([2, 4]), tl.float32, [0.5, 0.5]),  # true division
        (lambda: tl.tensor([1, 3]) / 2, tl.float32, [0.5, 1.5]),
        (lambda: 3 / tl.tensor([2, 4]), tl.float32, [1.5, 0.75]),
        (lambda: tl.tensor([1, 2]) + 0.5, tl.float32, [1.5, 2.5]),  # int tensor + float scalar
        (lambda: tl.tensor([1, 2]) * 2, tl.int64, [2, 4]),  # int + int stays int
        (lambda: tl.tensor([2, 3]) ** 2, tl.int64, [4, 9]),
        (lambda: tl.tensor([1.0, 2.0]) + 1, tl.float32, [2.0, 3.0]),  # a scalar never widens
        (lambda: tl.tensor([1.0, 2.0]) * 1e-3, tl.float32, [1e-3, 2e-3]),
        (lambda: tl.tensor([1.0], dtype=tl.float64) + 2, tl.float64, [3.0]),
        (lambda: tl.tensor([True, False]) + 1, tl.int64, [2, 1]),
        (lambda: tl.tensor([True, False]) * 1.5, tl.float32, [1.5, 0.0]),
        (lambda: tl.tensor([True, False]).sum(), tl.int64, 1),  # summing booleans counts them
        (lambda: tl.tensor([1, 2]).float(), tl.float32, [1.0, 2.0]),
        (lambda: tl.tensor([1.7, -1.7]).long(), tl.int64, [1, -1]),  # truncation toward zero
        (lambda: tl.tensor([1, 0]).bool(), tl.bool, [True, False]),
        (lambda: tl.tensor([1, 2]).double(), tl.float64, [1.0, 2.0]),
        (lambda: tl.tensor([1, 2]).to(tl.float64), tl.float64, [1.0, 2.0]),
        (lambda: tl.tensor([1, 2]).to("float32"), tl.float32, [1.0, 2.0]),
        (lambda: tl.tensor([1.5]).type_as(tl.tensor([1])), tl.int64, [1]),
        (lambda: tl.tensor([1, 2]).mean(), tl.float32, 1.5),
        (lambda: tl.tensor([1, 2]) < 1.5, tl.bool, [True, False]),
        # a 0-d tensor acts like a scalar: it does not widen a dimensioned tensor of its category
        (lambda: tl.tensor([1.0, 2.0]) + tl.tensor(1.0, dtype=tl.float64), tl.float32, [2.0, 3.0]),
        (lambda: tl.tensor(1.0, dtype=tl.float64) * tl.tensor([1.0, 2.0]), tl.float32, [1.0, 2.0]),
        (lambda: tl.tensor([1, 2]) + tl.tensor(0.5, dtype=tl.float64), tl.float64, [1.5, 2.5]),
        (lambda: tl.tensor([True, False]) + tl.tensor(2), tl.int64, [3, 2]),
        (lambda: tl.tensor(1.0) + tl.tensor(1.0, dtype=tl.float64), tl.float64, 2.0),
        (lambda: tl.tensor([1, 5, -3]).clamp(0.5, 3), tl.float32, [1.0, 3.0, 0.5]),
        (lambda: tl.tensor([1, 5, -3]).clamp(0, 3), tl.int64, [1, 3, 0]),
        (lambda: tl.tensor([1, 2]) == tl.tensor([1.0, 2.5]), tl.bool, [True, False]),
    ],
)
def test_dtype_promotion(make, expected_dtype, expected):
    out = make()
    assert out.dtype == expected_dtype
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-6)
    assert out.to_numpy().dtype == expected_dtype.np


# --- reductions -------------------------------------------------------------------------------


@st.composite
def reduce_cases(draw, kind="float", min_dims=1, single_dim=False):
    shape = draw(shapes(min_dims, 4, 1, 4))
    dtype = draw(float_dtypes)
    a, x = Maker(draw(seeds), dtype, kind=kind).build(shape, draw(layouts))
    n = len(shape)
    if single_dim:
        dim = draw(st.integers(-n, n - 1))
    else:
        dim = draw(
            st.one_of(
                st.none(),
                st.integers(-n, n - 1),
                st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True).flatmap(
                    lambda ds: st.tuples(*[st.sampled_from([d, d - n]) for d in ds])
                ),
            )
        )
    return a, x, dim, draw(st.booleans()), dtype


def _axis(dim):
    return tuple(dim) if isinstance(dim, tuple) else dim


REDUCTIONS = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda a, d, k: a.sum(axis=d, keepdims=k)),
    "sum_fn": (lambda x, d, k: tl.sum(x, d, keepdim=k), lambda a, d, k: a.sum(axis=d, keepdims=k)),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda a, d, k: a.mean(axis=d, keepdims=k)),
    "prod": (lambda x, d, k: x.prod(d, keepdim=k), lambda a, d, k: a.prod(axis=d, keepdims=k)),
    "amax": (lambda x, d, k: x.amax(d, keepdim=k), lambda a, d, k: a.max(axis=d, keepdims=k)),
    "amin": (lambda x, d, k: tl.amin(x, d, keepdim=k), lambda a, d, k: a.min(axis=d, keepdims=k)),
    "logsumexp": (
        lambda x, d, k: x.logsumexp(d, keepdim=k),
        lambda a, d, k: _np_logsumexp(a, d, k),
    ),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda a, d, k: a.var(axis=d, ddof=1, keepdims=k)),
    "var_biased": (
        lambda x, d, k: tl.var(x, d, unbiased=False, keepdim=k),
        lambda a, d, k: a.var(axis=d, keepdims=k),
    ),
    "var_correction": (
        lambda x, d, k: x.var(d, keepdim=k, correction=0),
        lambda a, d, k: a.var(axis=d, keepdims=k),
    ),
    "std": (lambda x, d, k: x.std(d, keepdim=k), lambda a, d, k: a.std(axis=d, ddof=1, keepdims=k)),
    "std_biased": (
        lambda x, d, k: tl.std(x, d, unbiased=False, keepdim=k),
        lambda a, d, k: a.std(axis=d, keepdims=k),
    ),
}


def _np_logsumexp(a, axis, keepdims):
    m = a.max(axis=axis, keepdims=True)
    r = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def _count(shape, dim):
    if dim is None:
        return math.prod(shape)
    dims = dim if isinstance(dim, tuple) else (dim,)
    return math.prod(shape[d] for d in dims)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(case=reduce_cases())
def test_reduction_forward(name, case):
    a, x, dim, keepdim, dtype = case
    fn, ref = REDUCTIONS[name]
    if name.startswith(("var", "std")) and "biased" not in name and "correction" not in name:
        assume(_count(a.shape, dim) > 1)  # n - 1 > 0
    if name == "prod" and np.dtype(dtype).kind == "f":
        # a float32 product overflows to inf (as PyTorch's) where the float64 reference does
        # not: only inputs whose every partial product stays in range are compared
        assume(np.prod(np.maximum(np.abs(f64(a)), 1.0)) < np.finfo(dtype).max)
    out = fn(x, dim, keepdim)
    expected = ref(f64(a), _axis(dim), keepdim)
    assert out.dtype == x.dtype
    assert_close(out, expected, dtype, scale=max(1.0, float(np.abs(a).sum())))


@given(case=reduce_cases(kind="ties", single_dim=True))
def test_max_min_with_dim_return_values_and_indices(case):
    a, x, dim, keepdim, dtype = case
    for fn, vref, iref in ((tl.max, np.max, np.argmax), (tl.min, np.min, np.argmin)):
        out = fn(x, dim, keepdim=keepdim)
        values, indices = out  # a (values, indices) pair, as in PyTorch
        assert out.values is values and out.indices is indices
        assert indices.dtype == tl.int64
        assert_close(values, vref(a, axis=dim, keepdims=keepdim), dtype)
        idx = iref(a, axis=dim, keepdims=keepdim)
        # ties may resolve to any winner; the value at the index must be the extreme
        picked = np.take_along_axis(
            a, indices.numpy() if keepdim else np.expand_dims(indices.numpy(), dim), axis=dim
        )
        np.testing.assert_array_equal(
            picked.squeeze(dim) if not keepdim else picked, vref(a, axis=dim, keepdims=keepdim)
        )
        assert indices.shape == idx.shape


@given(case=reduce_cases(kind="ties"))
def test_full_max_min_argmax_argmin(case):
    a, x, _, _, dtype = case
    assert_close(x.max(), f64(a).max(), dtype)
    assert_close(x.min(), f64(a).min(), dtype)
    assert x.max().shape == ()
    assert x.argmax().dtype == tl.int64
    flat = a.reshape(-1)
    assert flat[x.argmax().item()] == flat.max()
    assert flat[x.argmin().item()] == flat.min()


@given(case=reduce_cases(single_dim=True))
def test_argmax_argmin_with_dim(case):
    a, x, dim, keepdim, _ = case
    # continuous values: no ties, so the index is unique
    assume(len(np.unique(a)) == a.size)
    out = x.argmax(dim, keepdim=keepdim)
    assert out.dtype == tl.int64
    np.testing.assert_array_equal(out.numpy(), np.argmax(a, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(
        tl.argmin(x, dim, keepdim=keepdim).numpy(), np.argmin(a, axis=dim, keepdims=keepdim)
    )


@given(case=reduce_cases(kind="bool"))
def test_all_any(case):
    a, x, dim, keepdim, _ = case
    axis = _axis(dim)
    out = x.all(dim, keepdim=keepdim)
    assert out.dtype == tl.bool
    np.testing.assert_array_equal(out.numpy(), np.all(a, axis=axis, keepdims=keepdim))
    np.testing.assert_array_equal(
        x.any(dim, keepdim=keepdim).numpy(), np.any(a, axis=axis, keepdims=keepdim)
    )


def test_reductions_of_0d_and_keepdim_shapes():
    s = tl.tensor(3.0)
    assert s.sum().shape == () and s.sum().item() == 3.0
    assert s.sum(0).item() == 3.0 and s.mean(-1).item() == 3.0
    x = tl.ones(2, 3, 4)
    assert x.sum((0, 2)).shape == (3,)
    assert x.sum((0, -1), keepdim=True).shape == (1, 3, 1)
    assert x.mean(1).shape == (2, 4)
    assert x.sum().item() == 24.0
    assert x.sum(dtype=tl.float64).dtype == tl.float64


def test_var_std_unbiased_flag_small_example():
    x = tl.tensor([1.0, 2.0, 3.0, 4.0])
    assert x.var().item() == pytest.approx(5.0 / 3.0)
    assert x.var(unbiased=False).item() == pytest.approx(1.25)
    assert x.std().item() == pytest.approx(math.sqrt(5.0 / 3.0))
    assert tl.std(x, unbiased=False).item() == pytest.approx(math.sqrt(1.25))


def test_prod_with_zeros():
    x = tl.tensor([[2.0, 0.0, 3.0], [1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(x.prod(1).numpy(), [0.0, 6.0])
    assert x.prod().item() == 0.0


def test_logsumexp_is_stable():
    x = tl.tensor([[1e4, 1e4], [-1e4, -1e4], [0.0, -math.inf]])
    out = x.logsumexp(1).numpy()
    np.testing.assert_allclose(out, [1e4 + math.log(2), -1e4 + math.log(2), 0.0], rtol=1e-6)


# --- softmax / log_softmax / layer_norm ---------------------------------------------------------


@given(case=reduce_cases(single_dim=True))
def test_softmax_and_log_softmax(case):
    a, x, dim, _, dtype = case
    a3 = f64(a) * 3
    x3 = x * 3
    assert_close(tl.softmax(x3, dim), np_softmax(a3, dim), dtype)
    assert_close(x3.log_softmax(dim), np_log_softmax(a3, dim), dtype, scale=10)
    np.testing.assert_allclose(x3.softmax(dim).to_numpy().sum(axis=dim), 1.0, rtol=1e-5)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_softmax_stable_on_rows_of_1e4(dtype):
    x = tl.tensor([[1e4, 1e4, 1e4], [-1e4, -1e4, -1e4], [1e4, 0.0, -1e4]], dtype=dtype)
    p = tl.softmax(x, dim=1).numpy()
    lp = tl.log_softmax(x, dim=1).numpy()
    assert np.isfinite(p).all() and np.isfinite(lp).all()
    np.testing.assert_allclose(p[:2], 1.0 / 3.0, rtol=1e-6)
    np.testing.assert_array_equal(p[2], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(lp[:2], -math.log(3.0), rtol=1e-6)
    np.testing.assert_array_equal(lp[2], [0.0, -1e4, -2e4])
    # along dim 0 too: a column of equal huge values
    np.testing.assert_allclose(tl.softmax(x[:2].T, dim=0).numpy(), 1.0 / 3.0, rtol=1e-6)
    np.testing.assert_allclose(tl.log_softmax(x[:2].T, dim=0).numpy(), -math.log(3.0), rtol=1e-6)


def test_softmax_of_0d_and_default_dim():
    assert tl.softmax(tl.tensor(5.0)).item() == 1.0
    assert tl.log_softmax(tl.tensor(5.0)).item() == 0.0
    x = tl.tensor([[1.0, 2.0], [3.0, 5.0]])
    assert_close(x.softmax(), np_softmax(f64(x.numpy()), -1), np.float32)


@st.composite
def layer_norm_cases(draw):
    lead = draw(shapes(0, 2, 1, 3))
    norm = draw(shapes(1, 2, 1, 5))
    dtype = draw(float_dtypes)
    m = Maker(draw(seeds), dtype)
    a, x = m.build(lead + norm, draw(layouts))
    w = m.build(norm, draw(layouts)) if draw(st.booleans()) else None
    b = m.build(norm, draw(layouts)) if draw(st.booleans()) else None
    return a, x, norm, w, b, dtype


@given(case=layer_norm_cases(), eps=st.sampled_from([1e-5, 1e-3, 0.1]))
def test_layer_norm(case, eps):
    a, x, norm, w, b, dtype = case
    axes = tuple(range(a.ndim - len(norm), a.ndim))
    a64 = f64(a)
    mu = a64.mean(axis=axes, keepdims=True)
    expected = (a64 - mu) / np.sqrt(((a64 - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    if w is not None:
        expected = expected * f64(w[0])
    if b is not None:
        expected = expected + f64(b[0])
    out = tl.layer_norm(
        x,
        norm[0] if len(norm) == 1 else norm,  # an int or a tuple, as F.layer_norm accepts
        None if w is None else w[1],
        None if b is None else b[1],
        eps=eps,
    )
    assert out.shape == a.shape and out.dtype == x.dtype
    assert_close(out, expected, dtype, rtol=1e-4 if dtype == np.float32 else None, scale=10)


def test_layer_norm_int_normalized_shape_and_errors():
    x = tl.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])
    out = tl.layer_norm(x, 3).numpy()
    np.testing.assert_allclose(
        out[0], np.array([-1.0, 0.0, 1.0]) / math.sqrt(2 / 3 + 1e-5), rtol=1e-5
    )
    np.testing.assert_array_equal(out[1], 0.0)
    with pytest.raises(tl.ShapeError):
        tl.layer_norm(x, 4)
    with pytest.raises(tl.ShapeError):
        tl.layer_norm(x, 3, weight=tl.ones(4))


# --- matmul -----------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 2)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((1, 1), (1, 1)),
    ((4, 2, 3), (4, 3, 2)),
    ((4, 2, 3), (3, 5)),
    ((2, 3), (4, 3, 5)),
    ((1, 2, 3), (4, 3, 2)),
    ((2, 1, 2, 3), (3, 3, 1)),
    ((3,), (2, 3, 4)),
    ((2, 4, 3), (3,)),
    ((5, 1, 2, 3), (1, 4, 3, 2)),
]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
@given(la=layouts, lb=layouts, dtype=float_dtypes, seed=seeds)
def test_matmul_shapes(sa, sb, la, lb, dtype, seed):
    m = Maker(seed, dtype)
    a, x = m.build(sa, la)
    b, y = m.build(sb, lb)
    out = x @ y
    expected = np.matmul(f64(a), f64(b))
    assert out.shape == expected.shape
    assert_close(out, expected, dtype, scale=10)
    assert_close(tl.matmul(x, y), expected, dtype, scale=10)
    if x.ndim == 2 and y.ndim == 2:
        assert_close(x.mm(y), expected, dtype, scale=10)


def test_matmul_int_and_mixed():
    a = tl.tensor([[1, 2], [3, 4]])
    assert (a @ a).dtype == tl.int64
    np.testing.assert_array_equal((a @ a).numpy(), [[7, 10], [15, 22]])
    assert (a @ tl.tensor([[1.0], [0.5]])).dtype == tl.float32
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal((x @ x.T).numpy(), [[5.0, 11.0], [11.0, 25.0]])


# --- indexing ---------------------------------------------------------------------------------


@st.composite
def advanced_indices(draw, shape):
    """An index mixing ints, slices, None, Ellipsis, int64 tensors/lists and bool masks."""
    kind = draw(
        st.sampled_from(
            [
                "int_tensor",
                "int_tensor_2d",
                "list",
                "bool_full",
                "bool_lead",
                "mixed",
                "two_tensors",
                "basic",
            ]
        )
    )
    n = len(shape)
    if kind == "basic":  # ints (negative too), stepped slices, None, Ellipsis: a view
        idx = []
        for s in shape:
            k = draw(st.sampled_from(["int", "slice", "none"]))
            if k == "int":
                idx.append(draw(st.integers(-s, s - 1)))
            elif k == "slice":
                b = st.one_of(st.none(), st.integers(-s - 1, s + 1))
                idx.append(slice(draw(b), draw(b), draw(st.one_of(st.none(), st.integers(1, 3)))))
            else:
                idx += [None, slice(None)]
        idx.insert(draw(st.integers(0, len(idx))), Ellipsis)
        return tuple(idx), tuple(idx)
    if kind in ("int_tensor", "int_tensor_2d", "list"):
        k = draw(st.integers(1, 5))
        vals = draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=k, max_size=k))
        if kind == "list":
            return (vals,), (np.array(vals),)
        arr = np.array(vals, dtype=np.int64)
        if kind == "int_tensor_2d" and k % 2 == 0:
            arr = arr.reshape(2, -1)
        return (tl.tensor(arr),), (arr,)
    if kind == "bool_full":
        mask = np.array(
            draw(st.lists(st.booleans(), min_size=math.prod(shape), max_size=math.prod(shape))),
            dtype=bool,
        ).reshape(shape)
        return (tl.tensor(mask),), (mask,)
    if kind == "bool_lead":
        mask = np.array(
            draw(st.lists(st.booleans(), min_size=shape[0], max_size=shape[0])), dtype=bool
        )
        return (tl.tensor(mask), Ellipsis), (mask, Ellipsis)
    if kind == "two_tensors" and n >= 2:
        k = draw(st.integers(1, 4))
        i0 = np.array(
            draw(st.lists(st.integers(0, shape[0] - 1), min_size=k, max_size=k)), dtype=np.int64
        )
        i1 = np.array(
            draw(st.lists(st.integers(-shape[1], shape[1] - 1), min_size=k, max_size=k)),
            dtype=np.int64,
        )
        return (tl.tensor(i0), tl.tensor(i1)), (i0, i1)
    # mixed: slice / None in front of a tensor index on the last dim
    i = np.array(
        draw(st.lists(st.integers(-shape[-1], shape[-1] - 1), min_size=1, max_size=3)),
        dtype=np.int64,
    )
    lead = (slice(None, None, 2), None) if n >= 2 else (None,)
    body = lead + (slice(None),) * (n - 1 - (1 if n >= 2 else 0))
    return body + (tl.tensor(i),), body + (i,)


@given(shape=shapes(1, 3, 1, 4), layout=layouts, dtype=float_dtypes, seed=seeds, data=st.data())
def test_getitem_advanced(shape, layout, dtype, seed, data):
    a, x = Maker(seed, dtype).build(shape, layout)
    tl_idx, np_idx = data.draw(advanced_indices(shape))
    out = x[tl_idx if len(tl_idx) > 1 else tl_idx[0]]
    expected = a[np_idx if len(np_idx) > 1 else np_idx[0]]
    assert_close(out, expected, dtype)


@given(shape=shapes(1, 3, 1, 4), layout=layouts, data=st.data())
def test_index_select(shape, layout, data):
    a, x = Maker(data.draw(seeds)).build(shape, layout)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    idx = np.array(
        data.draw(st.lists(st.integers(0, shape[dim] - 1), min_size=0, max_size=6)),
        dtype=np.int64,
    )
    out = tl.index_select(x, dim, tl.tensor(idx, dtype=tl.int64))
    assert_close(out, np.take(a, idx, axis=dim), np.float64)
    assert_close(x.index_select(dim, tl.tensor(idx, dtype=tl.int64)), np.take(a, idx, axis=dim))


@pytest.mark.parametrize(
    "call",
    [
        lambda x, i: tl.index_select(x, 0, i),
        lambda x, i: tl.gather(x, 0, i),
        lambda x, i: x.scatter_add(0, i, tl.ones(1)),
    ],
    ids=["index_select", "gather", "scatter_add"],
)
def test_index_ops_refuse_negative_indices_as_pytorch_does(call):
    # x[idx] wraps negative indices; these three raise in PyTorch ("index out of range")
    with pytest.raises(IndexError, match="negative indices are not accepted"):
        call(tl.tensor([1.0, 2.0, 3.0]), tl.tensor([-1]))


@given(shape=shapes(1, 3, 1, 4), layout=layouts, data=st.data())
def test_gather(shape, layout, data):
    a, x = Maker(data.draw(seeds)).build(shape, layout)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    # index: any size along dim, at most the input's size elsewhere (PyTorch's rule)
    ishape = tuple(
        data.draw(st.integers(1, 4)) if d == dim % len(shape) else data.draw(st.integers(1, s))
        for d, s in enumerate(shape)
    )
    rng = np.random.default_rng(data.draw(seeds))
    idx = rng.integers(0, shape[dim], size=ishape)
    out = tl.gather(x, dim, tl.tensor(idx))
    sub = a[
        tuple(slice(0, n) if d != dim % len(shape) else slice(None) for d, n in enumerate(ishape))
    ]
    assert_close(out, np.take_along_axis(sub, idx, axis=dim))


@given(shape=shapes(1, 3, 1, 4), layout=layouts, data=st.data())
def test_scatter_add_accumulates_repeated_indices(shape, layout, data):
    m = Maker(data.draw(seeds))
    a, x = m.build(shape, layout)
    n = len(shape)
    dim = data.draw(st.integers(-n, n - 1)) % n
    ishape = tuple(
        data.draw(st.integers(1, 4)) if d == dim else data.draw(st.integers(1, s))
        for d, s in enumerate(shape)
    )
    idx = m.rng.integers(0, shape[dim], size=ishape)
    src_shape = tuple(
        s + data.draw(st.integers(0, 1)) for s in ishape
    )  # src may be larger than index
    s, src = m.build(src_shape, data.draw(layouts))
    out = x.scatter_add(dim, tl.tensor(idx), src)
    expected = f64(a).copy()
    for pos in np.ndindex(*ishape):
        target = list(pos)
        target[dim] = idx[pos]
        expected[tuple(target)] += s[pos]
    assert_close(out, expected)
    np.testing.assert_array_equal(x.to_numpy(), a)  # out of place: the input is unchanged
    assert_close(tl.scatter_add(x, dim, tl.tensor(idx), src), expected)


@given(data=st.data())
def test_masked_fill_broadcast_mask(data):
    sx, _ = broadcastable_pair(data.draw, 1, 3)
    m = Maker(data.draw(seeds))
    a, x = m.build(sx, data.draw(layouts))
    lead = data.draw(st.integers(0, len(sx)))
    mshape = tuple(1 if data.draw(st.booleans()) else s for s in sx[lead:])
    mask = m.rng.random(mshape) < 0.5
    value = data.draw(st.sampled_from([0.0, -1e9, 2.5, -math.inf]))
    out = x.masked_fill(tl.tensor(mask), value)
    assert_close(out, np.where(mask, value, a))
    assert_close(tl.masked_fill(x, tl.tensor(mask), tl.tensor(value)), np.where(mask, value, a))


@given(data=st.data())
def test_where_three_way_broadcast(data):
    sa, sb = broadcastable_pair(data.draw, 0, 3)
    dtype = data.draw(float_dtypes)
    m = Maker(data.draw(seeds), dtype)
    a, x = m.build(sa, data.draw(layouts))
    b, y = m.build(sb, data.draw(layouts))
    cshape = data.draw(st.sampled_from([sa, sb, np.broadcast_shapes(sa, sb)]))
    c = m.rng.random(cshape) < 0.5
    cond = tl.tensor(c)
    assert_close(tl.where(cond, x, y), np.where(c, a, b), dtype)
    assert_close(x.where(cond, y), np.where(c, a, b), dtype)
    assert_close(tl.where(cond, x, 0.5), np.where(c, a, 0.5), dtype)
    assert_close(tl.where(cond, -1.0, y), np.where(c, -1.0, b), dtype)


def test_where_with_two_scalar_branches():
    out = tl.where(tl.tensor([True, False]), 1.0, 0.0)
    assert out.dtype == tl.float32 and out.tolist() == [1.0, 0.0]


# --- joining and splitting -----------------------------------------------------------------------


@given(shape=shapes(1, 3, 1, 4), data=st.data())
def test_cat_and_stack(shape, data):
    n = len(shape)
    dim = data.draw(st.integers(-n, n - 1))
    k = data.draw(st.integers(1, 4))
    m = Maker(data.draw(seeds))
    arrays, tensors = [], []
    for _ in range(k):
        s = list(shape)
        s[dim] = data.draw(st.integers(1, 3))
        a, t = m.build(s, data.draw(layouts))
        arrays.append(a)
        tensors.append(t)
    assert_close(tl.cat(tensors, dim), np.concatenate(arrays, axis=dim))
    same = [m.build(shape, data.draw(layouts)) for _ in range(k)]
    sdim = data.draw(st.integers(-n - 1, n))
    assert_close(tl.stack([t for _, t in same], sdim), np.stack([a for a, _ in same], axis=sdim))


def test_cat_promotes_dtypes():
    out = tl.cat([tl.tensor([1, 2]), tl.tensor([0.5])])
    assert out.dtype == tl.float32
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 0.5])


def _torch_split(a, size, axis):
    n = a.shape[axis]
    return [np.take(a, range(s, min(s + size, n)), axis=axis) for s in range(0, n, size)]


@given(shape=shapes(1, 3, 1, 6), layout=layouts, data=st.data())
def test_split_and_chunk(shape, layout, data):
    a, x = Maker(data.draw(seeds)).build(shape, layout)
    n = len(shape)
    dim = data.draw(st.integers(-n, n - 1))
    size = data.draw(st.integers(1, shape[dim] + 1))
    parts = x.split(size, dim)
    expected = _torch_split(a, size, dim)
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        assert_close(p, e)
        assert p._td.storage is x._td.storage  # split returns views
    # explicit sections
    cuts = sorted(data.draw(st.lists(st.integers(0, shape[dim]), max_size=3)))
    sections = [b - a_ for a_, b in zip([0] + cuts, cuts + [shape[dim]])]
    for p, e in zip(tl.split(x, sections, dim), np.split(a, np.cumsum(sections)[:-1], axis=dim)):
        assert_close(p, e)
    # chunk: ceil(n / chunks) per piece, possibly fewer pieces (PyTorch's rule)
    chunks = data.draw(st.integers(1, shape[dim] + 2))
    size = -(-shape[dim] // chunks)
    got = x.chunk(chunks, dim)
    expected = _torch_split(a, size, dim)
    assert len(got) == len(expected) <= chunks
    for p, e in zip(got, expected):
        assert_close(p, e)
    for p, e in zip(tl.chunk(x, chunks, dim), expected):
        assert_close(p, e)


# --- tril / triu / pad / unfold / embedding / shape helpers ---------------------------------------


@given(shape=shapes(2, 4, 1, 4), layout=layouts, diagonal=st.integers(-4, 4), seed=seeds)
def test_tril_triu(shape, layout, diagonal, seed):
    a, x = Maker(seed).build(shape, layout)
    assert_close(x.tril(diagonal), np.tril(a, diagonal))
    assert_close(tl.triu(x, diagonal), np.triu(a, diagonal))
    assert_close(tl.tril(x), np.tril(a))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_tril_triu_keep_the_dtype(dtype):
    """As numpy and PyTorch: an int or bool matrix stays int or bool (zero is 0 or False)."""
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    x = tl.tensor(a)
    for got, want in ((x.tril(), np.tril(a)), (tl.triu(x, 1), np.triu(a, 1))):
        assert got.dtype == x.dtype and got.tolist() == want.tolist()


@given(shape=shapes(1, 3, 1, 3), layout=layouts, seed=seeds, data=st.data())
def test_pad_constant(shape, layout, seed, data):
    a, x = Maker(seed).build(shape, layout)
    k = data.draw(st.integers(1, len(shape)))
    pad = data.draw(st.lists(st.integers(0, 2), min_size=2 * k, max_size=2 * k))
    value = data.draw(st.sampled_from([0.0, -1.5]))
    widths = [(0, 0)] * len(shape)
    for j in range(k):  # (left, right) pairs from the LAST dim backwards
        widths[len(shape) - 1 - j] = (pad[2 * j], pad[2 * j + 1])
    assert_close(tl.pad(x, tuple(pad), value=value), np.pad(a, widths, constant_values=value))


@given(shape=shapes(1, 3, 1, 5), layout=layouts, seed=seeds, data=st.data())
def test_unfold_values(shape, layout, seed, data):
    a, x = Maker(seed).build(shape, layout)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = data.draw(st.integers(1, shape[dim]))
    step = data.draw(st.integers(1, 3))
    out = x.unfold(dim, size, step)
    expected = sliding_window_view(a, size, axis=dim % len(shape))
    expected = expected[(slice(None),) * (dim % len(shape)) + (slice(None, None, step),)]
    assert_close(out, expected)


@given(
    seed=seeds,
    layout=layouts,
    idx_shape=shapes(0, 3, 1, 4),
    vocab=st.integers(1, 6),
    dim=st.integers(1, 4),
)
def test_embedding_lookup(seed, layout, idx_shape, vocab, dim):
    m = Maker(seed)
    w, weight = m.build((vocab, dim), layout)
    idx = m.rng.integers(0, vocab, size=idx_shape)
    out = tl.embedding(tl.tensor(idx, dtype=tl.int64), weight)
    assert_close(out, w[idx])


@given(shape=shapes(1, 4, 1, 4), layout=layouts, seed=seeds, data=st.data())
def test_flatten_unflatten_repeat_narrow(shape, layout, seed, data):
    a, x = Maker(seed).build(shape, layout)
    n = len(shape)
    s = data.draw(st.integers(0, n - 1))
    e = data.draw(st.integers(s, n - 1))
    assert_close(x.flatten(s, e), a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1 :]))
    assert_close(x.flatten(), a.reshape(-1))
    assert_close(x.unflatten(0, (1, shape[0])), a.reshape((1,) + a.shape))
    reps = tuple(data.draw(st.integers(1, 3)) for _ in range(n + data.draw(st.integers(0, 1))))
    assert_close(x.repeat(*reps), np.tile(a, reps))
    d = data.draw(st.integers(0, n - 1))
    start = data.draw(st.integers(0, shape[d] - 1))
    length = data.draw(st.integers(0, shape[d] - start))
    assert_close(x.narrow(d, start, length), np.take(a, range(start, start + length), axis=d))
    assert_close(x.view_as(x) if x.is_contiguous() else x.reshape_as(x), a)
    assert_close(x.expand_as(tl.zeros((2,) + shape)), np.broadcast_to(a, (2,) + shape))


# --- conversions -----------------------------------------------------------------------------


def test_item_tolist_numpy_and_bool():
    x = tl.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert x[1, 0].item() == 3.0 and isinstance(x[1, 0].item(), float)
    assert isinstance(tl.tensor([3]).item(), int)
    assert bool(tl.tensor([1.0])) is True and bool(tl.tensor(0.0)) is False
    assert float(tl.tensor(2.5)) == 2.5 and int(tl.tensor([7])) == 7
    arr = x.numpy()
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x), arr)
    assert len(x) == 2 and [r.tolist() for r in x] == [[1.5, 2.0], [3.0, 4.0]]
    assert (
        x.size() == (2, 2) and x.size(-1) == 2 and x.numel() == 4 and x.dim() == 2 and x.ndim == 2
    )
    assert (
        x.element_size() == 4 and x.is_floating_point() and not tl.tensor([1]).is_floating_point()
    )
    assert x.device == "cpu"


def test_repr_shows_values_dtype_and_grad():
    assert repr(tl.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert "float64" in repr(tl.tensor([1.0], dtype=tl.float64))
    assert "requires_grad=True" in repr(tl.tensor([1.0], requires_grad=True))
    assert "grad_fn" in repr(tl.tensor([1.0], requires_grad=True) * 2)
    assert repr(tl.tensor(3)) == "tensor(3)"


# --- factories ---------------------------------------------------------------------------------


def test_tensor_infers_dtype_and_copies():
    assert tl.tensor([1.0, 2]).dtype == tl.float32
    assert tl.tensor([1, 2]).dtype == tl.int64
    assert tl.tensor([True, False]).dtype == tl.bool
    assert tl.tensor(3.0).shape == () and tl.tensor(3.0).dtype == tl.float32
    assert tl.tensor(np.float64(2.0)).shape == ()
    assert tl.tensor(np.zeros(3)).dtype == tl.float64  # numpy arrays keep their float dtype
    assert tl.tensor(np.zeros(3, dtype=np.int32)).dtype == tl.int64
    assert tl.tensor(np.zeros(3, dtype=np.float16)).dtype == tl.float32
    assert tl.tensor([[1, 2], [3, 4]], dtype=tl.float64).dtype == tl.float64
    assert tl.tensor([]).shape == (0,)
    a = np.arange(6.0).reshape(2, 3)
    t = tl.tensor(a)
    a[0, 0] = 100.0
    assert t[0, 0].item() == 0.0  # tensor() copies
    nc = tl.tensor(a.T)  # a non-contiguous array
    np.testing.assert_array_equal(nc.numpy(), a.T)
    src = tl.tensor([1.0, 2.0])
    cp = tl.tensor(src)
    src.add_(1.0)
    assert cp.tolist() == [1.0, 2.0]
    nested = tl.tensor([tl.tensor([1.0, 2.0]), tl.tensor([3.0, 4.0])])
    assert nested.shape == (2, 2)


def test_from_numpy_and_as_tensor_share_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = tl.from_numpy(a)
    assert t.dtype == tl.float64 and t.shape == (2, 3)
    a[1, 2] = -5.0
    assert t[1, 2].item() == -5.0  # numpy -> tensor
    t[0, 0] = 42.0
    assert a[0, 0] == 42.0  # tensor -> numpy
    assert np.shares_memory(t.numpy(), a)
    b = np.arange(4, dtype=np.int64)
    u = tl.as_tensor(b)
    b[0] = 9
    assert u[0].item() == 9
    assert tl.as_tensor(t) is t
    assert tl.as_tensor([1, 2]).tolist() == [1, 2]
    assert tl.as_tensor(t, dtype=tl.float32).dtype == tl.float32
    with pytest.raises(tl.DTypeError):
        tl.from_numpy([1, 2])


@pytest.mark.parametrize("dtype", [None, tl.float32, tl.float64, tl.int64, tl.bool])
def test_filled_factories(dtype):
    expect = dtype or tl.float32
    for fn, value in ((tl.zeros, 0), (tl.ones, 1)):
        t = fn(2, 3, dtype=dtype)
        assert t.shape == (2, 3) and t.dtype == expect
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, dtype=expect.np))
        assert fn((2, 3), dtype=dtype).shape == (2, 3)
        assert fn([4], dtype=dtype).shape == (4,)
        assert fn(dtype=dtype).shape == ()
    e = tl.empty(3, 2, dtype=dtype)
    assert e.shape == (3, 2) and e.dtype == expect
    f = tl.full((2, 2), 1, dtype=dtype)
    assert f.dtype == (dtype or tl.int64)
    np.testing.assert_array_equal(f.numpy(), 1)
    like_src = tl.tensor(np.arange(6.0).reshape(3, 2))
    for fn, value in ((tl.zeros_like, 0), (tl.ones_like, 1)):
        t = fn(like_src, dtype=dtype)
        assert t.shape == (3, 2) and t.dtype == (dtype or tl.float64)
        np.testing.assert_array_equal(t.numpy(), value)
    t = tl.full_like(like_src, 7, dtype=dtype)
    assert t.dtype == (dtype or tl.float64)
    np.testing.assert_array_equal(t.numpy(), np.full((3, 2), 7, dtype=(dtype or tl.float64).np))
    assert tl.empty_like(like_src, dtype=dtype).shape == (3, 2)


def test_full_infers_dtype_from_value():
    assert tl.full((2,), 1.5).dtype == tl.float32
    assert tl.full((2,), 3).dtype == tl.int64
    assert tl.full((2,), True).dtype == tl.bool
    np.testing.assert_array_equal(tl.full((2, 2), -2.5).numpy(), -2.5)


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((5,), {}),
        ((2, 7), {}),
        ((0, 10, 3), {}),
        ((10, 0, -2), {}),
        ((0.0, 1.0, 0.25), {}),
        ((1, 2.5, 0.5), {}),
        ((-3, 3), {"dtype": tl.float64}),
        ((0, 1, 0.1), {}),
        ((3,), {"dtype": tl.float32}),
    ],
)
def test_arange(args, kwargs):
    t = tl.arange(*args, **kwargs)
    ints = all(isinstance(v, int) for v in args) and "dtype" not in kwargs
    expected = np.arange(*args, dtype=np.int64 if ints else np.float64)
    assert t.dtype == kwargs.get("dtype", tl.int64 if ints else tl.float32)
    assert t.shape == expected.shape
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_linspace_eye():
    np.testing.assert_allclose(tl.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5), rtol=1e-7)
    assert tl.linspace(-1, 1, 3, dtype=tl.float64).dtype == tl.float64
    assert tl.linspace(0, 1, 1).tolist() == [0.0]
    np.testing.assert_array_equal(tl.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(tl.eye(2, 4).numpy(), np.eye(2, 4))
    assert tl.eye(2, dtype=tl.int64).dtype == tl.int64


def test_random_factories_ranges_and_dtypes():
    tl.manual_seed(0)
    r = tl.rand(1000)
    assert r.dtype == tl.float32 and r.shape == (1000,)
    assert 0.0 <= r.min().item() and r.max().item() < 1.0
    assert abs(r.mean().item() - 0.5) < 0.05
    n = tl.randn(20, 50, dtype=tl.float64)
    assert n.dtype == tl.float64 and n.shape == (20, 50)
    assert abs(n.mean().item()) < 0.1 and abs(n.std().item() - 1.0) < 0.1
    i = tl.randint(3, 7, (500,))
    assert i.dtype == tl.int64 and set(np.unique(i.numpy())) == {3, 4, 5, 6}
    assert tl.randint(5, (2, 3)).shape == (2, 3)
    assert set(np.unique(tl.randint(2, size=(200,)).numpy())) == {0, 1}
    assert tl.rand_like(n).shape == n.shape and tl.rand_like(n).dtype == tl.float64
    assert tl.randn_like(r).dtype == tl.float32
    assert tl.rand(2, 3, requires_grad=True).requires_grad
    with pytest.raises(tl.DTypeError):
        tl.rand(3, dtype=tl.int64)


@pytest.mark.parametrize("low, high", [(0, 2), (-5, 3), (10, 34), (0, 2**32), (-(2**40), 2**40)])
def test_randint_is_uniform_on_its_span(low, high):
    """Modulo draws (spans up to MODULO_SPAN) and numpy's exact integers (wider): every value in
    [low, high), each equally often within a chi-square bound for small spans."""
    from torchlight.tensor.dispatch import index_range

    g = tl.Generator().manual_seed(3)
    x = tl.randint(low, high, (60000,), generator=g)
    assert index_range(x) == (low, high - 1)  # recorded from the bounds: no pass over the values
    v = x.numpy()
    assert x.dtype == tl.int64 and low <= v.min() and v.max() < high
    if high - low <= 64:
        counts = np.bincount(v - low, minlength=high - low)
        expected = len(v) / (high - low)
        chi2 = ((counts - expected) ** 2 / expected).sum()
        assert chi2 < 3 * (high - low) + 30, counts  # a uniform draw exceeds this with p < 1e-8
    else:
        quarters = np.bincount((v - low) // ((high - low) // 4), minlength=4)
        np.testing.assert_allclose(quarters / len(v), 0.25, atol=0.01)
    again = tl.randint(low, high, (60000,), generator=tl.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(v, again)


@pytest.mark.parametrize("n", [5, 1023, 1024, 200001])
def test_randn_float32_matches_the_normal_distribution(n):
    """Either side of NORMAL_PAIRS_MIN (ziggurat below, Box–Muller pairs from it on, odd sizes
    too): moments and the normal CDF at several points (against math.erf), reproducible."""
    from torchlight.tensor.random import NORMAL_PAIRS_MIN

    assert 1023 < NORMAL_PAIRS_MIN <= 1024
    x = tl.randn(n, generator=tl.Generator().manual_seed(5))
    assert x.dtype == tl.float32 and x.shape == (n,)
    v = x.numpy().astype(np.float64)
    np.testing.assert_array_equal(v, tl.randn(n, generator=tl.Generator().manual_seed(5)).numpy())
    if n < 1000:
        return
    tol = 5 / np.sqrt(n)  # five standard errors of a proportion of at most 1/2
    assert abs(v.mean()) < tol and abs(v.std() - 1) < 2 * tol
    for z in (-2.5, -1.0, 0.0, 0.5, 1.5, 3.0):
        assert abs((v <= z).mean() - 0.5 * (1 + math.erf(z / math.sqrt(2)))) < tol, z
    assert np.abs(v).max() <= 5.78  # sqrt(-2 ln 2^-24): the largest pair radius


def test_rand_float32_is_drawn_at_float32():
    g = tl.Generator().manual_seed(0)
    x = tl.rand(300000, generator=g).numpy()
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() < 1
    # 24 random bits a value: every value is a multiple of 2^-24 (a rounded float64 draw is not)
    assert np.all(x * 2**24 == np.floor(x * 2**24))
    assert tl.rand(3, dtype=tl.float64, generator=g).dtype == tl.float64


def test_randint_refuses_an_empty_span_and_keeps_dtype_and_empty_sizes():
    with pytest.raises(ValueError, match="high .3. must be greater than low .5."):
        tl.randint(5, 3, (2,))
    with pytest.raises(ValueError, match="does not fit int64"):
        tl.randint(2**63 - 2, 2**63 + 3, (2,))  # modulo draws would wrap past int64
    top = tl.randint(2**63 - 3, 2**63, (100,)).numpy()
    assert top.min() >= 2**63 - 3 and top.max() <= 2**63 - 1
    assert tl.randint(3, (2,), dtype=tl.float32).dtype == tl.float32
    assert tl.randint(0, 4, (0, 3)).shape == (0, 3)
    assert tl.randint(7, 8, ()).item() == 7


def test_manual_seed_reproducibility():
    tl.manual_seed(1234)
    a = (tl.rand(5).numpy(), tl.randn(3, 2).numpy(), tl.randint(0, 100, (4,)).numpy())
    tl.manual_seed(1234)
    b = (tl.rand(5).numpy(), tl.randn(3, 2).numpy(), tl.randint(0, 100, (4,)).numpy())
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    tl.manual_seed(1235)
    assert not np.array_equal(tl.rand(5).numpy(), a[0])
    assert tl.initial_seed() == 1235
    # numpy's global state does not affect torchlight's stream
    tl.manual_seed(7)
    first = tl.rand(3).numpy()
    tl.manual_seed(7)
    np.random.seed(99)
    np.random.rand(10)
    np.testing.assert_array_equal(tl.rand(3).numpy(), first)
    # an explicit generator is independent of the default one
    g1, g2 = tl.Generator(5), tl.Generator(5)
    tl.rand(10)
    np.testing.assert_array_equal(
        tl.rand(4, generator=g1).numpy(), tl.rand(4, generator=g2).numpy()
    )
    x = tl.zeros(4)
    tl.manual_seed(3)
    x.uniform_(-1, 1)
    y = tl.zeros(4)
    tl.manual_seed(3)
    y.uniform_(-1, 1)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert -1 <= x.min().item() and x.max().item() < 1


def test_factories_accept_dtype_names_and_numpy_dtypes():
    assert tl.zeros(2, dtype="float64").dtype == tl.float64
    assert tl.zeros(2, dtype=np.float32).dtype == tl.float32
    assert tl.ones(2, dtype=tl.long).dtype == tl.int64
    assert tl.ones(2, dtype=tl.double).dtype == tl.float64
    with pytest.raises(tl.DTypeError):
        tl.zeros(2, dtype="complex64")


# --- integer tensors ----------------------------------------------------------------------------

INT_BINARY = {
    "add": (lambda x, y: x + y, np.add),
    "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply),
    "maximum": (tl.maximum, np.maximum),
    "minimum": (tl.minimum, np.minimum),
    "lt": (lambda x, y: x < y, np.less),
    "eq": (lambda x, y: x == y, np.equal),
}


@pytest.mark.parametrize("name", sorted(INT_BINARY))
@given(data=st.data())
def test_int64_binary_ops_stay_exact(name, data):
    fn, ref = INT_BINARY[name]
    a, x, b, y, _ = data.draw(operand_pairs("int", dtype=np.int64))
    out = fn(x, y)
    expected = ref(a, b)
    assert out.to_numpy().dtype == expected.dtype
    np.testing.assert_array_equal(out.to_numpy(), expected)


@given(case=reduce_cases(kind="int"))
def test_int64_sum_prod_max_stay_integer(case):
    a, x, dim, keepdim, _ = case
    x, a = x.long(), a.astype(np.int64)
    axis = _axis(dim)
    assert x.sum(dim, keepdim=keepdim).dtype == tl.int64
    np.testing.assert_array_equal(
        x.sum(dim, keepdim=keepdim).numpy(), a.sum(axis=axis, keepdims=keepdim)
    )
    np.testing.assert_array_equal(
        x.amax(dim, keepdim=keepdim).numpy(), a.max(axis=axis, keepdims=keepdim)
    )
    np.testing.assert_array_equal(
        x.prod(dim, keepdim=keepdim).numpy(), a.prod(axis=axis, keepdims=keepdim)
    )


# --- empty tensors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda z: z.sum(0), np.zeros(3)),
        (lambda z: z.sum(), np.float64(0.0)),
        (lambda z: z.prod(0), np.ones(3)),
        (lambda z: z + tl.ones(3), np.zeros((0, 3))),
        (lambda z: z @ tl.ones(3, 2), np.zeros((0, 2))),
        (lambda z: z.T.contiguous(), np.zeros((3, 0))),
        (lambda z: z.reshape(3, 0), np.zeros((3, 0))),
        (lambda z: z.view(-1), np.zeros(0)),
        (lambda z: tl.cat([z, tl.ones(1, 3)]), np.ones((1, 3))),
        (lambda z: z.softmax(-1), np.zeros((0, 3))),
        (lambda z: tl.ones(3)[5:], np.zeros(0)),
        (lambda z: tl.ones(3)[tl.tensor([False, False, False])], np.zeros(0)),
        (lambda z: tl.ones(3)[tl.tensor([], dtype=tl.int64)], np.zeros(0)),
    ],
)
def test_empty_tensors(make, expected):
    out = make(tl.zeros(0, 3))
    assert out.shape == np.shape(expected)
    np.testing.assert_array_equal(out.to_numpy(), expected)


@given(case=reduce_cases(kind="ties", single_dim=True))
def test_argmax_argmin_return_the_first_maximal_index(case):
    """PyTorch documents the first occurrence on ties (numpy's rule too)."""
    a, x, dim, keepdim, _ = case
    np.testing.assert_array_equal(
        x.argmax(dim, keepdim=keepdim).numpy(), np.argmax(a, axis=dim, keepdims=keepdim)
    )
    np.testing.assert_array_equal(
        x.argmin(dim, keepdim=keepdim).numpy(), np.argmin(a, axis=dim, keepdims=keepdim)
    )
    assert x.argmax().item() == np.argmax(a) and x.argmin().item() == np.argmin(a)


def test_shared_scalar_operands_keep_signs_and_stay_unwritten():
    # scalar operands are kept per (value, dtype, backend): writing a result must not reach them,
    # and -0.0 must not be served 0.0's storage
    x = tl.ones(3)
    y = x * 3.0
    y.add_(1.0)
    np.testing.assert_array_equal((x * 3.0).numpy(), [3.0, 3.0, 3.0])
    with np.errstate(divide="ignore"):
        assert (1 / (x * -0.0)).tolist() == [-np.inf] * 3
        assert (1 / (x * 0.0)).tolist() == [np.inf] * 3
    assert np.isnan((x * float("nan")).numpy()).all()
    assert (tl.ones(2, dtype=tl.int64) * 2).dtype is tl.int64
    assert (tl.ones(2, dtype=tl.int64) * 2.5).tolist() == [2.5, 2.5]
    assert (x * np.float32(2.0)).tolist() == [2.0, 2.0, 2.0]
    a = tl.ones(2, 2)
    assert (a[:, 1] * 2.0 + 1.0).tolist() == [3.0, 3.0]  # a strided operand, shared scalars


def test_ieee_results_do_not_warn():
    """0/0, 1/0, log 0 and overflow give nan/inf silently, as in PyTorch (numpy warns for each,
    from inside the numpy backend); the user's own numpy calls still warn. A fresh interpreter
    with warnings as errors, since pytest resets the warning filters around each test."""
    code = (
        "import numpy as np, torchlight as tl\n"
        "z = tl.tensor([0.0, 1.0]) / tl.tensor([0.0, 0.0])\n"
        "assert np.isnan(z[0].item()) and z[1].item() == float('inf')\n"
        "assert tl.tensor([0.0]).log().item() == -float('inf')\n"
        "assert (tl.tensor([1e30]) * 1e30).item() == float('inf')\n"
        "try:\n"
        "    np.array([0.0]) / 0\n"
        "except RuntimeWarning:\n"
        "    print('numpy warns')\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "numpy warns"


@pytest.mark.parametrize(
    "shape,dim,keepdim",
    [
        ((0,), None, False),
        ((2, 0), 1, False),
        ((2, 0), 1, True),
        ((2, 0), 0, False),
        ((3, 0, 2), (1, 2), True),
    ],
)
def test_all_any_over_no_elements(shape, dim, keepdim):
    """Over an empty dimension ``all`` is True and ``any`` False (their identities, as numpy and
    PyTorch); it used to raise "cannot reduce an empty dimension"."""
    x = tl.zeros(*shape)
    args = () if dim is None else (dim, keepdim)
    axis = dim if dim is None or isinstance(dim, tuple) else (dim,)
    for name in ("all", "any"):
        got = getattr(x, name)(*args)
        want = getattr(np, name)(np.zeros(shape), axis=axis, keepdims=keepdim and dim is not None)
        assert got.dtype is tl.bool and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
