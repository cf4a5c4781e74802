"""Losses against numpy re-derivations (every reduction), stability, gradchecks, errors, and
cross_entropy's common case (every target counts) against its general path."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F
from torchlight import Tensor
from torchlight.nn import loss as loss_module

rng = np.random.default_rng(0)


def reduce(v, reduction, denom=None):
    if reduction == "none":
        return v
    if reduction == "sum":
        return v.sum()
    return v.sum() / (v.size if denom is None else denom)


def log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_cross_entropy(x, t, weight=None, ignore_index=-100, reduction="mean", eps=0.0):
    """Index targets; x is (N, C, *d). Written straight from PyTorch's documented formula."""
    C = x.shape[1]
    lp = np.moveaxis(log_softmax(x, 1), 1, -1).reshape(-1, C)
    tt = t.reshape(-1)
    w = np.ones(C) if weight is None else weight
    valid = tt != ignore_index
    safe = np.where(valid, tt, 0)
    wt = w[safe] * valid
    nll = -lp[np.arange(len(tt)), safe] * wt
    smooth = -(lp * w).sum(1) * valid
    loss = (1 - eps) * nll + eps / C * smooth
    if reduction == "none":
        return loss.reshape(t.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(reduction):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    X, Y = tl.tensor(x), tl.tensor(y)
    d = x - y
    np.testing.assert_allclose(
        F.mse_loss(X, Y, reduction).to_numpy(), reduce(d * d, reduction), rtol=1e-12
    )
    np.testing.assert_allclose(
        nn.L1Loss(reduction)(X, Y).to_numpy(), reduce(np.abs(d), reduction), rtol=1e-12
    )
    b = 0.7
    sl1 = np.where(np.abs(d) < b, 0.5 * d * d / b, np.abs(d) - 0.5 * b)
    np.testing.assert_allclose(
        nn.SmoothL1Loss(reduction, beta=b)(X, Y).to_numpy(), reduce(sl1, reduction), rtol=1e-12
    )
    hub = np.where(np.abs(d) <= b, 0.5 * d * d, b * (np.abs(d) - 0.5 * b))
    np.testing.assert_allclose(
        F.huber_loss(X, Y, reduction, delta=b).to_numpy(), reduce(hub, reduction), rtol=1e-12
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2, 3)])
def test_cross_entropy_indices(reduction, shape):
    x = rng.standard_normal(shape) * 3
    t = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    t.reshape(-1)[:2] = -100
    w = rng.uniform(0.5, 2, shape[1])
    for kw in [dict(), dict(weight=w), dict(eps=0.1), dict(weight=w, eps=0.2)]:
        ref = np_cross_entropy(x, t, kw.get("weight"), -100, reduction, kw.get("eps", 0.0))
        got = F.cross_entropy(
            tl.tensor(x),
            tl.tensor(t),
            None if "weight" not in kw else tl.tensor(w),
            reduction=reduction,
            label_smoothing=kw.get("eps", 0.0),
        )
        np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-10, atol=1e-12)


def test_cross_entropy_probabilities_and_unbatched():
    x = rng.standard_normal((4, 3, 2))
    p = rng.uniform(size=(4, 3, 2))
    p /= p.sum(1, keepdims=True)
    w = np.array([0.5, 1.0, 2.0])
    lp = log_softmax(x, 1)
    for eps in (0.0, 0.3):
        q = p * (1 - eps) + eps / 3
        per = -(lp * q * w[None, :, None]).sum(1)
        for red in ("mean", "sum", "none"):
            got = F.cross_entropy(
                tl.tensor(x), tl.tensor(p), weight=tl.tensor(w), reduction=red, label_smoothing=eps
            )
            np.testing.assert_allclose(got.to_numpy(), reduce(per, red, denom=8), rtol=1e-10)
    v = rng.standard_normal(5)
    got = F.cross_entropy(tl.tensor(v), tl.tensor(2))
    np.testing.assert_allclose(got.item(), -log_softmax(v, 0)[2], rtol=1e-12)


def test_nll_loss_and_ignore_index():
    lp = log_softmax(rng.standard_normal((4, 3)), 1)
    t = np.array([0, 2, 1, 2])
    w = np.array([1.0, 2.0, 3.0])
    got = nn.NLLLoss(weight=tl.tensor(w), ignore_index=2)(tl.tensor(lp), tl.tensor(t))
    keep = t != 2
    ref = -(lp[np.arange(4), t] * w[t] * keep).sum() / (w[t] * keep).sum()
    np.testing.assert_allclose(got.item(), ref, rtol=1e-12)


