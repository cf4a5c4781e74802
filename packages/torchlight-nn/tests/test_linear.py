"""Linear, Identity, Flatten, Embedding, Dropout: numpy references, init statistics, gradchecks."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def test_linear_matches_numpy_for_nd_input():
    lin = nn.Linear(4, 3, dtype=tl.float64)
    x = np.random.default_rng(0).standard_normal((2, 5, 4))
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    np.testing.assert_allclose(lin(tl.tensor(x)).to_numpy(), x @ w.T + b, rtol=1e-12)
    assert nn.Linear(4, 3, bias=False).bias is None
    with pytest.raises(tl.ShapeError, match="features"):
        lin(tl.randn(2, 5, dtype=tl.float64))


def test_linear_default_init_statistics():
    tl.manual_seed(0)
    lin = nn.Linear(100, 400)
    bound = 1 / math.sqrt(100)
    w = lin.weight.detach().numpy()
    assert w.shape == (400, 100)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.mean()) < 0.01 * bound * 10
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound  # U(-a, a) has std a/sqrt(3)
    bias = lin.bias.detach().numpy()
    assert np.abs(bias).max() <= bound and np.abs(bias).max() > 0.9 * bound


def test_linear_gradcheck():
    lin = nn.Linear(3, 2, dtype=tl.float64)
    x = tl.randn(2, 2, 3, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x, w, b: lin(x), (x, lin.weight, lin.bias))


def test_identity_flatten_unflatten():
    x = tl.randn(2, 3, 4, 5)
    assert nn.Identity(54, unused=True)(x) is x
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 1)(x).shape == (6, 4, 5)
    assert nn.Unflatten(1, (3, 20))(nn.Flatten()(x)).shape == (2, 3, 20)
    xg = tl.randn(2, 3, 2, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x: nn.Flatten()(x), (xg,))


def test_embedding_lookup_padding_and_gradient():
    tl.manual_seed(0)
    emb = nn.Embedding(6, 3, padding_idx=-1, dtype=tl.float64)
    assert emb.padding_idx == 5
    w = emb.weight.detach().to_numpy()
    np.testing.assert_array_equal(w[5], 0.0)
    idx = np.array([[0, 5, 2], [2, 2, 5]])
    out = emb(tl.tensor(idx))
    np.testing.assert_array_equal(out.to_numpy(), w[idx])
    out.sum().backward()
    g = emb.weight.grad.to_numpy()
    np.testing.assert_array_equal(
        g[:, 0], [1, 0, 3, 0, 0, 0]
    )  # repeats accumulate, padding gets none
    assert tl.gradcheck(lambda w: F.embedding(tl.tensor(idx), w), (emb.weight,))
    big = nn.Embedding(1000, 10)
    assert abs(big.weight.detach().numpy().std() - 1.0) < 0.05  # N(0, 1)


def test_embedding_from_pretrained_and_errors():
    table = tl.randn(4, 2)
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad
    np.testing.assert_array_equal(emb(tl.tensor([3])).numpy()[0], table.numpy()[3])
    with pytest.raises(IndexError):
        emb(tl.tensor([4]))
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(3, 2, padding_idx=3)


def test_dropout():
    tl.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = tl.ones(200, 50)
    y = drop(x).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75)
    assert drop.eval()(x) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)
    with pytest.raises(ValueError):
        nn.Dropout(1.5)
    xg = tl.randn(3, 4, dtype=tl.float64, requires_grad=True)

    def f(x):
        tl.manual_seed(1)  # the same mask on every evaluation
        return F.dropout(x, 0.5, training=True)

    assert tl.gradcheck(f, (xg,))
