"""swa_utils: AveragedModel (mean and EMA), SWALR's schedule and update_bn against numpy."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.optim.swa_utils import (
    SWALR,
    AveragedModel,
    get_ema_avg_fn,
    get_ema_multi_avg_fn,
    update_bn,
)


def A(t):
    return t.detach().numpy()


def _snapshots(model, rng, k):
    snaps = []
    for _ in range(k):
        with tl.no_grad():
            for p in model.parameters():
                p.copy_(tl.tensor(rng.standard_normal(p.shape), dtype=p.dtype))
        snaps.append([A(p).copy() for p in model.parameters()])
        yield snaps[-1]


def test_averaged_model_running_mean_and_ema():
    rng = np.random.default_rng(0)
    model = nn.Linear(3, 2).double()
    swa = AveragedModel(model)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    ema1 = AveragedModel(model, avg_fn=get_ema_avg_fn(0.9))
    seen, want_ema = [], None
    for snap in _snapshots(model, rng, 5):
        for m in (swa, ema, ema1):
            m.update_parameters(model)
        seen.append(snap)
        want_ema = (
            [s.copy() for s in snap]
            if want_ema is None
            else [0.9 * e + 0.1 * s for e, s in zip(want_ema, snap)]
        )
    for i, p in enumerate(swa.module.parameters()):
        np.testing.assert_allclose(A(p), np.mean([s[i] for s in seen], 0), rtol=1e-12)
    for m in (ema, ema1):
        for i, p in enumerate(m.module.parameters()):
            np.testing.assert_allclose(A(p), want_ema[i], rtol=1e-12)
    assert swa.n_averaged.item() == 5 and "n_averaged" in swa.state_dict()
    x = tl.randn(4, 3, dtype=tl.float64)
    np.testing.assert_allclose(A(swa(x)), A(x) @ A(swa.module.weight).T + A(swa.module.bias))
    with pytest.raises(ValueError):
        AveragedModel(model, avg_fn=get_ema_avg_fn(), multi_avg_fn=get_ema_multi_avg_fn())


def test_averaged_model_buffers():
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).double()
    copy_bufs, avg_bufs = AveragedModel(net), AveragedModel(net, use_buffers=True)
    for k in range(3):
        with tl.no_grad():
            net[1].running_mean.copy_(tl.full((2,), float(k), dtype=tl.float64))
        copy_bufs.update_parameters(net)
        avg_bufs.update_parameters(net)
    assert A(copy_bufs.module[1].running_mean).tolist() == [2.0, 2.0]  # copied from the model
    assert A(avg_bufs.module[1].running_mean).tolist() == [1.0, 1.0]  # averaged
    assert avg_bufs.module[1].num_batches_tracked.dtype is tl.int64


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_schedule(strategy):
    opt = tl.optim.SGD([tl.zeros(1, requires_grad=True)], lr=0.8)
    sched = SWALR(opt, swa_lr=0.05, anneal_epochs=5, anneal_strategy=strategy)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(8):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    anneal = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    want = [0.05 * anneal(min(1, k / 5)) + 0.8 * (1 - anneal(min(1, k / 5))) for k in range(9)]
    assert lrs == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError):
        SWALR(opt, 0.1, anneal_strategy="step")


def test_update_bn_computes_the_data_statistics():
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((8, 3)) * 2 + 1 for _ in range(4)]
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3, momentum=0.3)).double()
    with tl.no_grad():
        net[0].weight.copy_(tl.eye(3, dtype=tl.float64))
        net[0].bias.zero_()
    net.eval()
    update_bn([(tl.tensor(b), 0) for b in batches], net)
    np.testing.assert_allclose(
        A(net[1].running_mean), np.mean([b.mean(0) for b in batches], 0), rtol=1e-10
    )
    np.testing.assert_allclose(
        A(net[1].running_var), np.mean([b.var(0, ddof=1) for b in batches], 0), rtol=1e-10
    )
    assert net[1].momentum == 0.3 and not net.training
