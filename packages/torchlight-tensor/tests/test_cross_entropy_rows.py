"""``cross_entropy_rows``: the fused kernel against finite differences, a numpy oracle and the
composite fallback a backend without the ``cross_entropy`` capability gets; the reductions that
it and ``nll_rows`` do inside their node."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.backend.numpy import NumpyBackend
from torchlight.tensor.functions.activation import cross_entropy_rows
from torchlight.tensor.functions.gathering import nll_rows

rng = np.random.default_rng(7)


def _logits(layout, n=5, c=4):
    """float64 logits (n, c) as a packed leaf, a transposed view or a step-sliced window."""
    if layout == "contiguous":
        return tl.tensor(
            rng.standard_normal((n, c)) * 2, dtype=tl.float64, requires_grad=True
        ), lambda x: x
    if layout == "permuted":
        return tl.tensor(
            rng.standard_normal((c, n)) * 2, dtype=tl.float64, requires_grad=True
        ), lambda x: x.t()
    big = tl.tensor(rng.standard_normal((n + 1, 2 * c)) * 2, dtype=tl.float64, requires_grad=True)
    return big, lambda x: x[1:, ::2]


def _numpy_rows(x, t, w):
    m = x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]
    return np.where(w != 0, w * (lse - x[np.arange(len(t)), t]), 0.0)


@pytest.mark.parametrize("layout", ["contiguous", "permuted", "sliced"])
def test_gradcheck_and_oracle(layout):
    leaf, view = _logits(layout)
    t = tl.tensor([0, 3, 1, 1, 2])
    w = tl.tensor([1.0, 0.0, 2.0, 0.5, 1.0], dtype=tl.float64)  # row 1 dropped
    assert tl.gradcheck(lambda a: cross_entropy_rows(view(a), t, w), (leaf,))
    got = cross_entropy_rows(view(leaf), t, w)
    np.testing.assert_allclose(
        got.detach().numpy(),
        _numpy_rows(view(leaf).detach().numpy(), t.numpy(), w.numpy()),
        rtol=1e-12,
    )
    assert got.detach().numpy()[1] == 0.0


def test_fused_equals_composite(monkeypatch):
    x = tl.tensor(rng.standard_normal((6, 7)) * 5, dtype=tl.float32, requires_grad=True)
    t = tl.tensor([6, 0, 3, 3, 1, 2])
    w = tl.tensor([1, 1, 0, 2, 1, 1], dtype=tl.float32)
    g = tl.tensor(rng.standard_normal(6), dtype=tl.float32)

    def run():
        x.grad = None
        loss = cross_entropy_rows(x, t, w)
        loss.backward(g)
        return loss.detach().numpy().copy(), x.grad.numpy().copy()

    fused = run()
    monkeypatch.setattr(NumpyBackend, "capabilities", NumpyBackend.capabilities - {"cross_entropy"})
    composite = run()
    for a, b in zip(fused, composite):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_large_logits_are_finite():
    x = tl.tensor([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=tl.float32, requires_grad=True)
    loss = cross_entropy_rows(x, tl.tensor([1, 2]), tl.ones(2))
    np.testing.assert_allclose(loss.detach().numpy(), [2e4, np.log(3.0)], rtol=1e-6)
    loss.sum().backward()
    # the backward sees lse rounded to float32: near -1e4 its ulp is ~1e-3, hence ~1e-5 here
    np.testing.assert_allclose(x.grad.numpy(), [[1, -1, 0], [1 / 3, 1 / 3, -2 / 3]], atol=2e-5)


def test_shape_errors():
    x = tl.randn(3, 4)
    with pytest.raises(tl.ShapeError, match="cross_entropy_rows"):
        cross_entropy_rows(x, tl.tensor([0, 1]), tl.ones(3))
    with pytest.raises(tl.ShapeError, match="cross_entropy_rows"):
        cross_entropy_rows(x.reshape(12), tl.tensor([0]), tl.ones(1))


def _reduced(rows, w, reduction):
    """numpy oracle of a row loss's reduction: PyTorch's weighted mean is Σ ℓ / Σ w."""
    if reduction == "none":
        return rows
    if reduction == "sum":
        return rows.sum()
    return rows.sum() / (len(rows) if w is None else w.sum())


ROW_LOSSES = {
    "cross_entropy_rows": (cross_entropy_rows, lambda x, t: _numpy_rows(x, t, np.ones(len(t)))),
    "nll_rows": (nll_rows, lambda x, t: -x[np.arange(len(t)), t]),
}


@pytest.mark.parametrize("name", ROW_LOSSES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "permuted"])
def test_reduction_inside_the_node(name, reduction, weighted, layout):
    fn, rows_of = ROW_LOSSES[name]
    leaf, view = _logits(layout)
    t = tl.tensor([0, 3, 1, 1, 2])
    w = tl.tensor([1.0, 0.0, 2.0, 0.5, 1.0], dtype=tl.float64) if weighted else None
    assert tl.gradcheck(lambda a: fn(view(a), t, w, reduction), (leaf,))
    got = fn(view(leaf), t, w, reduction).detach().numpy()
    x = view(leaf).detach().numpy()
    rows = rows_of(x, t.numpy()) * (1.0 if w is None else w.numpy())
    want = _reduced(rows, None if w is None else w.numpy(), reduction)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_fused_reduction_equals_composite(monkeypatch, reduction):
    x = tl.tensor(rng.standard_normal((6, 7)) * 5, dtype=tl.float32, requires_grad=True)
    t = tl.tensor([6, 0, 3, 3, 1, 2])
    w = tl.tensor([1, 1, 0, 2, 1, 1], dtype=tl.float32)

    def run():
        x.grad = None
        loss = cross_entropy_rows(x, t, w, reduction)
        loss.backward()
        return loss.item(), x.grad.numpy().copy()

    fused = run()
    monkeypatch.setattr(NumpyBackend, "capabilities", NumpyBackend.capabilities - {"cross_entropy"})
    composite = run()
    np.testing.assert_allclose(fused[0], composite[0], rtol=1e-5)
    np.testing.assert_allclose(fused[1], composite[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [cross_entropy_rows, nll_rows])
def test_unknown_reduction(fn):
    with pytest.raises(ValueError, match="reduction must be one of"):
        fn(tl.randn(2, 3), tl.tensor([0, 1]), None, "average")
