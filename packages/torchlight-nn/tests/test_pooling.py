"""Max/avg/adaptive pooling against loop-based numpy references, plus gradchecks."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def out_size(L, k, s, p, d, ceil):
    room = L + 2 * p - d * (k - 1) - 1
    n = (-(-room // s) if ceil else room // s) + 1
    if ceil and (n - 1) * s >= L + p:
        n -= 1
    return n


def np_max_pool2d(x, k, s, p, d=(1, 1), ceil=False):
    n, c, h, w = x.shape
    ho, wo = out_size(h, k[0], s[0], p[0], d[0], ceil), out_size(w, k[1], s[1], p[1], d[1], ceil)
    y = np.full((n, c, ho, wo), -np.inf)
    idx = np.zeros((n, c, ho, wo), dtype=np.int64)
    for i in range(ho):
        for j in range(wo):
            for a in range(k[0]):
                for b in range(k[1]):
                    r, q = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        v = x[:, :, r, q]
                        # PyTorch's rule: a larger value, or any NaN, takes over
                        better = (v > y[:, :, i, j]) | np.isnan(v)
                        y[:, :, i, j] = np.where(better, v, y[:, :, i, j])
                        idx[:, :, i, j] = np.where(better, r * w + q, idx[:, :, i, j])
    return y, idx


def np_avg_pool2d(x, k, s, p, ceil=False, count_include_pad=True, divisor_override=None):
    n, c, h, w = x.shape
    ho, wo = out_size(h, k[0], s[0], p[0], 1, ceil), out_size(w, k[1], s[1], p[1], 1, ceil)
    y = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            hs, ws = i * s[0] - p[0], j * s[1] - p[1]
            he, we = min(hs + k[0], h + p[0]), min(ws + k[1], w + p[1])
            pool = (he - hs) * (we - ws)
            hs2, ws2, he2, we2 = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
            total = x[:, :, hs2:he2, ws2:we2].sum(axis=(2, 3))
            div = divisor_override or (pool if count_include_pad else (he2 - hs2) * (we2 - ws2))
            y[:, :, i, j] = total / div
    return y


def np_adaptive_avg2d(x, out):
    n, c, h, w = x.shape
    y = np.zeros((n, c) + out)
    for i in range(out[0]):
        for j in range(out[1]):
            h0, h1 = (i * h) // out[0], math.ceil((i + 1) * h / out[0])
            w0, w1 = (j * w) // out[1], math.ceil((j + 1) * w / out[1])
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return y


rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3, 7, 8))


@pytest.mark.parametrize(
    "k,s,p,d,ceil",
    [
        ((2, 2), (2, 2), (0, 0), (1, 1), False),
        ((3, 3), (2, 2), (1, 1), (1, 1), False),
        ((3, 2), (2, 1), (1, 0), (1, 1), True),
        ((2, 3), (1, 2), (0, 1), (2, 1), False),
        ((3, 3), (3, 3), (1, 1), (1, 1), True),
    ],
)
def test_max_pool2d_matches_numpy(k, s, p, d, ceil):
    y, idx = F.max_pool2d(tl.tensor(X), k, s, p, d, ceil_mode=ceil, return_indices=True)
    ref, ref_idx = np_max_pool2d(X, k, s, p, d, ceil)
    np.testing.assert_allclose(y.to_numpy(), ref)
    np.testing.assert_array_equal(idx.to_numpy(), ref_idx)


@pytest.mark.parametrize(
    "k,s,p,ceil,cip,div",
    [
        ((2, 2), (2, 2), (0, 0), False, True, None),
        ((3, 3), (2, 2), (1, 1), False, True, None),
        ((3, 3), (2, 2), (1, 1), False, False, None),
        ((3, 2), (2, 3), (1, 1), True, True, None),
        ((3, 2), (2, 3), (1, 1), True, False, None),
        ((2, 2), (1, 1), (1, 1), False, True, 3),
    ],
)
def test_avg_pool2d_matches_numpy(k, s, p, ceil, cip, div):
    y = F.avg_pool2d(tl.tensor(X), k, s, p, ceil, cip, div)
    np.testing.assert_allclose(y.to_numpy(), np_avg_pool2d(X, k, s, p, ceil, cip, div), rtol=1e-12)


def test_pool1d_match_2d_references():
    x = rng.standard_normal((2, 3, 9))
    y = nn.MaxPool1d(3, 2, 1)(tl.tensor(x))
    ref, _ = np_max_pool2d(x[:, :, None, :], (1, 3), (1, 2), (0, 1))
    np.testing.assert_allclose(y.to_numpy(), ref[:, :, 0])
    y = nn.AvgPool1d(3, 2, 1, count_include_pad=False)(tl.tensor(x))
    ref = np_avg_pool2d(x[:, :, None, :], (1, 3), (1, 2), (0, 1), count_include_pad=False)
    np.testing.assert_allclose(y.to_numpy(), ref[:, :, 0], rtol=1e-12)


@pytest.mark.parametrize("out", [(1, 1), (3, 4), (4, 3), (5, 8), (7, 8)])
def test_adaptive_avg_pool2d_matches_numpy(out):
    y = nn.AdaptiveAvgPool2d(out)(tl.tensor(X))
    np.testing.assert_allclose(y.to_numpy(), np_adaptive_avg2d(X, out), rtol=1e-12)


def test_adaptive_avg_pool_none_and_1d():
    assert nn.AdaptiveAvgPool2d((None, 2))(tl.tensor(X)).shape == (2, 3, 7, 2)
    x = rng.standard_normal((2, 3, 10))
    y = nn.AdaptiveAvgPool1d(4)(tl.tensor(x))
    ref = np_adaptive_avg2d(x[:, :, None, :], (1, 4))[:, :, 0]
    np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-12)


def test_max_pool_gradient_goes_to_the_winner_on_ties():
    x = tl.zeros(1, 1, 2, 2, dtype=tl.float64, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(
        x.grad.to_numpy().reshape(-1), [1, 0, 0, 0]
    )  # first index, like PyTorch


def np_max_pool2d_grad(x, g, ref_idx):
    """The gradient a max pool gives its input: each output's gradient added at its winner."""
    n, c, h, w = x.shape
    gx = np.zeros((n, c, h * w))
    flat_g, flat_i = g.reshape(n, c, -1), ref_idx.reshape(n, c, -1)
    for a in range(n):
        for b in range(c):
            np.add.at(gx[a, b], flat_i[a, b], flat_g[a, b])
    return gx.reshape(x.shape)


