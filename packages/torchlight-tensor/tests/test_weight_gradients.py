"""A linear layer used several times (the steps of a loop): its weight and bias gradients are
summed as one product (``ProductGradient``), against a numpy oracle of the per-use sums."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
from torchlight.tensor.functions import weight_gradients
from torchlight.tensor.functions.linalg import linear
from torchlight.tensor.functions.weight_gradients import ProductGradient


def _loop(rows, n_in, n_out, seed, extra_use, dtype=tl.float64):
    """A layer applied to ``len(rows)`` inputs of ``rows[k]`` rows each, each output weighted
    into the loss; returns the leaves and the oracle's gradients (``Σ Gᵀ X``, ``Σ G``)."""
    rng = np.random.default_rng(seed)
    w_np = rng.standard_normal((n_out, n_in))
    b_np = rng.standard_normal(n_out)
    w = tl.tensor(w_np, dtype=dtype, requires_grad=True)
    b = tl.tensor(b_np, dtype=dtype, requires_grad=True)
    gw, gb = np.zeros_like(w_np), np.zeros_like(b_np)
    loss = None
    for n in rows:
        x_np = rng.standard_normal((n, n_in))
        c_np = rng.standard_normal((n, n_out))  # dL/dy of this use
        term = (linear(tl.tensor(x_np, dtype=dtype), w, b) * tl.tensor(c_np, dtype=dtype)).sum()
        loss = term if loss is None else loss + term
        gw += c_np.T @ x_np
        gb += c_np.sum(0)
    if extra_use:  # the weight also used outside a linear layer: a dense gradient joins the sum
        loss = loss + (w * 3.0).sum() + (b * 2.0).sum()
        gw += 3.0
        gb += 2.0
    return w, b, loss, gw, gb


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    n_in=st.integers(1, 4),
    n_out=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    extra_use=st.booleans(),
)
def test_uses_sum_like_numpy(rows, n_in, n_out, seed, extra_use):
    w, b, loss, gw, gb = _loop(rows, n_in, n_out, seed, extra_use)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-12, atol=1e-12)


def test_dense_gradient_first_then_products():
    """The dense use reached first (its node comes before the layer's in backward's order)."""
    rng = np.random.default_rng(3)
    w_np, x1, x2 = (
        rng.standard_normal((3, 2)),
        rng.standard_normal((4, 2)),
        rng.standard_normal((1, 2)),
    )
    w = tl.tensor(w_np, dtype=tl.float64, requires_grad=True)
    h = (
        linear(tl.tensor(x1, dtype=tl.float64), w).sum()
        + linear(tl.tensor(x2, dtype=tl.float64), w).sum()
    )
    (h * (w * w).sum()).backward()
    s = (x1.sum(0) + x2.sum(0))[None, :] * np.ones((3, 1))
    want = s * (w_np * w_np).sum() + (w_np @ (x1.sum(0) + x2.sum(0))).sum() * 2 * w_np
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)


def test_past_the_cap_the_sum_is_built_and_added_into(monkeypatch):
    """Beyond MERGE_MAX elements the terms are no longer joined: the same gradient."""
    w, b, loss, gw, gb = _loop([3, 2, 4, 1], 3, 2, 7, False)
    monkeypatch.setattr(weight_gradients, "MERGE_MAX", 20)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-12)


def test_merge_refuses_what_cannot_be_stacked():
    g = tl.ones(2, 3)
    x = tl.ones(2, 4)
    weight, bias = ProductGradient(g, x), ProductGradient(g)
    assert weight.merge(bias) is None and bias.merge(weight) is None
    assert weight.merge(ProductGradient(tl.ones(2, 3), tl.ones(2, 5))) is None  # other columns
    assert weight.merge(ProductGradient(tl.ones(2, 3, dtype=tl.float64), x)) is None
    assert weight.merge(object()) is None
    joined = weight.merge(ProductGradient(tl.ones(1, 3), tl.ones(1, 4)))
    assert joined is weight
    np.testing.assert_array_equal(joined.dense().numpy(), np.full((3, 4), 3.0))
    np.testing.assert_array_equal(
        bias.merge(ProductGradient(tl.ones(1, 3))).dense().numpy(), [3.0] * 3
    )


def test_a_float32_layer_sums_in_float32():
    w, b, loss, gw, gb = _loop([2, 3, 1], 3, 4, 5, False, dtype=tl.float32)
    loss.backward()
    assert w.grad.dtype is tl.float32 and b.grad.dtype is tl.float32
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("view", ["transposed", "strided"])
def test_a_weight_that_is_a_view(view):
    """The weight handed to the layer is computed (a view of the leaf): the sum is built for
    the view's own backward."""
    rng = np.random.default_rng(2)
    leaf_np = rng.standard_normal((3, 4))
    leaf = tl.tensor(leaf_np, dtype=tl.float64, requires_grad=True)
    w = leaf.t() if view == "transposed" else leaf[:, ::2]
    w_np = leaf_np.T if view == "transposed" else leaf_np[:, ::2]
    xs = [rng.standard_normal((2, w_np.shape[1])) for _ in range(3)]
    sum(linear(tl.tensor(x, dtype=tl.float64), w).sum() for x in xs).backward()
    gw = sum(np.ones((2, w_np.shape[0])).T @ x for x in xs)
    want = np.zeros_like(leaf_np)
    if view == "transposed":
        want = gw.T
    else:
        want[:, ::2] = gw
    np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-12)


def test_second_order_still_records_the_products():
    """``create_graph=True``: the layer's gradients are recorded ops, differentiable again."""
    w = tl.tensor([[1.0, 2.0]], dtype=tl.float64, requires_grad=True)
    x = tl.tensor([[3.0, 4.0]], dtype=tl.float64)
    y = linear(x, w) * linear(x, w)  # (w·x)²: dL/dw = 2 (w·x) x, d²/dw² = 2 x xᵀ
    y.sum().backward(create_graph=True)
    gw = w.grad
    np.testing.assert_allclose(gw.detach().numpy(), 2 * 11.0 * np.array([[3.0, 4.0]]))
    w.grad = None
    gw.sum().backward()
    np.testing.assert_allclose(
        w.grad.numpy(), (2 * np.outer([3.0, 4.0], [3.0, 4.0])).sum(0)[None, :]
    )
