"""Schedulers: the learning rate of every epoch against the closed-form formula.

Timing as in PyTorch: the lr right after construction is epoch 0's; each ``scheduler.step()``
(after ``optimizer.step()``) moves to the next epoch.
"""

import math
import warnings
from bisect import bisect_right

import numpy as np
import pytest

import torchlight as tl
from torchlight.nn import checkpoint
from torchlight.optim import SGD, Adagrad, Adam
from torchlight.optim import lr_scheduler as L


def _opt(lr=0.5, cls=SGD, groups=1, **kw):
    params = [tl.zeros(2, requires_grad=True) for _ in range(groups)]
    if groups == 1:
        return cls(params, lr=lr, **kw)
    return cls([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(params)], lr=lr, **kw)


def _lrs(opt, sched, epochs, metrics=None, group=0):
    """lr in force during each epoch 0..epochs-1 (optimizer steps before scheduler steps)."""
    out = []
    for e in range(epochs):
        assert sched.get_last_lr()[group] == opt.param_groups[group]["lr"]
        out.append(opt.param_groups[group]["lr"])
        opt.step()
        sched.step() if metrics is None else sched.step(metrics[e])
    return out


def _close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-15)


def test_steplr():
    opt = _opt()
    s = L.StepLR(opt, step_size=3, gamma=0.5)
    _close(_lrs(opt, s, 12), [0.5 * 0.5 ** (e // 3) for e in range(12)])


def test_multisteplr_with_repeated_milestone():
    opt = _opt()
    ms = [2, 5, 5, 9]
    s = L.MultiStepLR(opt, milestones=ms, gamma=0.1)
    _close(_lrs(opt, s, 12), [0.5 * 0.1 ** bisect_right(ms, e) for e in range(12)])


def test_exponentiallr():
    opt = _opt()
    s = L.ExponentialLR(opt, gamma=0.9)
    _close(_lrs(opt, s, 20), [0.5 * 0.9**e for e in range(20)])


@pytest.mark.parametrize("eta_min", [0.0, 0.05])
def test_cosine_annealing_two_periods(eta_min):
    opt = _opt(groups=2)
    s = L.CosineAnnealingLR(opt, T_max=10, eta_min=eta_min)
    lrs0, lrs1 = [], []
    for _ in range(25):
        lrs0.append(opt.param_groups[0]["lr"])
        lrs1.append(opt.param_groups[1]["lr"])
        opt.step()
        s.step()
    f = lambda base, e: eta_min + (base - eta_min) * (1 + math.cos(math.pi * e / 10)) / 2
    _close(lrs0, [f(0.5, e) for e in range(25)])
    _close(lrs1, [f(1.0, e) for e in range(25)])


def test_lambdalr_per_group():
    opt = _opt(groups=2)
    s = L.LambdaLR(opt, [lambda e: 1 / (e + 1), lambda e: 0.95**e])
    lrs = [], []
    for _ in range(8):
        for g in (0, 1):
            lrs[g].append(opt.param_groups[g]["lr"])
        opt.step()
        s.step()
    _close(lrs[0], [0.5 / (e + 1) for e in range(8)])
    _close(lrs[1], [1.0 * 0.95**e for e in range(8)])
    assert s.state_dict()["lr_lambdas"] == [None, None]


def test_linearlr_and_constantlr():
    opt = _opt()
    s = L.LinearLR(opt, start_factor=0.1, end_factor=0.9, total_iters=6)
    _close(_lrs(opt, s, 10), [0.5 * (0.1 + 0.8 * min(e, 6) / 6) for e in range(10)])
    opt = _opt()
    s = L.ConstantLR(opt, factor=0.25, total_iters=4)
    _close(_lrs(opt, s, 8), [0.5 * (0.25 if e < 4 else 1.0) for e in range(8)])


def test_sequential_warmup_then_cosine():
    opt = _opt(lr=1.0)
    warm = L.LinearLR(opt, start_factor=0.1, end_factor=1.0, total_iters=5)
    cos = L.CosineAnnealingLR(opt, T_max=20, eta_min=0.01)
    s = L.SequentialLR(opt, [warm, cos], milestones=[5])
    expected = [
        0.1 + 0.9 * e / 5 if e < 5 else 0.01 + 0.99 * (1 + math.cos(math.pi * (e - 5) / 20)) / 2
        for e in range(25)
    ]
    _close(_lrs(opt, s, 25), expected)


def _onecycle_expected(max_lr, total, pct, div, final_div, strategy, three_phase):
    init, lo = max_lr / div, max_lr / div / final_div
    anneal = (
        (lambda a, b, p: b + (a - b) / 2 * (math.cos(math.pi * p) + 1))
        if strategy == "cos"
        else (lambda a, b, p: (b - a) * p + a)
    )
    if three_phase:
        phases = [
            (pct * total - 1, init, max_lr),
            (2 * pct * total - 2, max_lr, init),
            (total - 1, init, lo),
        ]
    else:
        phases = [(pct * total - 1, init, max_lr), (total - 1, max_lr, lo)]
    out = []
    for e in range(total):
        start = 0.0
        for i, (end, a, b) in enumerate(phases):
            if e <= end or i == len(phases) - 1:
                out.append(anneal(a, b, (e - start) / (end - start)))
                break
            start = end
    return out


@pytest.mark.parametrize(
    "strategy, three_phase", [("cos", False), ("linear", False), ("cos", True)]
)
def test_onecycle(strategy, three_phase):
    opt = _opt(momentum=0.9)
    s = L.OneCycleLR(
        opt,
        max_lr=2.0,
        total_steps=40,
        pct_start=0.25,
        anneal_strategy=strategy,
        three_phase=three_phase,
    )
    expected = _onecycle_expected(2.0, 40, 0.25, 25.0, 1e4, strategy, three_phase)
    _close(_lrs(opt, s, 40), expected)
    assert expected[0] == pytest.approx(2.0 / 25) and max(expected) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="Tried to step 41 times"):
        s.step()


def test_onecycle_cycles_momentum_and_adam_beta1():
    opt = _opt(momentum=0.9)
    s = L.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.5, anneal_strategy="linear")
    moms = []
    for _ in range(10):
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        if len(moms) < 10:
            s.step()
    # momentum runs opposite to the lr: max 0.95 -> base 0.85 (at the peak lr) -> max 0.95
    _close(moms[:5], [0.95 - 0.1 * e / 4 for e in range(5)])
    _close(moms[4:], [0.85 + 0.1 * (e - 4) / 5 for e in range(4, 10)])
    opt = _opt(cls=Adam)
    L.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)
    with pytest.raises(ValueError, match="momentum"):
        L.OneCycleLR(Adagrad([tl.zeros(1, requires_grad=True)]), max_lr=1.0, total_steps=10)


