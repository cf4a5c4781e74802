"""The cheaper forms of the numpy backend's formulas and of the paths around them, each against an
independent oracle: the sigmoid as ``1 / (1 + e^{-x})`` in four in-place passes, powers by
products and roots (:data:`POWER_FORMS`, whole exponents by squaring), row sums as a
product with ones from :data:`ROW_SUMS_BLAS` elements on, maxima over many narrow rows by the
transposed copy, a product over one column as the outer product, fill factories writing with
``ndarray.fill``, and backward formulas that skip the gradient of an operand that needs none."""

import math
from fractions import Fraction

import numpy as np
import pytest

import torchlight as tl
from torchlight.autograd.function import Context
from torchlight.tensor.backend.numpy import blas_operands
from torchlight.tensor.backend.numpy_ops import POWER_FORMS, WHOLE_POWER_MAX, ZIP, sigmoid
from torchlight.tensor.backend.numpy_rows import (
    MANY_ROWS,
    NARROW_ROW,
    ROW_SUMS_BLAS,
    lse_shift,
    row_maxes,
    row_sums,
)
from torchlight.tensor.errors import ShapeError
from torchlight.tensor.functions.activation import cross_entropy_rows, layer_norm
from torchlight.tensor.functions.pointwise import Add, Sub

# --- sigmoid --------------------------------------------------------------------------------------


def _sigmoid64(x):
    """The float64 reference, element by element with ``math`` (no numpy formula shared)."""
    return np.array([1.0 / (1.0 + math.exp(-v)) if v > -700 else 0.0 for v in x.astype(float)])


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_within_three_ulp_of_the_float64_value_across_the_range(dtype):
    x = np.concatenate([np.linspace(-120, 120, 4801), [0.0, -0.0, 1e-30, -1e-30]]).astype(dtype)
    out = np.empty_like(x)
    sigmoid(x, out)
    ref = _sigmoid64(x)
    tiny = np.finfo(dtype).tiny
    normal = ref >= tiny
    ulp = np.spacing(ref[normal].astype(dtype)).astype(float)
    assert np.all(np.abs(out[normal] - ref[normal]) <= 3 * ulp)
    # below the smallest normal float the answer is 0 or that tiny value, never more
    assert np.all((out[~normal] >= 0) & (out[~normal] <= tiny))


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")
def test_sigmoid_of_infinities_and_nan():
    x = np.array([np.inf, -np.inf, np.nan], np.float32)
    out = np.empty_like(x)
    sigmoid(x, out)
    assert out[0] == 1.0 and out[1] == 0.0 and np.isnan(out[2])


def test_sigmoid_in_place_on_a_strided_view():
    base = np.linspace(-8, 8, 40).astype(np.float32).reshape(5, 8)
    view = base[:, ::2]
    expected = _sigmoid64(view.reshape(-1)).reshape(view.shape)
    sigmoid(view, view)
    np.testing.assert_allclose(view, expected, rtol=2e-7)
    assert np.array_equal(
        base[:, 1::2], np.linspace(-8, 8, 40).astype(np.float32).reshape(5, 8)[:, 1::2]
    )


