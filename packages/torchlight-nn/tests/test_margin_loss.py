"""Margin, ranking, embedding and likelihood losses against numpy formulas (PyTorch's docs)."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


rng = np.random.default_rng(0)
X1, X2 = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
Y = np.where(rng.random(6) < 0.5, 1.0, -1.0)


def np_reduce(v, reduction):
    return {"mean": v.mean(), "sum": v.sum(), "none": v}[reduction]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pairwise_margin_losses(reduction):
    a, b = X1[:, 0], X2[:, 0]
    np.testing.assert_allclose(
        A(nn.MarginRankingLoss(0.3, reduction)(T(a), T(b), T(Y))),
        np_reduce(np.maximum(0, -Y * (a - b) + 0.3), reduction),
        atol=1e-12,
    )
    d = np.abs(a)
    np.testing.assert_allclose(
        A(nn.HingeEmbeddingLoss(0.7, reduction)(T(d), T(Y))),
        np_reduce(np.where(Y == 1, d, np.maximum(0, 0.7 - d)), reduction),
        atol=1e-12,
    )
    np.testing.assert_allclose(
        A(nn.SoftMarginLoss(reduction)(T(X1), T(np.sign(X2)))),
        np_reduce(np.log1p(np.exp(-np.sign(X2) * X1)), reduction),
        atol=1e-12,
    )
    cos = (X1 * X2).sum(1) / np.sqrt(((X1**2).sum(1) + 1e-12) * ((X2**2).sum(1) + 1e-12))
    np.testing.assert_allclose(
        A(nn.CosineEmbeddingLoss(0.1, reduction)(T(X1), T(X2), T(Y))),
        np_reduce(np.where(Y == 1, 1 - cos, np.maximum(0, cos - 0.1)), reduction),
        atol=1e-12,
    )


def test_multilabel_and_multi_margin():
    t01 = (rng.random((6, 4)) < 0.5).astype(float)
    w = rng.uniform(0.5, 2, 4)
    sig = 1 / (1 + np.exp(-X1))
    per = -(t01 * np.log(sig) + (1 - t01) * np.log(1 - sig)) * w
    np.testing.assert_allclose(
        A(nn.MultiLabelSoftMarginLoss(T(w))(T(X1), T(t01))), per.mean(1).mean(), atol=1e-12
    )
    y = rng.integers(0, 4, 6)
    for p in (1, 2):
        ref = []
        for i in range(6):
            h = np.maximum(0, 0.5 - X1[i, y[i]] + X1[i])
            h[y[i]] = 0
            ref.append(w[y[i]] * (h**p).sum() / 4)
        got = nn.MultiMarginLoss(p=p, margin=0.5, weight=T(w), reduction="none")(
            T(X1), tl.tensor(y)
        )
        np.testing.assert_allclose(A(got), ref, atol=1e-12)
    with pytest.raises(ValueError):
        nn.MultiMarginLoss(p=3)


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_loss(swap):
    a, p, n = rng.standard_normal((3, 5, 3))
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=1)  # noqa: E731
    dn = np.minimum(d(a, n), d(p, n)) if swap else d(a, n)
    want = np.maximum(d(a, p) - dn + 1.5, 0).mean()
    got = nn.TripletMarginLoss(margin=1.5, swap=swap)(T(a), T(p), T(n))
    assert abs(got.item() - want) < 1e-12
    args = (T(a, True), T(p, True), T(n, True))
    assert tl.gradcheck(lambda x, y, z: F.triplet_margin_loss(x, y, z, margin=1.5, swap=swap), args)
    with pytest.raises(ValueError):
        nn.TripletMarginLoss(margin=0)


def test_gaussian_nll_loss():
    mu, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    var = rng.uniform(0.1, 2, (4, 3))
    want = 0.5 * (np.log(var) + (mu - y) ** 2 / var)
    np.testing.assert_allclose(
        A(nn.GaussianNLLLoss(reduction="none")(T(mu), T(y), T(var))), want, atol=1e-12
    )
    full = nn.GaussianNLLLoss(full=True)(T(mu), T(y), T(var)).item()
    assert abs(full - (want.mean() + 0.5 * math.log(2 * math.pi))) < 1e-12
    v1 = var[:, 0]  # one variance per sample, (N,) against (N, D)
    want1 = 0.5 * (np.log(v1)[:, None] + (mu - y) ** 2 / v1[:, None])
    np.testing.assert_allclose(
        A(F.gaussian_nll_loss(T(mu), T(y), T(v1), reduction="none")), want1, atol=1e-12
    )
    # the eps clamp is invisible to the gradient
    v = T([1e-9], True)
    F.gaussian_nll_loss(T([0.0]), T([0.0]), v, eps=1e-3).backward()
    assert abs(v.grad.item() - 0.5 / 1e-3) < 1e-6
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(T([0.0]), T([0.0]), T([-1.0]))


def test_poisson_nll_loss():
    x = rng.standard_normal(8)
    y = rng.integers(0, 5, 8).astype(float)
    np.testing.assert_allclose(
        nn.PoissonNLLLoss()(T(x), T(y)).item(), (np.exp(x) - y * x).mean(), atol=1e-12
    )
    rate = np.exp(x)
    np.testing.assert_allclose(
        nn.PoissonNLLLoss(log_input=False, reduction="sum")(T(rate), T(y)).item(),
        (rate - y * np.log(rate + 1e-8)).sum(),
        atol=1e-12,
    )
    stirling = np.where(
        y > 1, y * np.log(np.maximum(y, 1)) - y + 0.5 * np.log(2 * np.pi * np.maximum(y, 1)), 0
    )
    np.testing.assert_allclose(
        A(F.poisson_nll_loss(T(x), T(y), full=True, reduction="none")),
        np.exp(x) - y * x + stirling,
        atol=1e-12,
    )
    assert tl.gradcheck(lambda v: F.poisson_nll_loss(v, T(y), full=True), (T(x, True),))


def test_legacy_size_average_and_reduce_keywords():
    x, y = T([1.0, 2.0, 4.0]), T([0.0, 0.0, 0.0])
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert F.mse_loss(x, y, size_average=False).item() == 21.0
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.L1Loss(reduce=False)(x, y).tolist() == [1.0, 2.0, 4.0]
    with pytest.warns(UserWarning):
        assert nn.CrossEntropyLoss(size_average=False)(
            T([[0.0, 0.0]]), tl.tensor([1])
        ).item() == pytest.approx(math.log(2))
    with pytest.warns(UserWarning):
        assert nn.MarginRankingLoss(0.5, size_average=True)(x, y, T([1.0, 1.0, 1.0])).item() == 0.0
    assert nn.MSELoss(reduction="sum")(x, y).item() == 21.0  # the modern spelling, no warning