def test_reduce_on_plateau_patience_and_cooldown():
    opt = _opt(lr=1.0)
    s = L.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, cooldown=1, threshold=0.0)
    metrics = [5, 4, 4, 4, 4, 4, 4, 4, 4, 4]
    # epoch 1: best=5; 2: best=4; 3,4 bad (1,2); 5 bad (3 > 2): reduce -> 0.5, cooldown 1;
    # 6: in cooldown (bad epochs reset); 7, 8 bad; 9 bad (3): reduce -> 0.25
    lrs = []
    for m in metrics:
        opt.step()
        s.step(m)
        lrs.append(s.get_last_lr()[0])
    assert lrs == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25]
    assert s.last_epoch == 10


def test_reduce_on_plateau_threshold_modes_and_min_lr():
    # rel: 0.995 is not better than 1.0 by 1%: counts as bad
    opt = _opt(lr=1.0)
    s = L.ReduceLROnPlateau(opt, factor=0.1, patience=0, threshold=0.01, threshold_mode="rel")
    s.step(1.0)
    s.step(0.995)
    assert s.get_last_lr() == [pytest.approx(0.1)] and s.best == 1.0
    s.step(0.98)  # 2% better: improvement
    assert s.best == 0.98 and s.get_last_lr() == [pytest.approx(0.1)]
    # abs, max mode, min_lr clamp, and eps skipping tiny reductions
    opt = _opt(lr=1.0)
    s = L.ReduceLROnPlateau(
        opt, mode="max", factor=0.1, patience=0, threshold=0.5, threshold_mode="abs", min_lr=0.05
    )
    s.step(1.0)
    s.step(1.4)  # not > 1.0 + 0.5
    assert s.get_last_lr() == [pytest.approx(0.1)]
    s.step(1.6)  # > 1.5: better
    assert s.best == 1.6
    s.step(0.0)
    assert s.get_last_lr() == [0.05]
    s.step(0.0)
    assert s.get_last_lr() == [0.05]  # 0.05 - 0.05 <= eps: unchanged
    with pytest.raises(ValueError, match="Factor"):
        L.ReduceLROnPlateau(_opt(), factor=1.0)


def test_construction_sets_epoch_zero_and_initial_lr():
    opt = _opt(lr=0.3)
    s = L.LinearLR(opt, start_factor=0.5, total_iters=4)
    assert s.last_epoch == 0
    assert opt.param_groups[0]["lr"] == 0.15 and s.get_last_lr() == [0.15]
    assert opt.param_groups[0]["initial_lr"] == 0.3 and s.base_lrs == [0.3]