# --- powers by their forms ------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.filterwarnings("ignore:divide by zero encountered")
@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("exponent", sorted(POWER_FORMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("expanded", [False, True], ids=["0-d", "expanded"])
def test_a_power_by_its_form_is_within_two_ulp_of_the_float64_power(exponent, dtype, expanded):
    x = np.concatenate([np.linspace(-30, 30, 2401), [0.0, 1e-20, np.inf, np.nan]]).astype(dtype)
    out = np.empty_like(x)
    e = np.array(exponent, dtype)
    ZIP["pow"](x, np.broadcast_to(e, x.shape) if expanded else e, out=out)
    ref = np.array([_pow64(v, exponent) for v in x.astype(float)])
    finite = np.isfinite(ref) & (np.abs(ref) < np.finfo(dtype).max)
    ulp = np.spacing(np.abs(ref[finite]).astype(dtype)).astype(float)
    assert np.all(np.abs(out[finite] - ref[finite]) <= 2 * ulp)
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.array_equal(out[np.isinf(ref)], ref[np.isinf(ref)].astype(dtype))


def _pow64(v, e):
    """``v ** e`` in Python floats (``math``, no numpy): nan where the real power has no value."""
    if math.isnan(v) or (v < 0 and e != int(e)):
        return math.nan
    if v == 0 and e < 0:
        return math.inf
    return math.pow(v, e) if not math.isinf(v) else (math.inf if e > 0 else 0.0)


@pytest.mark.filterwarnings("ignore:divide by zero encountered")
@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("n", [4, 5, -3, 7, WHOLE_POWER_MAX, -WHOLE_POWER_MAX])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_whole_power_is_the_rounded_exact_power_in_float32(n, dtype):
    x = np.concatenate([np.linspace(-9, 9, 1801), [0.0, np.inf, -np.inf, np.nan]]).astype(dtype)
    out = np.empty_like(x)
    ZIP["pow"](x, np.array(float(n), dtype), out=out)
    exact = [_exact_pow(v, n) for v in x.astype(float)]
    ref = np.array([float(v) for v in exact])  # the exact rational, rounded to float64 once
    tiny, big = np.finfo(dtype).tiny, np.finfo(dtype).max
    normal = np.isfinite(ref) & (np.abs(ref) >= tiny) & (np.abs(ref) <= big)
    ulp = np.spacing(np.abs(ref[normal]).astype(dtype)).astype(float)
    bound = 0.51 if dtype == np.float32 else abs(n)
    assert np.all(np.abs(out[normal] - ref[normal]) <= bound * ulp)
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.array_equal(out[np.isinf(ref)], ref[np.isinf(ref)].astype(dtype))


def _exact_pow(v, n):
    """``v ** n`` as an exact rational (``fractions``), or the IEEE answer at 0, inf and nan."""
    if math.isnan(v):
        return math.nan
    if math.isinf(v) or v == 0:
        return math.pow(v, n) if not (v == 0 and n < 0) else math.inf
    return Fraction(v) ** n


def test_a_cube_in_place_is_not_the_fourth_power():
    x = tl.tensor([-2.0, 0.5, 3.0])
    x.pow_(3.0)
    assert x.tolist() == [-8.0, 0.125, 27.0]


def test_other_exponents_ints_and_tensor_exponents_take_the_general_power():
    x = np.array([1.5, 2.0, 4.0], np.float32)
    out = np.empty_like(x)
    ZIP["pow"](x, np.array(1.5, np.float32), out=out)
    np.testing.assert_allclose(out, [1.5**1.5, 2.0**1.5, 8.0], rtol=1e-6)
    assert (tl.tensor([2, 3]) ** 3).tolist() == [8, 27]
    assert (tl.tensor([2.0, 3.0]) ** tl.tensor([3.0, 2.0])).tolist() == [8.0, 9.0]


def test_the_gradient_of_a_cube_is_three_squares():
    x = tl.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    (x**3.0).sum().backward()
    assert x.grad.tolist() == [12.0, 0.75, 27.0]


# --- row sums ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 5), (16, 27), (64, 65), (3, 40, 33)])
def test_row_sums_match_float64_sums_on_both_sides_of_the_threshold(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert (x.size >= ROW_SUMS_BLAS) == (x.size > 1000)
    got = row_sums(x, -1)
    ref = x.astype(np.float64).sum(axis=-1, keepdims=True)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * shape[-1])
    inner = row_sums(x, 0)  # another axis: numpy's reduction
    np.testing.assert_allclose(
        inner, x.astype(np.float64).sum(0, keepdims=True), rtol=1e-5, atol=1e-4
    )


@pytest.mark.parametrize(
    "shape",
    [(16, 9), (MANY_ROWS, NARROW_ROW), (MANY_ROWS, NARROW_ROW + 1), (16, 2, 9, 9), (300, 1), (5,)],
)
def test_row_maxes_are_numpys_maxima_on_both_sides_of_the_thresholds(shape):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30]
    at = rng.choice(x.size, min(len(specials), x.size), replace=False)
    x.reshape(-1)[at] = specials[: len(at)]
    for view in (x, np.swapaxes(x, 0, -1)):  # contiguous, and a strided view
        got = row_maxes(view, -1)
        ref = np.array([max_or_nan(row) for row in view.reshape(-1, view.shape[-1])])
        assert got.shape == view.shape[:-1] + (1,)
        np.testing.assert_array_equal(got.reshape(-1), ref)
    np.testing.assert_array_equal(row_maxes(x, 0), x.max(0, keepdims=True))  # another axis


def max_or_nan(row):
    """A row's maximum in Python floats (no numpy reduction): nan if it holds a nan."""
    values = [float(v) for v in row]
    return math.nan if any(math.isnan(v) for v in values) else max(values)


def test_the_shift_of_a_row_of_infinities_is_zero():
    x = np.full((MANY_ROWS, 3), -np.inf, np.float32)
    x[1] = [np.inf, 0.0, 1.0]
    x[2] = [1.0, 5.0, -2.0]
    m = lse_shift(x, -1)[:, 0]
    assert m[0] == 0 and m[1] == 0 and m[2] == 5.0


@pytest.mark.parametrize("shape", [(16, 2, 9, 9), (144, 15)])
def test_softmax_and_cross_entropy_over_narrow_rows_match_float64(shape):
    """Many narrow rows take the transposed maxima: softmax and its gradient, cross-entropy."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(shape) * 3).astype(np.float32)
    a64 = a.astype(np.float64)
    p = np.exp(a64 - a64.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    x = tl.tensor(a, requires_grad=True)
    y = tl.softmax(x, -1)
    np.testing.assert_allclose(y.to_numpy(), p, rtol=1e-5, atol=1e-7)
    g = rng.standard_normal(shape)
    y.backward(tl.tensor(g.astype(np.float32)))
    ref = p * (g - (g * p).sum(-1, keepdims=True))
    np.testing.assert_allclose(x.grad.to_numpy(), ref, rtol=1e-4, atol=1e-6)
    rows = a.reshape(-1, shape[-1])
    t = rng.integers(0, shape[-1], len(rows))
    loss = cross_entropy_rows(tl.tensor(rows), tl.tensor(t), reduction="mean")
    r64 = rows.astype(np.float64)
    lse = np.log(np.exp(r64 - r64.max(1, keepdims=True)).sum(1)) + r64.max(1)
    assert abs(loss.item() - (lse - r64[np.arange(len(rows)), t]).mean()) <= 1e-5


def test_layer_norm_over_many_short_rows_matches_float64():
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((16, 9, 16)) * 2 + 1).astype(np.float32)
    w = rng.standard_normal(16).astype(np.float32)
    x = tl.tensor(a, requires_grad=True)
    wt = tl.tensor(w, requires_grad=True)
    bt = tl.zeros(16, requires_grad=True)
    y = layer_norm(x, (16,), wt, bt)
    a64 = a.astype(np.float64)
    mu, var = a64.mean(-1, keepdims=True), a64.var(-1, keepdims=True)
    xhat = (a64 - mu) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(y.to_numpy(), xhat * w, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(a.shape)
    y.backward(tl.tensor(g.astype(np.float32)))
    dxhat = g * w
    dx = dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)
    dx /= np.sqrt(var + 1e-5)
    np.testing.assert_allclose(x.grad.to_numpy(), dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(wt.grad.to_numpy(), (g * xhat).sum((0, 1)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bt.grad.to_numpy(), g.sum((0, 1)), rtol=1e-4, atol=1e-4)


def test_softmax_family_and_cross_entropy_above_the_threshold_match_float64():
    """(64, 65) logits take the product-with-ones sums: softmax, log_softmax, logsumexp and
    cross-entropy (value and gradient) against float64 numpy formulas."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((64, 65)) * 3).astype(np.float32)
    t = rng.integers(0, 65, 64)
    a64 = a.astype(np.float64)
    m = a64.max(1, keepdims=True)
    lse = m + np.log(np.exp(a64 - m).sum(1, keepdims=True))
    p = np.exp(a64 - lse)
    x = tl.tensor(a, requires_grad=True)
    np.testing.assert_allclose(tl.softmax(x, 1).to_numpy(), p, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(tl.log_softmax(x, 1).to_numpy(), a64 - lse, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tl.logsumexp(x, 1).to_numpy(), lse[:, 0], rtol=1e-6)
    loss = cross_entropy_rows(x, tl.tensor(t), reduction="mean")
    ref = (lse[:, 0] - a64[np.arange(64), t]).mean()
    assert abs(loss.item() - ref) <= 1e-5 * abs(ref)
    loss.backward()
    onehot = np.zeros_like(p)
    onehot[np.arange(64), t] = 1
    np.testing.assert_allclose(x.grad.to_numpy(), (p - onehot) / 64, rtol=1e-4, atol=1e-8)


# --- outer products -------------------------------------------------------------------------------


@pytest.mark.parametrize(("a_shape", "b_shape"), [((97, 1), (1, 128)), ((3, 5, 1), (3, 1, 4))])
def test_a_product_over_one_column_is_the_outer_product(a_shape, b_shape):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    x, y = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
    z = x @ y
    exact = a.astype(np.float64) * b.astype(np.float64)  # one product: rounded once to float32
    np.testing.assert_array_equal(z.to_numpy(), exact.astype(np.float32))
    g = rng.standard_normal(z.shape).astype(np.float32)
    z.backward(tl.tensor(g))
    np.testing.assert_allclose(x.grad.to_numpy(), (g @ np.swapaxes(b, -1, -2)), rtol=1e-5)
    np.testing.assert_allclose(y.grad.to_numpy(), (np.swapaxes(a, -1, -2) @ g), rtol=1e-5)
    t = tl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)  # strided
    np.testing.assert_array_equal((t @ y).to_numpy(), exact.astype(np.float32))


# --- operands handed to BLAS ---------------------------------------------------------------------


def test_blas_takes_transposed_views_and_packs_what_it_cannot_take():
    """What :func:`blas_operands` packs: a matrix without a unit stride (numpy's generic loop
    would run it), never a transposed view (BLAS's transpose flag takes it); the product is
    numpy's in every case."""
    rng = np.random.default_rng(6)
    q = rng.standard_normal((4, 2, 9, 8)).astype(np.float32)
    kt = rng.standard_normal((4, 2, 9, 8)).astype(np.float32).swapaxes(-1, -2)  # keysᵀ
    x, y = blas_operands(q, kt)
    assert x is q and y is kt
    cols_t = rng.standard_normal((4, 25, 784)).astype(np.float32).swapaxes(-1, -2)
    dy = rng.standard_normal((4, 6, 784)).astype(np.float32)  # LeNet's first convolution's dW
    assert blas_operands(dy, cols_t)[1] is cols_t
    left = rng.standard_normal((4, 784, 25)).astype(np.float32).swapaxes(-1, -2)
    assert blas_operands(left, dy.swapaxes(-1, -2))[0] is left
    stepped = rng.standard_normal((4, 18, 8)).astype(np.float32)[:, ::2]  # rows 2 apart, cols 1
    assert blas_operands(stepped, kt[:, 0])[0] is stepped  # BLAS takes it
    gaps = rng.standard_normal((4, 9, 16)).astype(np.float32)[:, :, ::2]  # no unit stride
    packed = blas_operands(gaps, kt[:, 0])[0]
    assert packed is not gaps and packed.flags.c_contiguous
    for a, b in ((q, kt), (dy, cols_t), (gaps, kt[:, 0])):
        want = a.astype(np.float64) @ b.astype(np.float64)  # float32 sums of up to 784 terms
        np.testing.assert_allclose((tl.tensor(a) @ tl.tensor(b)).to_numpy(), want, atol=3e-4)


# --- fill factories -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (0, tl.int64, [0, 0, 0]),
        (-1, tl.int64, [-1, -1, -1]),
        (1.7, tl.int64, [1, 1, 1]),  # truncated toward zero, as PyTorch's full
        (-1.7, tl.int64, [-1, -1, -1]),
        (True, tl.float32, [1.0, 1.0, 1.0]),
        (2.5, tl.float64, [2.5, 2.5, 2.5]),
        (-1, tl.bool, [True, True, True]),
        (1e300, tl.float32, [float("inf")] * 3),  # a float dtype rounds to inf, as PyTorch
    ],
)
def test_full_writes_the_value_pytorch_writes(value, dtype, expected):
    out = tl.full((3,), value, dtype=dtype)
    assert out.dtype is dtype
    assert out.tolist() == expected


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e20, 2**63, -(2**63) - 1])
@pytest.mark.parametrize(
    "make",
    [
        lambda v: tl.full((3,), v, dtype=tl.int64),
        lambda v: tl.zeros(3, dtype=tl.int64).fill_(v),
        lambda v: tl.zeros(3, dtype=tl.int64).masked_fill(tl.ones(3, dtype=tl.bool), v),
    ],
    ids=["full", "fill_", "masked_fill"],
)
def test_an_integer_fill_refuses_what_int64_cannot_hold(value, make):
    """numpy would write INT64_MIN (or wrap) without a word; PyTorch raises, and so do we (a
    shared constant of an int64 tensor, masked_fill's, checks its value too)."""
    with pytest.raises(tl.DTypeError, match="cannot be converted to type torchlight.int64"):
        make(value)


