"""An unweighted ``nll_loss`` forward in one backend call (capability ``nll``). The core must
get what its three calls without it give (gather, sum, divide): the same number, bit for bit,
on every layout and float dtype, the same gradient, the same errors, and a capture that replays."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
from torchlight.tensor.backend.numpy import NumpyBackend
from torchlight.tensor.functions.gathering import nll_rows


def _log_probs(seed, n, c, layout, dtype):
    """(n, c) log-probabilities: a leaf, and the view of it to take (a packed leaf itself, a
    transposed view, or a step-sliced window)."""
    rng = np.random.default_rng(seed)
    shape = {"contiguous": (n, c), "transposed": (c, n), "sliced": (n + 1, 2 * c)}[layout]
    leaf = tl.tensor(rng.standard_normal(shape), dtype=dtype, requires_grad=True)
    views = {
        "contiguous": lambda a: a,
        "transposed": lambda a: a.t(),
        "sliced": lambda a: a[1:, ::2],
    }
    return leaf, views[layout]


def _targets(seed, n, c, sliced):
    values = np.random.default_rng(seed + 1).integers(0, c, size=2 * n if sliced else n)
    t = tl.tensor(values)
    return t[::2] if sliced else t


def _loss_and_grad(leaf, view, target, reduction):
    leaf.grad = None
    loss = nll_rows(view(leaf), target, None, reduction)
    loss.backward()
    return loss.detach().to_numpy().copy(), leaf.grad.to_numpy().copy()


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    c=st.integers(1, 30),
    layout=st.sampled_from(["contiguous", "transposed", "sliced"]),
    sliced_target=st.booleans(),
    dtype=st.sampled_from([tl.float32, tl.float64]),
    reduction=st.sampled_from(["sum", "mean"]),
    seed=st.integers(0, 2**16),
)
def test_one_call_equals_the_three_calls_and_numpy(
    n, c, layout, sliced_target, dtype, reduction, seed
):
    leaf, view = _log_probs(seed, n, c, layout, dtype)
    target = _targets(seed, n, c, sliced_target)
    fused = _loss_and_grad(leaf, view, target, reduction)
    caps = NumpyBackend.capabilities
    try:
        NumpyBackend.capabilities = caps - {"nll"}
        composite = _loss_and_grad(leaf, view, target, reduction)
    finally:
        NumpyBackend.capabilities = caps
    for got, want in zip(fused, composite):
        np.testing.assert_array_equal(got, want)
    x = view(leaf).detach().to_numpy().astype(np.float64)
    picked = x[np.arange(n), target.to_numpy()]
    want = -picked.sum() / (n if reduction == "mean" else 1)
    tol = 1e-5 if dtype is tl.float32 else 1e-12
    np.testing.assert_allclose(fused[0].astype(np.float64), want, rtol=tol, atol=tol)


def test_the_backend_is_asked_for_unweighted_sums_and_means_only(monkeypatch):
    be = tl.ones(1).backend
    seen = []
    original = type(be).nll
    monkeypatch.setattr(
        type(be), "nll", lambda self, *args: seen.append(args[3]) or original(self, *args)
    )
    x = tl.tensor(np.log(np.full((3, 4), 0.25)), requires_grad=True)
    t = tl.tensor([0, 3, 1])
    nll_rows(x, t, None, "mean")
    nll_rows(x, t, None, "sum")
    assert seen == [-3.0, -1.0]
    nll_rows(x, t, None, "none")
    # per-row weights: what class weights and ignored targets become
    nll_rows(x, t, tl.tensor([1.0, 2.0, 1.0]), "mean")
    nll_rows(x[:0], t[:0], None, "mean")  # no rows: the mean is NaN, as PyTorch's
    assert seen == [-3.0, -1.0]


def test_a_target_changed_behind_the_cores_back_raises():
    x = tl.zeros(2, 3)
    t = tl.tensor([0, 2])
    nll_rows(x, t, None, "mean")  # the core has recorded t's range as [0, 2]
    t.numpy()[1] = 7  # through a shared view
    with pytest.raises(tl.TensorIndexError, match="7 is out of"):
        nll_rows(x, t, None, "mean")
    # and the backend itself refuses it, whatever the core checked before
    with pytest.raises(tl.TensorIndexError, match="nll: index 7 is out of range"):
        x.backend.nll(x._td, t._td, tl.zeros(())._td, -2.0)


def test_a_captured_step_with_nll_loss_replays_as_eager():
    w = tl.tensor(np.linspace(-1, 1, 12).reshape(4, 3), requires_grad=True)

    def step(x, y):
        w.grad = None
        loss = nll_rows((x @ w).log_softmax(1), y, None, "mean")
        loss.backward()
        with tl.no_grad():
            w.sub_(w.grad * 0.1)  # SGD written out (torchlight.optim is another distribution)
        return loss

    rng = np.random.default_rng(3)
    batches = [
        (tl.tensor(rng.standard_normal((5, 4))), tl.tensor(rng.integers(0, 3, size=5)))
        for _ in range(5)
    ]
    w0 = w.detach().to_numpy().copy()
    eager = [step(x, y).item() for x, y in batches]
    eager_w = w.detach().to_numpy().copy()
    with tl.no_grad():
        w.copy_(tl.tensor(w0))
    captured = tl.jit.capture_step(step)
    replayed = [captured(x, y).item() for x, y in batches]
    assert "nll" in [c.name for c in captured._replay]  # the last two steps were replays
    np.testing.assert_allclose(replayed, eager, rtol=1e-12)
    np.testing.assert_allclose(w.detach().to_numpy(), eager_w, rtol=1e-12)