def test_two_schedulers_compose_like_pytorch():
    opt = _opt(lr=1.0)
    a = L.StepLR(opt, step_size=2, gamma=0.5)
    b = L.ExponentialLR(opt, gamma=0.9)
    lrs = []
    for _ in range(6):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        a.step()
        b.step()
    _close(lrs, [0.5 ** (e // 2) * 0.9**e for e in range(6)])


def test_warns_when_stepped_before_optimizer():
    opt = _opt()
    s = L.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()
    opt = _opt()
    s = L.StepLR(opt, step_size=1)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()


def test_resume_requires_initial_lr():
    with pytest.raises(KeyError, match="initial_lr"):
        L.StepLR(_opt(), step_size=2, last_epoch=3)


def _make(kind, opt):
    if kind == "step":
        return L.StepLR(opt, 3, 0.5)
    if kind == "multistep":
        return L.MultiStepLR(opt, [2, 4, 4, 9], 0.5)
    if kind == "cosine":
        return L.CosineAnnealingLR(opt, 6, 0.01)
    if kind == "onecycle":
        return L.OneCycleLR(opt, max_lr=1.0, total_steps=20)
    if kind == "sequential":
        return L.SequentialLR(
            opt, [L.LinearLR(opt, 0.1, total_iters=4), L.CosineAnnealingLR(opt, 10)], [4]
        )
    if kind == "plateau":
        return L.ReduceLROnPlateau(opt, patience=1, cooldown=1, factor=0.5)
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["step", "multistep", "cosine", "onecycle", "sequential", "plateau"]
)
def test_state_dict_round_trip_through_a_checkpoint(kind, tmp_path):
    metrics = [3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    step = (lambda s, e: s.step(metrics[e])) if kind == "plateau" else (lambda s, e: s.step())
    opt_a = _opt(momentum=0.9)
    sa = _make(kind, opt_a)
    for e in range(7):
        opt_a.step()
        step(sa, e)
    checkpoint.save({"opt": opt_a.state_dict(), "sched": sa.state_dict()}, tmp_path / "s.ckpt")
    loaded = checkpoint.load(tmp_path / "s.ckpt")

    opt_b = _opt(momentum=0.9)
    sb = _make(kind, opt_b)
    opt_b.load_state_dict(loaded["opt"])
    sb.load_state_dict(loaded["sched"])
    assert sb.get_last_lr() == sa.get_last_lr()
    for e in range(7, 19):
        for o, s in ((opt_a, sa), (opt_b, sb)):
            o.step()
            step(s, e)
        assert sb.get_last_lr() == sa.get_last_lr()
        assert opt_b.param_groups[0]["lr"] == opt_a.param_groups[0]["lr"]
        assert opt_b.param_groups[0]["momentum"] == opt_a.param_groups[0]["momentum"]


@pytest.mark.oracle
def test_matches_pytorch_when_available():
    torch = pytest.importorskip("torch")
    S = torch.optim.lr_scheduler
    pairs = [
        (
            lambda o: L.CosineAnnealingLR(o, 7, 0.01),
            lambda o: S.CosineAnnealingLR(o, 7, 0.01),
            None,
        ),
        (lambda o: L.LinearLR(o, 0.2, 0.9, 5), lambda o: S.LinearLR(o, 0.2, 0.9, 5), None),
        (
            lambda o: L.OneCycleLR(o, 1.0, total_steps=30, three_phase=True),
            lambda o: S.OneCycleLR(o, 1.0, total_steps=30, three_phase=True),
            None,
        ),
        (
            lambda o: L.SequentialLR(
                o, [L.LinearLR(o, 0.1, total_iters=5), L.CosineAnnealingLR(o, 20)], [5]
            ),
            lambda o: S.SequentialLR(
                o, [S.LinearLR(o, 0.1, total_iters=5), S.CosineAnnealingLR(o, 20)], [5]
            ),
            None,
        ),
        (
            lambda o: L.ReduceLROnPlateau(o, patience=2, cooldown=2, factor=0.5, threshold=0.01),
            lambda o: S.ReduceLROnPlateau(o, patience=2, cooldown=2, factor=0.5, threshold=0.01),
            [
                5,
                4,
                4,
                4,
                4,
                4,
                3,
                3,
                3,
                3,
                3,
                3,
                3,
                3,
                2.9999,
                3,
                3,
                3,
                3,
                3,
                3,
                1,
                1,
                1,
                1,
                1,
                1,
                1,
                1,
                1,
            ],
        ),
    ]
    for mine, theirs, metrics in pairs:
        a = SGD([tl.zeros(1, requires_grad=True)], lr=0.5, momentum=0.9)
        b = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5, momentum=0.9)
        sa, sb = mine(a), theirs(b)
        for e in range(29):
            assert sa.get_last_lr()[0] == pytest.approx(sb.get_last_lr()[0], rel=1e-12, abs=1e-15)
            assert a.param_groups[0]["momentum"] == pytest.approx(
                b.param_groups[0]["momentum"], rel=1e-12
            )
            a.step()
            b.step()
            if metrics:
                sa.step(metrics[e])
                sb.step(metrics[e])
            else:
                sa.step()
                sb.step()