def test_cross_entropy_errors():
    x = tl.randn(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, tl.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, tl.tensor([0, -1, 1]))
    for eps in (0.0, 0.1):  # ignored entries lie outside [0, C) too: only a real one is an error
        with pytest.raises(IndexError, match="Target 7 is out of bounds"):
            F.cross_entropy(x, tl.tensor([-100, 7, 1]), label_smoothing=eps)
        assert np.isfinite(F.cross_entropy(x, tl.tensor([-100, 3, 1]), label_smoothing=eps).item())
    with pytest.raises(tl.ShapeError, match="target of shape"):
        F.cross_entropy(x, tl.tensor([0, 1]))
    with pytest.raises(tl.DTypeError):
        F.nll_loss(x, tl.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(x, tl.tensor([0, 1, 2]), reduction="avg")


def test_binary_losses():
    p = rng.uniform(0.05, 0.95, (3, 4))
    z = rng.standard_normal((3, 4)) * 3
    y = (rng.uniform(size=(3, 4)) > 0.5).astype(float)
    w = rng.uniform(0.5, 1.5, (3, 4))
    pw = np.array([0.5, 1.0, 2.0, 3.0])
    bce = -w * (y * np.log(p) + (1 - y) * np.log(1 - p))
    s = sig = 1 / (1 + np.exp(-z))
    bcel = -w * (pw * y * np.log(sig) + (1 - y) * np.log(1 - s))
    for red in ("mean", "sum", "none"):
        got = nn.BCELoss(weight=tl.tensor(w), reduction=red)(tl.tensor(p), tl.tensor(y))
        np.testing.assert_allclose(got.to_numpy(), reduce(bce, red), rtol=1e-10)
        got = nn.BCEWithLogitsLoss(weight=tl.tensor(w), reduction=red, pos_weight=tl.tensor(pw))(
            tl.tensor(z), tl.tensor(y)
        )
        np.testing.assert_allclose(got.to_numpy(), reduce(bcel, red), rtol=1e-10)


def test_bce_clamps_log_and_rejects_out_of_range():
    x = tl.tensor([0.0, 1.0], dtype=tl.float64, requires_grad=True)
    loss = F.binary_cross_entropy(x, tl.tensor([1.0, 0.0], dtype=tl.float64), reduction="none")
    np.testing.assert_allclose(loss.to_numpy(), [100.0, 100.0])
    loss.sum().backward()
    assert np.isfinite(x.grad.to_numpy()).all()
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(tl.tensor([1.5]), tl.tensor([1.0]))


def test_bce_with_logits_is_stable_for_huge_logits():
    for dt in (tl.float32, tl.float64):
        z = tl.tensor([1e4, -1e4, 1e4, -1e4], dtype=dt, requires_grad=True)
        y = tl.tensor([1.0, 0.0, 0.0, 1.0], dtype=dt)
        loss = F.binary_cross_entropy_with_logits(z, y, reduction="none")
        np.testing.assert_allclose(loss.to_numpy(), [0.0, 0.0, 1e4, 1e4], rtol=1e-6)
        loss.sum().backward()
        np.testing.assert_allclose(z.grad.to_numpy(), [0.0, 0.0, 1.0, -1.0], atol=1e-6)


def test_kl_div():
    q = log_softmax(rng.standard_normal((3, 4)), 1)
    p = np.exp(log_softmax(rng.standard_normal((3, 4)), 1))
    p[0, 0] = 0.0
    per = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - q), 0.0)
    for red in ("mean", "sum", "none"):
        np.testing.assert_allclose(
            F.kl_div(tl.tensor(q), tl.tensor(p), red).to_numpy(), reduce(per, red), rtol=1e-10
        )
    np.testing.assert_allclose(
        nn.KLDivLoss("batchmean")(tl.tensor(q), tl.tensor(p)).item(), per.sum() / 3, rtol=1e-10
    )
    lt = np.log(np.where(p > 0, p, 1e-3))
    ref = (np.exp(lt) * (lt - q)).sum()
    np.testing.assert_allclose(
        F.kl_div(tl.tensor(q), tl.tensor(lt), "sum", log_target=True).item(), ref, rtol=1e-10
    )


