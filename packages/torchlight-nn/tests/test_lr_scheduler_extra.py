"""PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR and ChainedScheduler against the formulas
of PyTorch's documentation, step by step."""

import math

import pytest

import torchlight as tl
from torchlight.optim import SGD, Adam
from torchlight.optim.lr_scheduler import (
    ChainedScheduler,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    ExponentialLR,
    PolynomialLR,
    StepLR,
)


def _opt(cls=SGD, **kw):
    return cls([tl.zeros(2, requires_grad=True)], **kw)


def _run(opt, sched, n):
    lrs = [sched.get_last_lr()[0]]
    for _ in range(n):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    return lrs


@pytest.mark.parametrize("power", [1.0, 0.5, 3.0])
def test_polynomial_lr(power):
    opt = _opt(lr=0.2)
    lrs = _run(opt, PolynomialLR(opt, total_iters=6, power=power), 10)
    want = [0.2 * (1 - min(t, 6) / 6) ** power for t in range(11)]
    assert lrs == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("T_0, T_mult", [(3, 1), (2, 2), (1, 3)])
def test_cosine_warm_restarts(T_0, T_mult):
    opt = _opt(lr=1.0)
    lrs = _run(opt, CosineAnnealingWarmRestarts(opt, T_0=T_0, T_mult=T_mult, eta_min=0.1), 20)
    want, T_cur, T_i = [], 0, T_0
    for _ in range(21):
        want.append(0.1 + 0.9 * (1 + math.cos(math.pi * T_cur / T_i)) / 2)
        T_cur += 1
        if T_cur >= T_i:
            T_cur, T_i = 0, T_i * T_mult
    assert lrs == pytest.approx(want, abs=1e-12)


def test_cosine_warm_restarts_fractional_epochs_and_state():
    opt = _opt(lr=1.0)
    s = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    s.step(2.5)  # cycle 2 (length 4), T_cur = 0.5
    assert s.T_i == 4 and s.T_cur == pytest.approx(0.5) and s.last_epoch == 2
    assert s.get_last_lr()[0] == pytest.approx((1 + math.cos(math.pi * 0.5 / 4)) / 2)
    s.step(7.0)  # 2 + 4 = 6 <= 7 < 14: cycle 3, T_cur = 1
    assert s.T_i == 8 and s.T_cur == pytest.approx(1.0)
    sd = s.state_dict()
    opt2 = _opt(lr=1.0)
    s2 = CosineAnnealingWarmRestarts(opt2, T_0=2, T_mult=2)
    s2.load_state_dict(sd)
    s.step()
    s2.step()
    assert s2.get_last_lr() == s.get_last_lr()
    with pytest.raises(ValueError):
        CosineAnnealingWarmRestarts(opt, T_0=0)


def _cyclic_ref(t, base, peak, up, down, mode, gamma=1.0):
    total = up + down
    cycle = math.floor(1 + t / total)
    x = 1 + t / total - cycle
    r = up / total
    f = x / r if x <= r else (x - 1) / (r - 1)
    scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1), "exp_range": gamma**t}[mode]
    return base + (peak - base) * f * scale, f * scale


@pytest.mark.parametrize("mode, down", [("triangular", None), ("triangular2", 3), ("exp_range", 5)])
def test_cyclic_lr_and_momentum(mode, down):
    opt = _opt(lr=5.0, momentum=0.5)
    sched = CyclicLR(
        opt,
        base_lr=0.1,
        max_lr=1.0,
        step_size_up=4,
        step_size_down=down,
        mode=mode,
        gamma=0.97,
        base_momentum=0.8,
        max_momentum=0.95,
    )
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.95)
    moms = [opt.param_groups[0]["momentum"]]
    lrs = [sched.get_last_lr()[0]]
    for _ in range(25):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    d = 4 if down is None else down
    for t in range(26):
        lr, fs = _cyclic_ref(t, 0.1, 1.0, 4, d, mode, 0.97)
        assert lrs[t] == pytest.approx(lr, abs=1e-12), t
        assert moms[t] == pytest.approx(0.95 - 0.15 * fs, abs=1e-12), t


def test_cyclic_lr_with_adam_betas_and_custom_scale_fn():
    opt = _opt(Adam, lr=1.0, betas=(0.9, 0.99))
    sched = CyclicLR(opt, 0.0, 1.0, step_size_up=2, scale_fn=lambda x: 0.5, scale_mode="iterations")
    lrs = _run(opt, sched, 4)
    assert lrs == pytest.approx([0.0, 0.25, 0.5, 0.25, 0.0])
    assert opt.param_groups[0]["betas"] == pytest.approx((0.9, 0.99))  # back at max momentum
    with pytest.raises(ValueError, match="momentum"):
        CyclicLR(tl.optim.Adagrad([tl.zeros(1, requires_grad=True)]), 0.0, 1.0)
    with pytest.raises(ValueError, match="mode"):
        CyclicLR(_opt(lr=0.1, momentum=0.9), 0.0, 1.0, mode="zigzag")


def test_chained_scheduler_multiplies_effects():
    opt = _opt(lr=1.0)
    chained = ChainedScheduler([StepLR(opt, step_size=2, gamma=0.1), ExponentialLR(opt, gamma=0.5)])
    lrs = _run(opt, chained, 5)
    assert lrs == pytest.approx([0.1 ** (t // 2) * 0.5**t for t in range(6)])
    with pytest.raises(ValueError, match="another optimizer"):
        ChainedScheduler([StepLR(opt, 2), StepLR(_opt(lr=1.0), 2)])
