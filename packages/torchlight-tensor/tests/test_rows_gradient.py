"""An embedding table read several times (the steps of a loop): its gradient rows are summed as
one scatter (``RowsGradient``), against a numpy oracle of the per-use sums (``np.add.at``)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
from torchlight.tensor.functions import weight_gradients
from torchlight.tensor.functions.gathering import embedding
from torchlight.tensor.functions.weight_gradients import ProductGradient, RowsGradient


def _loop(uses, rows, dim, seed, padding_idx=None, extra_use=False, dtype=tl.float64):
    """A ``(rows, dim)`` table read at ``len(uses)`` index tensors of shapes ``uses[k]``, each
    output weighted into the loss; returns the table, the loss and the oracle's gradient."""
    rng = np.random.default_rng(seed)
    w_np = rng.standard_normal((rows, dim))
    w = tl.tensor(w_np, dtype=dtype, requires_grad=True)
    want = np.zeros_like(w_np)
    loss = None
    for shape in uses:
        idx = rng.integers(0, rows, size=shape)
        c = rng.standard_normal(tuple(shape) + (dim,))  # dL/dy of this use
        y = embedding(tl.tensor(idx), w, padding_idx=padding_idx)
        term = (y * tl.tensor(c, dtype=dtype)).sum()
        loss = term if loss is None else loss + term
        keep = idx.reshape(-1) != padding_idx if padding_idx is not None else slice(None)
        np.add.at(want, idx.reshape(-1)[keep], c.reshape(-1, dim)[keep])
    if extra_use:  # the table also used outside an embedding: a dense gradient joins the sum
        loss = loss + (w * 3.0).sum()
        want += 3.0
    return w, loss, want


@settings(max_examples=40, deadline=None)
@given(
    uses=st.lists(
        st.lists(st.integers(1, 4), min_size=1, max_size=2).map(tuple), min_size=1, max_size=6
    ),
    rows=st.integers(1, 5),
    dim=st.integers(1, 3),
    seed=st.integers(0, 2**16),
    padding=st.booleans(),
    extra_use=st.booleans(),
)
def test_uses_sum_like_numpy(uses, rows, dim, seed, padding, extra_use):
    w, loss, want = _loop(uses, rows, dim, seed, 0 if padding else None, extra_use)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12, atol=1e-12)


def test_a_loop_of_lookups_is_one_scatter(monkeypatch):
    """Nine reads of one table (makemore's MLP): the backend scatters once."""
    calls = []
    w, loss, want = _loop([(4, 3)] * 9, 6, 2, 1)
    backend = w.backend
    original = type(backend).put_add
    monkeypatch.setattr(
        type(backend),
        "put_add",
        lambda self, *a: (calls.append(a[2].shape), original(self, *a))[1],
    )
    loss.backward()
    assert calls == [(9 * 12,)]
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)


def test_past_the_cap_the_sum_is_built_and_added_into(monkeypatch):
    """Beyond MERGE_MAX elements the uses are no longer joined: the same gradient."""
    w, loss, want = _loop([(3,), (2, 2), (4,), (1,)], 5, 3, 7)
    monkeypatch.setattr(weight_gradients, "MERGE_MAX", 20)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)


def test_merge_refuses_what_cannot_be_stacked():
    g, i = tl.ones(2, 3), tl.tensor([0, 1])
    rows = RowsGradient(g, i, (4, 3))
    assert rows.merge(RowsGradient(tl.ones(1, 3), tl.tensor([0]), (5, 3))) is None  # other table
    assert rows.merge(RowsGradient(tl.ones(1, 3, dtype=tl.float64), tl.tensor([0]), (4, 3))) is None
    assert rows.merge(ProductGradient(g)) is None
    assert rows.merge(object()) is None
    joined = rows.merge(RowsGradient(tl.full((1, 3), 2.0), tl.tensor([1]), (4, 3)))
    assert joined is rows
    np.testing.assert_array_equal(
        joined.dense().numpy(), [[1.0] * 3, [3.0] * 3, [0.0] * 3, [0.0] * 3]
    )


def test_a_float32_table_sums_in_float32():
    w, loss, want = _loop([(3,), (2, 2)], 4, 3, 5, dtype=tl.float32)
    loss.backward()
    assert w.grad.dtype is tl.float32
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-5, atol=1e-5)


def test_an_infinite_gradient_row_stays_in_its_row():
    """A non-finite row must not smear NaN over the other rows (``0 · inf`` in a product)."""
    w = tl.ones(3, 2, requires_grad=True)
    a = embedding(tl.tensor([0, 1]), w) * tl.tensor([[float("inf"), 1.0], [2.0, 2.0]])
    b = embedding(tl.tensor([2]), w) * 5.0
    (a.sum() + b.sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[np.inf, 1.0], [2.0, 2.0], [5.0, 5.0]])


def test_a_table_that_is_a_view():
    """The table handed to the lookups is computed (a slice of the leaf): the sum is built for
    the slice's own backward."""
    leaf = tl.zeros(5, 2, requires_grad=True)
    table = leaf[1:]
    (embedding(tl.tensor([0, 3]), table).sum() + embedding(tl.tensor([3]), table).sum()).backward()
    np.testing.assert_array_equal(
        leaf.grad.numpy(), [[0.0] * 2, [1.0] * 2, [0.0] * 2, [0.0] * 2, [2.0] * 2]
    )


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_second_order_still_records_the_scatter(padding_idx):
    """``create_graph=True``: the table's gradient is a recorded op, differentiable again."""
    w = tl.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tl.float64, requires_grad=True)
    idx = tl.tensor([0, 1, 0])
    y = embedding(idx, w, padding_idx=padding_idx)
    (y * y).sum().backward(create_graph=True)
    gw = w.grad  # 2 w[v] per read of row v (none for the padding row)
    reads = np.array([2.0, 0.0 if padding_idx == 1 else 1.0])[:, None]
    np.testing.assert_allclose(gw.detach().numpy(), 2 * reads * w.detach().numpy())
    w.grad = None
    gw.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * reads * np.ones((2, 2)))


def test_a_table_tied_to_a_linear_layer():
    """Weight tying (a GPT's token embedding is its output layer's weight): the table's rows and
    the layer's product are two kinds of unbuilt gradient of one leaf, summed when built."""
    from torchlight.tensor.functions.linalg import linear

    rng = np.random.default_rng(9)
    w_np, h_np = rng.standard_normal((6, 3)), rng.standard_normal((4, 3))
    idx = np.array([1, 5, 1, 0])
    w = tl.tensor(w_np, requires_grad=True)
    x = embedding(tl.tensor(idx), w)  # (4, 3)
    logits = linear(x + tl.tensor(h_np), w)  # (4, 6)
    (logits * tl.tensor(np.arange(24.0).reshape(4, 6))).sum().backward()
    c = np.arange(24.0).reshape(4, 6)
    want = c.T @ (w_np[idx] + h_np)  # the product's share
    np.add.at(want, idx, c @ w_np)  # the rows' share: dL/dx = c w
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)
