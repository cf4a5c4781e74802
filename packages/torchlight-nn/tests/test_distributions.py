"""torchlight.distributions against scipy.stats / numpy formulas, and sampling against moments."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.distributions as D

stats = pytest.importorskip("scipy.stats")


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def test_normal_log_prob_entropy_moments():
    rng = np.random.default_rng(0)
    loc, scale = rng.standard_normal(4), rng.uniform(0.5, 2.0, 4)
    d = D.Normal(T(loc), T(scale))
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(A(d.log_prob(T(x))), stats.norm.logpdf(x, loc, scale), rtol=1e-12)
    np.testing.assert_allclose(A(d.entropy()), stats.norm.entropy(loc, scale), rtol=1e-12)
    np.testing.assert_allclose(A(d.mean), loc)
    np.testing.assert_allclose(A(d.variance), scale**2)
    np.testing.assert_allclose(A(d.stddev), scale)
    assert d.batch_shape == (4,) and d.event_shape == ()
    tl.manual_seed(0)
    s = A(d.sample((20000,)))
    assert s.shape == (20000, 4)
    assert np.all(np.abs(s.mean(0) - loc) < 5 * scale / math.sqrt(20000))
    assert np.all(np.abs(s.std(0) / scale - 1) < 0.03)
    # broadcasting numbers with tensors
    assert D.Normal(0.0, T(scale)).batch_shape == (4,)
    with pytest.raises(ValueError, match="scale"):
        D.Normal(0.0, -1.0)


def test_normal_rsample_is_differentiable():
    loc, scale = T([0.5, -1.0], True), T([2.0, 0.5], True)
    tl.manual_seed(1)
    z = D.Normal(loc, scale).rsample((3,))
    tl.manual_seed(1)
    eps = A(tl.randn(3, 2, dtype=tl.float64))
    np.testing.assert_allclose(A(z), A(loc) + eps * A(scale), rtol=1e-12)
    z.sum().backward()
    np.testing.assert_allclose(A(loc.grad), [3.0, 3.0])
    np.testing.assert_allclose(A(scale.grad), eps.sum(0), rtol=1e-12)
    assert D.Normal(loc, scale).sample().grad_fn is None
    assert tl.gradcheck(lambda m, s: D.Normal(m, s).log_prob(T([0.3, 0.1])), (loc, scale))


def test_categorical_probs_logits_log_prob_entropy():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 5))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for d in (
        D.Categorical(logits=T(logits)),
        D.Categorical(probs=T(p * 3.0)),
    ):  # probs get normalised
        np.testing.assert_allclose(A(d.probs), p, rtol=1e-12)
        np.testing.assert_allclose(A(d.entropy()), stats.entropy(p, axis=-1), rtol=1e-12)
        v = tl.tensor(np.array([[0, 4], [3, 3], [1, 2]]))  # (3, 2) against batch (2,)
        want = np.log(p[[0, 1], v.numpy()])
        np.testing.assert_allclose(A(d.log_prob(v)), want, rtol=1e-12)
        assert d.batch_shape == (2,)
    zero = D.Categorical(probs=T([0.5, 0.0, 0.5]))
    assert abs(zero.entropy().item() - math.log(2)) < 1e-12
    assert np.isfinite(zero.log_prob(tl.tensor([0, 2])).numpy()).all()
    with pytest.raises(ValueError):
        D.Categorical()
    with pytest.raises(ValueError):
        D.Categorical(probs=T([1.0]), logits=T([1.0]))


def test_categorical_sample_frequencies():
    p = np.array([0.1, 0.2, 0.0, 0.7])
    d = D.Categorical(probs=T(np.stack([p, p[::-1]])))
    tl.manual_seed(3)
    s = d.sample((40000,)).numpy()
    assert s.shape == (40000, 2) and s.dtype == np.int64
    for col, probs in ((0, p), (1, p[::-1])):
        freq = np.bincount(s[:, col], minlength=4) / len(s)
        assert np.abs(freq - probs).max() < 0.01
        assert freq[np.argmin(probs)] == 0.0  # a zero-probability class is never drawn
    # a chi-square goodness of fit at the 1e-4 level
    counts = np.bincount(s[:, 0], minlength=4)
    keep = p > 0
    assert stats.chisquare(counts[keep], p[keep] * len(s)).pvalue > 1e-4
    assert D.Categorical(logits=tl.zeros(3)).sample().shape == ()
    assert D.Categorical(logits=tl.zeros(3)).enumerate_support().tolist() == [0, 1, 2]


def test_categorical_policy_gradient_through_logits():
    logits = T([0.2, -0.3, 0.5], True)
    a = tl.tensor(2)
    D.Categorical(logits=logits).log_prob(a).backward()
    p = np.exp(A(logits)) / np.exp(A(logits)).sum()
    np.testing.assert_allclose(A(logits.grad), np.eye(3)[2] - p, rtol=1e-12)  # ∇ log softmax
    assert tl.gradcheck(lambda lg: D.Categorical(logits=lg).entropy(), (logits,))


def test_bernoulli():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.05, 0.95, 5)
    x = (rng.random(5) < 0.5).astype(np.float64)
    for d in (D.Bernoulli(probs=T(p)), D.Bernoulli(logits=T(np.log(p / (1 - p))))):
        np.testing.assert_allclose(A(d.log_prob(T(x))), stats.bernoulli.logpmf(x, p), rtol=1e-9)
        np.testing.assert_allclose(A(d.entropy()), stats.bernoulli.entropy(p), rtol=1e-9)
        np.testing.assert_allclose(A(d.mean), p, rtol=1e-9)
        np.testing.assert_allclose(A(d.variance), p * (1 - p), rtol=1e-9)
    big = D.Bernoulli(logits=T([200.0, -200.0]))
    np.testing.assert_allclose(A(big.log_prob(T([1.0, 1.0]))), [0.0, -200.0])
    tl.manual_seed(5)
    s = A(D.Bernoulli(probs=T(p)).sample((20000,)))
    assert set(np.unique(s)) <= {0.0, 1.0}
    assert np.abs(s.mean(0) - p).max() < 0.02


def test_uniform():
    low, high = np.array([0.0, -2.0]), np.array([1.0, 3.0])
    d = D.Uniform(T(low), T(high))
    x = np.array([[0.5, 2.9], [1.0, -2.0], [-0.1, 3.5]])
    want = stats.uniform.logpdf(x, low, high - low)
    want[1, 0] = -np.inf  # the interval is half-open [low, high), as in PyTorch
    np.testing.assert_allclose(A(d.log_prob(T(x))), want)
    np.testing.assert_allclose(A(d.entropy()), np.log(high - low))
    np.testing.assert_allclose(A(d.mean), (low + high) / 2)
    np.testing.assert_allclose(A(d.variance), (high - low) ** 2 / 12)
    np.testing.assert_allclose(A(d.cdf(T([[0.25, 0.5]]))), [[0.25, 0.5]])
    tl.manual_seed(6)
    s = A(d.sample((10000,)))
    assert np.all((s >= low) & (s < high))
    lo = T([0.0], True)
    D.Uniform(lo, 2.0).rsample((4,)).sum().backward()
    assert 0 < lo.grad.item() < 4  # d/dlow of low + u (high - low) = 1 - u, summed
    with pytest.raises(ValueError):
        D.Uniform(1.0, 1.0)


def test_kl_divergence():
    rng = np.random.default_rng(7)
    m1, m2 = rng.standard_normal(3), rng.standard_normal(3)
    s1, s2 = rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 3)
    want = np.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
    np.testing.assert_allclose(
        A(D.kl_divergence(D.Normal(T(m1), T(s1)), D.Normal(T(m2), T(s2)))), want, rtol=1e-12
    )
    p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    np.testing.assert_allclose(
        D.kl_divergence(D.Categorical(probs=T(p)), D.Categorical(probs=T(q))).item(),
        stats.entropy(p, q),
        rtol=1e-12,
    )
    bp, bq = 0.3, 0.8
    want_b = bp * np.log(bp / bq) + (1 - bp) * np.log((1 - bp) / (1 - bq))
    assert (
        abs(D.kl_divergence(D.Bernoulli(probs=T(bp)), D.Bernoulli(probs=T(bq))).item() - want_b)
        < 1e-9
    )
    np.testing.assert_allclose(
        A(D.kl_divergence(D.Uniform(T([0.0, 0.0]), T([1.0, 3.0])), D.Uniform(T(-1.0), T(2.0)))),
        [math.log(3.0), math.inf],
    )
    with pytest.raises(NotImplementedError, match="register_kl"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Uniform(0.0, 1.0))


def test_independent_diagonal_gaussian():
    rng = np.random.default_rng(8)
    loc, scale = rng.standard_normal((4, 3)), rng.uniform(0.5, 2, (4, 3))
    d = D.Independent(D.Normal(T(loc), T(scale)), 1)
    assert d.batch_shape == (4,) and d.event_shape == (3,) and d.has_rsample
    x = rng.standard_normal((2, 4, 3))
    want = stats.multivariate_normal  # a diagonal covariance: the product of the marginals
    ref = np.stack(
        [[want.logpdf(x[s, b], loc[b], np.diag(scale[b] ** 2)) for b in range(4)] for s in range(2)]
    )
    np.testing.assert_allclose(A(d.log_prob(T(x))), ref, rtol=1e-10)
    np.testing.assert_allclose(
        A(d.entropy()), [want.entropy(loc[b], np.diag(scale[b] ** 2)) for b in range(4)], rtol=1e-10
    )
    assert d.rsample((5,)).shape == (5, 4, 3)
    q = D.Independent(D.Normal(T(loc * 0), T(scale * 0 + 1)), 1)
    kl = A(D.kl_divergence(d, q))
    want_kl = (np.log(1 / scale) + (scale**2 + loc**2) / 2 - 0.5).sum(1)
    np.testing.assert_allclose(kl, want_kl, rtol=1e-12)
    with pytest.raises(ValueError):
        D.Independent(D.Normal(T(loc), T(scale)), 3)


def test_lr_scheduler_old_base_name():
    from torchlight.optim.lr_scheduler import LRScheduler, _LRScheduler

    class Halving(_LRScheduler):
        def get_lr(self):
            return [b * 0.5**self.last_epoch for b in self.base_lrs]

    opt = tl.optim.SGD([tl.zeros(1, requires_grad=True)], lr=1.0)
    s = Halving(opt)
    opt.step()
    s.step()
    assert _LRScheduler is LRScheduler and s.get_last_lr() == [0.5]