def test_loss_gradchecks():
    x = tl.randn(3, 4, dtype=tl.float64, requires_grad=True)
    y = tl.randn(3, 4, dtype=tl.float64)
    t = tl.tensor([1, 3, 0])
    w = tl.tensor([0.5, 1.0, 2.0, 1.5], dtype=tl.float64)
    assert tl.gradcheck(lambda x: F.mse_loss(x, y), (x,))
    assert tl.gradcheck(lambda x: F.l1_loss(x, y, "sum"), (x,))
    assert tl.gradcheck(lambda x: F.smooth_l1_loss(x, y, beta=0.5), (x,))
    assert tl.gradcheck(lambda x: F.huber_loss(x, y, "none"), (x,))
    assert tl.gradcheck(lambda x: F.cross_entropy(x, t, weight=w, label_smoothing=0.1), (x,))
    assert tl.gradcheck(lambda x: F.cross_entropy(x, y.softmax(1), label_smoothing=0.1), (x,))
    x4 = tl.randn(2, 3, 2, dtype=tl.float64, requires_grad=True)
    t4 = tl.tensor([[0, 2], [1, -100]])
    assert tl.gradcheck(lambda x: F.cross_entropy(x, t4, reduction="none"), (x4,))
    assert tl.gradcheck(lambda x: F.nll_loss(x.log_softmax(1), t, reduction="sum"), (x,))
    p = tl.rand(3, 4, dtype=tl.float64) * 0.8 + 0.1
    p.requires_grad_()
    tgt = (tl.rand(3, 4, dtype=tl.float64) > 0.5).to(tl.float64)
    assert tl.gradcheck(lambda p: F.binary_cross_entropy(p, tgt), (p,))
    assert tl.gradcheck(lambda x: F.binary_cross_entropy_with_logits(x, tgt, pos_weight=w), (x,))
    assert tl.gradcheck(lambda x: F.kl_div(x.log_softmax(1), p.detach(), "batchmean"), (x,))