def test_int64_fill_records_the_value_as_its_index_range():
    from torchlight.tensor.dispatch import index_range

    assert index_range(tl.full((4,), 7)) == (7, 7)
    assert index_range(tl.zeros(5, dtype=tl.int64)) == (0, 0)


@pytest.mark.parametrize("size", [(-1,), (2, -3), (-2, -3), ((4, -1),)])
def test_negative_sizes_are_refused(size):
    with pytest.raises(ShapeError, match="negative dimension"):
        tl.zeros(*size)


def test_sizes_are_checked_once_and_every_spelling_gives_the_same_shape(monkeypatch):
    from torchlight.tensor import creation

    monkeypatch.setattr(creation, "_SIZES", {})
    spellings = [(2, 3), ((2, 3),), ([2, 3],), (np.int64(2), 3), ((np.int64(2), 3),)]
    for _ in range(2):  # the second round reads what the first one kept
        for size in spellings:
            assert creation.size_of(size) == (2, 3) and type(creation.size_of(size)[0]) is int
    assert set(creation._SIZES) == {(2, 3), ((2, 3),)}  # plain ints only
    t = tl.tensor(4)
    assert tl.zeros(t).shape == (4,)
    assert set(creation._SIZES) == {(2, 3), ((2, 3),)}  # a tensor is never kept as a key
    with pytest.raises(ShapeError, match="negative dimension"):
        tl.zeros(2, -3)
    assert (2, -3) not in creation._SIZES
    monkeypatch.setattr(creation, "INFERRED_MAX", 2)
    tl.zeros(5), tl.zeros(6)
    assert len(creation._SIZES) == 2  # full: new sizes are still checked, not kept


