"""Resuming from a checkpoint is exact: 20 steps + save + load into fresh objects + 20 steps
gives bit-for-bit the weights of an uninterrupted 40-step run."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.optim import SGD, Adagrad, AdamW, RMSprop
from torchlight.optim import lr_scheduler as L

IN, HIDDEN, OUT, BATCH = 5, 16, 3, 8


def _batch(step, dtype):
    """The data of step ``step``: the same whichever run (or process) asks for it."""
    rng = np.random.default_rng(1000 + step)
    x = rng.standard_normal((BATCH, IN))
    y = np.sin(x[:, :OUT]) + 0.1 * rng.standard_normal((BATCH, OUT))
    return tl.tensor(x, dtype=dtype), tl.tensor(y, dtype=dtype)


def _init_params(seed, dtype):
    rng = np.random.default_rng(seed)
    shapes = {
        "fc1.weight": (HIDDEN, IN),
        "fc1.bias": (HIDDEN,),
        "fc2.weight": (OUT, HIDDEN),
        "fc2.bias": (OUT,),
    }
    return {
        k: tl.tensor(rng.standard_normal(s) * 0.5, dtype=dtype, requires_grad=True)
        for k, s in shapes.items()
    }


def _forward(p, x):
    h = (x @ p["fc1.weight"].T + p["fc1.bias"]).tanh()
    return h @ p["fc2.weight"].T + p["fc2.bias"]


def _setup(kind, params):
    ps = list(params)
    if kind == "adamw+warmup-cosine":
        opt = AdamW(
            [{"params": ps[:2]}, {"params": ps[2:], "lr": 3e-3, "weight_decay": 0.0}],
            lr=1e-2,
            amsgrad=True,
        )
        sched = L.SequentialLR(
            opt, [L.LinearLR(opt, 0.1, total_iters=8), L.CosineAnnealingLR(opt, 32, 1e-4)], [8]
        )
    elif kind == "sgd-nesterov+onecycle":
        opt = SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
        sched = L.OneCycleLR(opt, max_lr=0.2, total_steps=40)
    elif kind == "rmsprop+plateau":
        opt = RMSprop(ps, lr=1e-2, momentum=0.5, centered=True)
        sched = L.ReduceLROnPlateau(opt, factor=0.5, patience=1, threshold=0.05)
    elif kind == "adagrad+multistep":
        opt = Adagrad(ps, lr=0.1, lr_decay=0.01)
        sched = L.MultiStepLR(opt, [10, 25], 0.3)
    else:
        raise AssertionError(kind)
    return opt, sched


def _train(forward, opt, sched, start, stop, dtype):
    for step in range(start, stop):
        x, y = _batch(step, dtype)
        loss = ((forward(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if isinstance(sched, L.ReduceLROnPlateau):
            sched.step(loss.item())
        else:
            sched.step()


KINDS = ["adamw+warmup-cosine", "sgd-nesterov+onecycle", "rmsprop+plateau", "adagrad+multistep"]


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kind", KINDS)
def test_resume_is_bit_exact_raw_tensors(kind, dtype, tmp_path):
    # the uninterrupted run
    ref = _init_params(0, dtype)
    opt, sched = _setup(kind, ref.values())
    _train(lambda x: _forward(ref, x), opt, sched, 0, 40, dtype)

    # 20 steps, then a checkpoint
    p = _init_params(0, dtype)
    opt, sched = _setup(kind, p.values())
    _train(lambda x: _forward(p, x), opt, sched, 0, 20, dtype)
    tl.save(
        {
            "model": {k: v.detach() for k, v in p.items()},
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "step": 20,
        },
        tmp_path / "ckpt",
    )

    # fresh objects (different initial weights), restored from the file, 20 more steps
    q = _init_params(123, dtype)
    opt, sched = _setup(kind, q.values())
    ckpt = tl.load(tmp_path / "ckpt")
    with tl.no_grad():
        for k, v in ckpt["model"].items():
            q[k].copy_(v)
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    _train(lambda x: _forward(q, x), opt, sched, ckpt["step"], 40, dtype)

    for k in ref:
        assert q[k].dtype is dtype
        np.testing.assert_array_equal(q[k].to_numpy(), ref[k].to_numpy(), err_msg=k)


def test_resume_is_bit_exact_with_nn_modules(tmp_path):
    def model(seed):
        tl.manual_seed(seed)
        return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT))

    def run(m, opt, sched, start, stop):
        _train(m, opt, sched, start, stop, tl.float32)

    ref = model(0)
    opt, sched = _setup("adamw+warmup-cosine", ref.parameters())
    run(ref, opt, sched, 0, 40)

    m = model(0)
    opt, sched = _setup("adamw+warmup-cosine", m.parameters())
    run(m, opt, sched, 0, 20)
    tl.save(
        {
            "model": m.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "step": 20,
        },
        tmp_path / "ckpt",
    )

    m2 = model(7)
    opt2, sched2 = _setup("adamw+warmup-cosine", m2.parameters())
    ckpt = tl.load(tmp_path / "ckpt")
    m2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optimizer"])
    sched2.load_state_dict(ckpt["scheduler"])
    run(m2, opt2, sched2, ckpt["step"], 40)

    for (k, a), (_, b) in zip(ref.state_dict().items(), m2.state_dict().items()):
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=k)