def test_weight_is_a_buffer():
    ce = nn.CrossEntropyLoss(weight=tl.tensor([1.0, 2.0]))
    assert list(ce.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    assert repr(nn.MSELoss(reduction="sum")) == "MSELoss(reduction='sum')"


def test_cross_entropy_fused_path_gradcheck_and_layouts():
    """The fused path (class indices, no label smoothing) with weights, ignored entries, every
    reduction and a transposed input, against finite differences and nll_loss(log_softmax)."""
    xt = tl.randn(4, 5, dtype=tl.float64, requires_grad=True)  # used as xt.t(): (5, 4), strided
    t = tl.tensor([3, -100, 0, 2, 1])
    w = tl.tensor([0.5, 1.0, 2.0, 1.5], dtype=tl.float64)
    for red in ("mean", "sum", "none"):
        assert tl.gradcheck(
            lambda a, red=red: F.cross_entropy(a.t(), t, weight=w, reduction=red), (xt,)
        )
        want = F.nll_loss(xt.t().log_softmax(1), t, weight=w, reduction=red)
        np.testing.assert_allclose(
            F.cross_entropy(xt.t(), t, weight=w, reduction=red).detach().numpy(),
            want.detach().numpy(),
            rtol=1e-12,
        )


# --- cross_entropy / nll_loss when every target counts (no class weights, none ignored): the
# short path that skips the mask and weight ops must give the general path's values and
# gradients, and must not be taken when a target may be ignored or the call is traced/captured.
rng2 = np.random.default_rng(7)
REDUCTIONS = ("mean", "sum", "none")


def _grad(fn, x, **kw):
    """The loss and the gradient of its sum with respect to a fresh leaf holding ``x``."""
    leaf = tl.tensor(x, requires_grad=True)
    loss = fn(leaf, **kw)
    loss.sum().backward()
    return loss.detach().numpy(), leaf.grad.numpy()


@pytest.mark.parametrize("eps", [0.0, 0.2])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2, 3), (4,)])
def test_cross_entropy_common_case_matches_numpy_and_general_path(reduction, shape, eps):
    x = rng2.standard_normal(shape) * 3
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rng2.integers(0, c, tshape)
    target = tl.tensor(t)
    ones = tl.ones(c, dtype=tl.float64)  # a weight forces the general path: same loss

    def fast(a):
        return F.cross_entropy(a, target, reduction=reduction, label_smoothing=eps)

    def general(a):
        return F.cross_entropy(a, target, ones, reduction=reduction, label_smoothing=eps)

    got, g_fast = _grad(fast, x)
    want, g_general = _grad(general, x)
    x2 = x[None] if len(shape) == 1 else x
    t2 = t[None] if len(shape) == 1 else t
    ref = np_cross_entropy(x2, t2, reduction=reduction, eps=eps)
    np.testing.assert_allclose(got, ref.reshape(got.shape), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(g_fast, g_general, rtol=1e-14, atol=1e-15)
    assert tl.gradcheck(fast, (tl.tensor(x, requires_grad=True),))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("rows", [1, 6])
@pytest.mark.parametrize("transposed", [False, True])
def test_nll_loss_without_weights_is_the_weighted_path_exactly(reduction, rows, transposed):
    """Unweighted, ``sum`` and ``mean`` negate the sum once and give every row the gradient
    ``-g / N``: the same numbers, to the last bit, as the per-row path that class weights of 1
    take; on a strided input too (the gather then reads through the strides)."""
    a = rng2.standard_normal((5, rows) if transposed else (rows, 5)).astype(np.float32)
    t = tl.tensor(rng2.integers(0, 5, rows))
    ones = tl.ones(5)

    def prep(leaf):
        return leaf.t() if transposed else leaf

    got, g = _grad(lambda x: F.nll_loss(prep(x), t, reduction=reduction), a)
    want, g_want = _grad(lambda x: F.nll_loss(prep(x), t, ones, reduction=reduction), a)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(g, g_want)
    rows_a = a.T if transposed else a
    picked = -rows_a[np.arange(rows), t.numpy()]
    ref = {"none": picked, "sum": picked.sum(), "mean": picked.mean()}[reduction]
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_nll_loss_of_no_rows_mean_nan_sum_positive_zero():
    x = tl.zeros(0, 3, requires_grad=True)
    loss = F.nll_loss(x, tl.zeros(0, dtype=tl.int64))
    assert np.isnan(loss.item())
    loss.backward()
    assert x.grad.shape == (0, 3)
    total = F.nll_loss(x, tl.zeros(0, dtype=tl.int64), reduction="sum").item()
    assert total == 0.0 and not np.signbit(total)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_common_case_on_a_transposed_float32_input(reduction):
    xt = rng2.standard_normal((4, 6)).astype(np.float32)
    t = rng2.integers(0, 4, 6)
    got, g = _grad(lambda a: F.cross_entropy(a.t(), tl.tensor(t), reduction=reduction), xt)
    ref = np_cross_entropy(xt.T.astype(np.float64), t, reduction=reduction)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert got.dtype == np.float32 and g.shape == (4, 6)
    # d loss_i / d x_i = softmax(x_i) - onehot(t_i), scaled by the reduction
    p = np.exp(xt.T - xt.T.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(6), t] -= 1
    scale = 1 / 6 if reduction == "mean" else 1
    np.testing.assert_allclose(g, (p * scale).T, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "t,ignore",
    [
        ([0, 1, 2, 1, 3], 1),  # ignore_index among the targets, inside their range
        ([0, 2, 2, 3, 3], 1),  # inside the range but absent: nothing is ignored
        ([0, 2, 1, 3, 3], 0),  # at the low end of the range
        ([0, 2, 1, 3, 3], 3),  # at the high end
        ([0, 5, 1, 3, 5], 5),  # outside [0, C): only ignored entries exceed C - 1
    ],
)
def test_ignore_index_inside_the_targets_range(reduction, t, ignore):
    x = rng2.standard_normal((5, 4))
    got, g = _grad(
        lambda a: F.cross_entropy(a, tl.tensor(t), ignore_index=ignore, reduction=reduction), x
    )
    ref = np_cross_entropy(x, np.array(t), ignore_index=ignore, reduction=reduction)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    ignored = np.array(t) == ignore
    assert not g[ignored].any() and g[~ignored].any()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_gradient_with_weights_and_an_ignored_target(reduction):
    """Class weights and an ignored entry on every reduction (the weighted mean's divisor is a
    tensor, the others' backward is the direct one), against finite differences."""
    x = tl.randn(5, 4, dtype=tl.float64, requires_grad=True)
    t = tl.tensor([3, -100, 0, 2, 1])
    w = tl.tensor([0.5, 1.0, 2.0, 1.5], dtype=tl.float64)
    assert tl.gradcheck(lambda a: F.nll_loss(a, t, weight=w, reduction=reduction), (x,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_common_case(reduction):
    lp = np.log(rng2.dirichlet(np.ones(4), size=6))
    t = rng2.integers(0, 4, 6)
    got, g = _grad(lambda a: F.nll_loss(a, tl.tensor(t), reduction=reduction), lp)
    per = -lp[np.arange(6), t]
    ref = {"none": per, "sum": per.sum(), "mean": per.mean()}[reduction]
    np.testing.assert_allclose(got, ref, rtol=1e-14)
    want = np.zeros_like(lp)
    want[np.arange(6), t] = -1 / 6 if reduction == "mean" else -1
    np.testing.assert_array_equal(g, want)


def test_empty_batch():
    x = tl.zeros(0, 3, requires_grad=True)
    t = tl.zeros(0, dtype=tl.int64)
    assert np.isnan(F.cross_entropy(x, t).item())  # 0 / 0, as PyTorch
    assert F.cross_entropy(x, t, reduction="sum").item() == 0
    assert F.cross_entropy(x, t, reduction="none").shape == (0,)


LOSSES = {"nll_loss": F.nll_loss, "cross_entropy": F.cross_entropy}


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_all_targets_ignored(name, reduction):
    """Every row dropped: the mean is 0/0 = NaN and every gradient exactly 0 (PyTorch's rule;
    nll_loss's gradient used to hold 0·∞ = NaN at the placeholder class)."""
    x = rng2.standard_normal((3, 4))
    loss, g = _grad(lambda a: LOSSES[name](a, tl.tensor([-100] * 3), reduction=reduction), x)
    want = {"mean": np.nan, "sum": 0.0, "none": np.zeros(3)}[reduction]
    np.testing.assert_array_equal(loss, want)
    np.testing.assert_array_equal(g, np.zeros_like(x))


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_minus_one_mask_values_and_gradients(name, reduction):
    """The usual mask (targets of -1 with ignore_index=-1, as makemore and minGPT) against the
    numpy oracle; nll_loss's input is log-probabilities."""
    x = rng2.standard_normal((6, 5))
    t = np.array([2, -1, 0, 4, -1, 1])
    if name == "nll_loss":
        x = log_softmax(x, 1)
    got, g = _grad(lambda a: LOSSES[name](a, tl.tensor(t), ignore_index=-1, reduction=reduction), x)
    np.testing.assert_allclose(
        got, np_cross_entropy(x, t, ignore_index=-1, reduction=reduction), rtol=1e-12
    )
    kept = t != -1
    want = np.zeros_like(x)
    want[np.arange(6)[kept], t[kept]] = -1.0
    if name == "cross_entropy":
        want[kept] += np.exp(log_softmax(x, 1))[kept]
    np.testing.assert_allclose(g, want / (kept.sum() if reduction == "mean" else 1), atol=1e-15)


def test_minus_one_mask_is_known_from_the_range(monkeypatch):
    """Targets whose only value below 0 is ignore_index = -1 need no exact bounds check (no
    device-to-host read); any other value outside [0, C) is still found and named."""
    x = tl.randn(4, 3)

    def refuse(self, *args, **kwargs):
        raise AssertionError("checked the targets exactly")

    with monkeypatch.context() as m:
        m.setattr(Tensor, "any", refuse)
        F.cross_entropy(x, tl.tensor([0, -1, 2, -1]), ignore_index=-1)
        F.nll_loss(x, tl.tensor([-1, -1, 2, 1]), ignore_index=-1)
    for t, ignore, bad in (
        ([0, -2, 2, -1], -1, -2),
        ([0, -1, 2, 1], -100, -1),
        ([0, 3, 1, 1], -1, 3),
    ):
        with pytest.raises(tl.TensorIndexError, match=f"Target {bad} is out of bounds"):
            F.cross_entropy(x, tl.tensor(t), ignore_index=ignore)
    np.testing.assert_allclose(  # ignore_index = C: the one value above the range, ignored
        F.cross_entropy(x, tl.tensor([0, 3, 1, 3]), ignore_index=3).item(),
        np_cross_entropy(x.numpy(), np.array([0, 3, 1, 3]), ignore_index=3),
        rtol=1e-6,
    )


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("kw", [{}, {"ignore_index": 1}, {"reduction": "sum"}])
def test_the_reduction_is_part_of_the_loss_node(name, kw):
    """One node per loss, as PyTorch's NllLossBackward0: the mean or sum of the rows is done
    inside it, not by a sum, mean or division node after it."""
    x = tl.randn(4, 3, requires_grad=True)
    loss = LOSSES[name](x, tl.tensor([0, 1, 2, 1]), **kw)
    assert loss.shape == ()
    assert ("NLLRows" if name == "nll_loss" else "CrossEntropyRows") in repr(loss.grad_fn)


def test_the_common_case_builds_no_mask(monkeypatch):
    """The decision itself: without a possible ignored target no comparison op runs; with
    ignore_index inside the targets' range, or class weights, the mask is built."""
    x = tl.randn(4, 3)

    def refuse(self, other):
        raise AssertionError("built a mask")

    monkeypatch.setattr(Tensor, "__ne__", refuse)  # the mask on the device
    monkeypatch.setattr(loss_module, "_host_mask", lambda *a: refuse(None, None))  # in numpy
    F.cross_entropy(x, tl.tensor([0, 2, 1, 2]))
    F.nll_loss(x, tl.tensor([0, 2, 1, 2]), reduction="sum")
    F.cross_entropy(x, tl.tensor([0, 2, 1, 2]), ignore_index=3)
    for kw in (dict(ignore_index=1), dict(weight=tl.ones(3)), dict(ignore_index=0)):
        with pytest.raises(AssertionError, match="built a mask"):
            F.cross_entropy(x, tl.tensor([0, 2, 1, 2]), **kw)


@pytest.mark.parametrize("on_host", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ignored_targets_give_the_same_loss_and_gradient_on_either_mask_path(
    monkeypatch, on_host, reduction
):
    """The mask built in numpy (targets in host memory) or by device ops: the same values,
    against a numpy oracle of PyTorch's weighted mean; every target ignored gives NaN (mean) and
    a zero gradient."""
    if not on_host:
        monkeypatch.setattr(loss_module, "host_memory", lambda backend: False)
    rng = np.random.default_rng(8)
    x_np = rng.standard_normal((6, 4))
    t_np = np.array([0, -1, 3, -1, 2, 1])
    x = tl.tensor(x_np, requires_grad=True)
    loss = F.cross_entropy(x, tl.tensor(t_np), ignore_index=-1, reduction=reduction)
    logp = x_np - np.log(np.exp(x_np).sum(1, keepdims=True))
    keep = t_np != -1
    rows = np.where(keep, -logp[np.arange(6), np.where(keep, t_np, 0)], 0.0)
    want = {"none": rows, "sum": rows.sum(), "mean": rows.sum() / keep.sum()}[reduction]
    np.testing.assert_allclose(loss.detach().numpy(), want, rtol=1e-12)
    loss.sum().backward()
    scale = 1 / keep.sum() if reduction == "mean" else 1.0
    onehot = np.eye(4)[np.where(keep, t_np, 0)]
    grad = (np.exp(logp) - onehot) * keep[:, None] * scale
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-12, atol=1e-15)
    with pytest.raises(tl.TensorIndexError, match="out of bounds"):
        F.cross_entropy(x, tl.tensor([0, -1, 4, 0, 0, 0]), ignore_index=-1)
    x.grad = None
    none = F.cross_entropy(x, tl.tensor([-1] * 6), ignore_index=-1)
    none.backward()
    assert np.isnan(none.item()) and not x.grad.numpy().any()


def test_a_traced_loss_replays_ignored_targets_and_other_batch_sizes():
    # traced on targets that all count; the replay must still weigh its own targets
    def fn(x, t):
        return F.cross_entropy(x, t)

    tape = tl.jit.trace(fn, tl.randn(4, 3), tl.tensor([0, 1, 2, 1]))
    for x, t in (
        (tl.randn(4, 3), tl.tensor([0, -100, 2, 1])),
        (tl.randn(6, 3), tl.tensor([2, 1, 0, 0, -100, -100])),
    ):
        np.testing.assert_allclose(tape(x, t).item(), fn(x, t).item(), rtol=1e-6)


def test_a_captured_step_replays_ignored_targets():
    w = tl.zeros(3, 3, requires_grad=True)

    def step(x, t):
        loss = F.cross_entropy(x @ w, t)
        loss.backward()
        grad = w.grad.clone()
        w.grad = None
        return loss, grad

    captured = tl.jit.capture_step(step)
    x = tl.randn(4, 3)
    for _ in range(3):  # warm-up and the two recordings: every target counts
        captured(x, tl.tensor([0, 1, 2, 1]))
    assert captured.state == "captured"
    t = tl.tensor([0, -100, 2, -100])
    for got, want in zip(captured(x, t), step(x, t)):
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-6)