def test_zero_sized_and_scalar_fills():
    assert tl.zeros(0, 3).shape == (0, 3)
    assert tl.ones(()).item() == 1.0
    assert tl.full((), 3).item() == 3


# --- gradients of operands that need none ----------------------------------------------------------


@pytest.mark.parametrize("fn", [Add, Sub])
@pytest.mark.parametrize("needs", [(True, False), (False, True), (True, True)])
def test_add_and_sub_compute_only_the_gradients_asked_for(fn, needs):
    ctx = Context(needs)
    ctx.shapes = ((), (3, 4))
    g = tl.tensor(np.arange(12.0).reshape(3, 4))
    ga, gb = fn.backward(ctx, g)
    sign = -1.0 if fn is Sub else 1.0
    assert (ga is None) == (not needs[0]) and (gb is None) == (not needs[1])
    if ga is not None:
        assert ga.shape == () and ga.item() == 66.0
    if gb is not None:
        np.testing.assert_array_equal(gb.to_numpy(), sign * np.arange(12.0).reshape(3, 4))


def test_one_minus_z_times_h_gradients_match_the_hand_derivation():
    rng = np.random.default_rng(2)
    z0, h0 = rng.random((4, 5)), rng.standard_normal((4, 5))
    z, h = tl.tensor(z0, requires_grad=True), tl.tensor(h0, requires_grad=True)
    ((1 - z) * h + 1.0).sum().backward()
    np.testing.assert_allclose(z.grad.to_numpy(), -h0)
    np.testing.assert_allclose(h.grad.to_numpy(), 1 - z0)


def test_scatter_add_of_one_column_per_row_into_more_rows():
    """One class per row (the flat-position path) with fewer index rows than ``out``: the rows
    past the index are left alone, as ``torch.scatter_add`` leaves them."""
    out = tl.zeros(3, 4)
    got = out.scatter_add(1, tl.tensor([[2], [0]]), tl.ones(2, 1) * 5)
    assert got.tolist() == [[0.0, 0.0, 5.0, 0.0], [5.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    one = tl.zeros(2, 1).scatter_add(1, tl.tensor([[0]]), tl.ones(1, 1))
    assert one.tolist() == [[1.0], [0.0]]
