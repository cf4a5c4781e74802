"""Activation modules against numpy formulas, their gradchecks, and softplus stability."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F

X = np.linspace(-4, 4, 12).reshape(3, 4) + 0.013  # avoid exact kinks at 0
_erf = np.vectorize(math.erf)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


CASES = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    (
        nn.GELU("tanh"),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    ),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    (
        nn.Softplus(beta=2.0, threshold=3.0),
        lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2),
    ),
    (nn.Softmax(dim=1), lambda x: np_softmax(x, 1)),
    (nn.Softmax(dim=0), lambda x: np_softmax(x, 0)),
    (nn.LogSoftmax(dim=1), lambda x: np.log(np_softmax(x, 1))),
]


@pytest.mark.parametrize("mod,ref", CASES, ids=[repr(m) for m, _ in CASES])
def test_activation_matches_numpy_and_gradcheck(mod, ref):
    np.testing.assert_allclose(mod(tl.tensor(X)).to_numpy(), ref(X), rtol=1e-10, atol=1e-12)
    x = tl.tensor(X[:2, :3].copy(), requires_grad=True)
    assert tl.gradcheck(lambda x: mod(x), (x,))


def test_softplus_large_inputs_and_logsigmoid():
    x = tl.tensor([-1e4, -30.0, 0.0, 30.0, 1e4], dtype=tl.float64)
    np.testing.assert_allclose(
        F.softplus(x).numpy(), [0.0, np.log1p(np.exp(-30.0)), np.log(2), 30.0, 1e4], rtol=1e-12
    )
    np.testing.assert_allclose(
        F.logsigmoid(x).numpy(),
        [-1e4, -30.0, -np.log(2), -np.log1p(np.exp(-30.0)), 0.0],
        rtol=1e-12,
    )


def test_softmax_implicit_dim_and_reprs():
    x = tl.tensor(X)
    np.testing.assert_allclose(
        F.softmax(x).to_numpy(), np_softmax(X, 1)
    )  # 2-D: dim 1 (PyTorch's legacy rule)
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    with pytest.raises(ValueError):
        nn.GELU("fast")


def test_functional_helpers():
    v = tl.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=tl.float64)
    np.testing.assert_allclose(F.normalize(v).numpy(), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_array_equal(F.one_hot(tl.tensor([0, 2]), 3).numpy(), [[1, 0, 0], [0, 0, 1]])
    assert F.pad(tl.ones(2, 2), (1, 0)).shape == (2, 3)