@st.composite
def pool_cases(draw):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    p = (draw(st.integers(0, k[0] // 2)), draw(st.integers(0, k[1] // 2)))
    h = draw(st.integers(d[0] * (k[0] - 1) + 1, 8))
    w = draw(st.integers(d[1] * (k[1] - 1) + 1, 8))
    ties = draw(st.booleans())  # small integers: many equal values in a window
    return k, s, p, d, draw(st.booleans()), (draw(st.integers(1, 2)), 2, h, w), ties


@settings(max_examples=60, deadline=None)
@given(pool_cases(), st.integers(0, 2**31 - 1))
def test_max_pool2d_values_indices_and_gradient_match_numpy(case, seed):
    k, s, p, d, ceil, shape, ties = case
    r = np.random.default_rng(seed)
    x = r.integers(-2, 3, shape).astype(np.float64) if ties else r.standard_normal(shape)
    ref, ref_idx = np_max_pool2d(x, k, s, p, d, ceil)
    g = r.standard_normal(ref.shape)
    xt = tl.tensor(x, requires_grad=True)
    y, idx = F.max_pool2d(xt, k, s, p, d, ceil_mode=ceil, return_indices=True)
    y.backward(tl.tensor(g))
    np.testing.assert_array_equal(y.to_numpy(), ref)
    np.testing.assert_array_equal(idx.to_numpy(), ref_idx)
    np.testing.assert_allclose(xt.grad.to_numpy(), np_max_pool2d_grad(x, g, ref_idx), atol=1e-12)


def test_max_pool2d_on_non_contiguous_input():
    xs = tl.tensor(rng.standard_normal((3, 8, 2, 7))).permute(2, 0, 3, 1)
    assert not xs.is_contiguous()
    ref, ref_idx = np_max_pool2d(xs.to_numpy(), (3, 2), (2, 2), (1, 0), (1, 1))
    y, idx = F.max_pool2d(xs, (3, 2), (2, 2), (1, 0), return_indices=True)
    np.testing.assert_array_equal(y.to_numpy(), ref)
    np.testing.assert_array_equal(idx.to_numpy(), ref_idx)


@pytest.mark.parametrize(
    "shape, k, s",
    [((2, 3, 8, 6), 2, 2), ((2, 3, 7, 5), 2, 2), ((1, 2, 9, 9), 2, 3), ((1, 2, 6, 6), 3, 3)],
)
@pytest.mark.parametrize("infinite", [None, "gradient", "input"])
def test_max_pool_disjoint_windows_gradient(shape, k, s, infinite):
    """Windows that do not overlap (tiling the map or not) give each window's gradient to its
    first winner and zeros elsewhere; an infinite gradient or maximum takes the general path
    (``inf · 0`` would smear NaN over the other elements of its window)."""
    r = np.random.default_rng(sum(shape) + k + s)
    x = r.integers(-2, 3, shape).astype(np.float64)  # ties in most windows
    if infinite == "input":
        x[0, 0, 0, 0] = np.inf
    ref, ref_idx = np_max_pool2d(x, (k, k), (s, s), (0, 0))
    g = r.standard_normal(ref.shape)
    if infinite == "gradient":
        g[0, 0, 0, 0] = -np.inf
    xt = tl.tensor(x, requires_grad=True)
    F.max_pool2d(xt, k, s).backward(tl.tensor(g))
    want = np_max_pool2d_grad(x, g, ref_idx)
    assert not np.isnan(want).any()
    np.testing.assert_array_equal(xt.grad.to_numpy(), want)


def test_max_pool_nan_wins_like_pytorch():
    """A NaN is the maximum of its window, and its gradient and index go to the window's last
    NaN (PyTorch's ``val > max || isnan(val)`` kernel rule)."""
    nan = float("nan")
    x = np.array([[[[nan, 1.0, 2.0, nan], [3.0, nan, 0.0, 5.0]]]])
    xt = tl.tensor(x, requires_grad=True)
    y, idx = F.max_pool2d(xt, 2, return_indices=True)
    ref, ref_idx = np_max_pool2d(x, (2, 2), (2, 2), (0, 0))
    assert np.isnan(y.to_numpy()).all() and np.isnan(ref).all()
    np.testing.assert_array_equal(idx.to_numpy(), ref_idx)
    np.testing.assert_array_equal(idx.to_numpy(), [[[[5, 3]]]])
    y.sum().backward()
    np.testing.assert_array_equal(xt.grad.to_numpy(), [[[[0, 0, 0, 1], [0, 1, 0, 0]]]])


def test_max_pool_gradient_is_differentiable_in_the_incoming_gradient():
    """``create_graph=True``: the input gradient is linear in the output gradient ``g`` (it puts
    ``g`` at the winners), and its derivative with respect to ``g`` is the gather back."""
    x = tl.tensor(rng.standard_normal((1, 2, 5, 5)))

    def input_grad(g):
        with tl.enable_grad():  # gradcheck's finite differences run without recording
            xr = x.detach().requires_grad_()
            F.max_pool2d(xr, 3, 1, 1).backward(g, create_graph=True)
            return xr.grad

    g = tl.randn(1, 2, 5, 5, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(input_grad, (g,))


def test_avg_pool_gradient_is_differentiable_in_the_incoming_gradient():
    x = tl.tensor(rng.standard_normal((1, 2, 6, 5)))

    def input_grad(g):
        with tl.enable_grad():
            xr = x.detach().requires_grad_()
            F.avg_pool2d(xr, 3, 2, 1, count_include_pad=False).backward(g, create_graph=True)
            return xr.grad

    g = tl.randn(1, 2, 3, 3, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(input_grad, (g,))


def test_pool_gradchecks():
    x = tl.randn(1, 2, 5, 5, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1), (x,))
    assert tl.gradcheck(lambda x: F.max_pool2d(x, 2, 1, dilation=2, ceil_mode=True), (x,))
    assert tl.gradcheck(
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (x,)
    )
    assert tl.gradcheck(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (x,))
    x1 = tl.randn(2, 2, 6, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x: F.max_pool1d(x, 2) + F.avg_pool1d(x, 2), (x1,))


def test_pool_errors_and_unbatched():
    with pytest.raises(ValueError, match="at most half"):
        F.max_pool2d(tl.randn(1, 1, 4, 4), 2, padding=2)
    x = tl.randn(3, 6, 6)
    np.testing.assert_allclose(
        nn.MaxPool2d(2)(x).to_numpy(), nn.MaxPool2d(2)(x.unsqueeze(0)).squeeze(0).to_numpy()
    )
    assert (
        repr(nn.MaxPool2d(2))
        == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    )
