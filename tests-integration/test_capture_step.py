"""``tl.jit.capture_step`` trains real models exactly like eager execution, and refuses what it
cannot replay.

Each case builds two copies of a model from one seed, trains one eagerly and one through a
captured step on the same 50 batches, and compares every step's loss and the final parameters
(oracle: the eager run). Models: an MLP with SGD-momentum, Adam, AdamW and Adagrad with a
decaying rate; the mini-GPT of ``projects/mini-gpt`` at a tiny size with AdamW parameter groups,
without and with dropout;
a GRU and an LSTM classifier; each on ``cpu`` (numpy) and on ``numba`` when that backend is
installed.
"""

from pathlib import Path

import numpy as np
import pytest

import torchlight as tl

nn = pytest.importorskip("torchlight.nn")
ROOT = Path(__file__).resolve().parents[1]
STEPS = 50
TOL = 1e-6


def _devices():
    devs = ["cpu"]
    try:
        import torchlight.backends.numba.backend  # noqa: F401

        devs.append("numba")
    except ImportError:
        pass
    return devs


DEVICES = _devices()
MODES = [(d, False) for d in DEVICES] + [(d, True) for d in DEVICES if d == "numba"]
"""(device, fuse): numba also replays with its elementwise compiler."""


def _train_step(model, opt, loss_of):
    def step(x, y):
        opt.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        opt.step()
        return loss

    return step


def _compare(build, make_opt, loss_of, batches, device, fuse=False):
    """Losses of every step and final parameters, eager vs captured, must agree to TOL."""
    runs = []
    for captured in (False, True):
        tl.manual_seed(0)
        model = build().to(device)
        opt = make_opt(model)
        step = _train_step(model, opt, loss_of)
        if captured:
            step = tl.jit.capture_step(step, fuse=fuse)
        losses = [step(x.to(device), y.to(device)).item() for x, y in batches]
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()], step))
    (eager, pe, _), (capt, pc, step) = runs
    assert step.state == "captured" and step.n_calls > 0
    np.testing.assert_allclose(capt, eager, rtol=TOL, atol=TOL)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
    assert eager[-1] < eager[0]  # the runs actually trained
    return step


def _mlp_batches(n_in=20, n_out=5, batch=16):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n_in, n_out))
    out = []
    for _ in range(STEPS):
        x = rng.standard_normal((batch, n_in)).astype(np.float32)
        out.append((tl.tensor(x), tl.tensor((x @ w).argmax(1))))
    return out


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))


def _ce(model, x, y):
    return nn.functional.cross_entropy(model(x), y)


OPTIMIZERS = {
    "sgd_momentum": lambda m: tl.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
    "nesterov_wd": lambda m: tl.optim.SGD(
        m.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3
    ),
    "adam": lambda m: tl.optim.Adam(m.parameters(), lr=1e-2),
    "adamw": lambda m: tl.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1),
    # the decayed rate follows the live step count into the fused adagrad kernel
    "adagrad_lr_decay": lambda m: tl.optim.Adagrad(
        m.parameters(), lr=5e-2, lr_decay=0.05, weight_decay=1e-3
    ),
}


@pytest.mark.parametrize("device,fuse", MODES)
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_mlp_captured_matches_eager(device, fuse, opt):
    _compare(_mlp, OPTIMIZERS[opt], _ce, _mlp_batches(), device, fuse)


def test_adam_step_count_keeps_counting_through_replays():
    tl.manual_seed(0)
    model = _mlp()
    opt = tl.optim.Adam(model.parameters(), lr=1e-2)
    step = tl.jit.capture_step(_train_step(model, opt, _ce))
    for x, y in _mlp_batches()[:10]:
        step(x, y)
    assert all(s["step"] == 10 for s in opt.state.values())
    assert opt._opt_step_count == 10


@pytest.mark.parametrize("device,fuse", MODES)
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_mini_gpt_captured_matches_eager(project_modules, device, fuse, dropout):
    """With dropout, each replay draws new masks from the seeded stream, as the eager step."""
    with project_modules(ROOT / "projects" / "mini-gpt", ("model",)) as project:
        gpt = project.model
        cfg = gpt.GPTConfig(
            vocab_size=17, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=dropout
        )
        rng = np.random.default_rng(0)
        start = rng.integers(0, 17, size=(STEPS, 4, 1))
        data = (start + rng.integers(1, 3, size=(STEPS, 4, 1)) * np.arange(9)) % 17
        batches = [(tl.tensor(d[:, :-1]), tl.tensor(d[:, 1:])) for d in data]
        _compare(
            lambda: gpt.GPT(cfg),
            lambda m: tl.optim.AdamW(m.param_groups(0.1), lr=3e-3),
            lambda m, x, y: m(x, y)[1],
            batches,
            device,
            fuse,
        )


class _Recurrent(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(nn, kind)(6, 12, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_recurrent_captured_matches_eager(device, kind):
    rng = np.random.default_rng(1)
    batches = []
    for _ in range(STEPS):
        x = rng.standard_normal((8, 5, 6)).astype(np.float32)
        batches.append((tl.tensor(x), tl.tensor((x.sum((1, 2)) > 0).astype(np.int64) + 1)))
    _compare(
        lambda: _Recurrent(kind),
        lambda m: tl.optim.Adam(m.parameters(), lr=1e-2),
        _ce,
        batches,
        device,
    )


# --- refusals ----------------------------------------------------------------------------------
def _captured_mlp(opt_name="sgd_momentum"):
    tl.manual_seed(0)
    model = _mlp()
    opt = OPTIMIZERS[opt_name](model)
    step = tl.jit.capture_step(_train_step(model, opt, _ce))
    batches = _mlp_batches()
    for x, y in batches[:3]:
        step(x, y)
    assert step.state == "captured"
    return model, opt, step, batches


def test_new_batch_size_raises_and_reset_recaptures():
    model, opt, step, batches = _captured_mlp()
    x, y = batches[4]
    with pytest.raises(tl.jit.TraceError, match=r"shape \(16, 20\).*got shape \(8, 20\)"):
        step(x[:8], y[:8])
    step.reset()
    for _ in range(3):
        step(x[:8], y[:8])
    assert step.state == "captured"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opt", ["adam", "adamw", "sgd_momentum", "nesterov_wd"])
def test_learning_rate_schedule_is_followed_by_fused_updates(device, opt):
    """The fused Adam and SGD updates take lr as a live number: a schedule set every step (the
    mini-GPT training loop's warmup and cosine) and a StepLR scheduler both reach the replays."""
    batches = _mlp_batches()
    runs = []
    for captured in (False, True):
        tl.manual_seed(0)
        model = _mlp().to(device)
        opt_ = OPTIMIZERS[opt](model)
        sched = tl.optim.lr_scheduler.StepLR(opt_, step_size=7, gamma=0.5)
        step = _train_step(model, opt_, _ce)
        if captured:
            step = tl.jit.capture_step(step)
        losses = []
        for i, (x, y) in enumerate(batches):
            for group in opt_.param_groups:
                group["lr"] = group["lr"] * (1.0 + 0.5 * np.cos(i))  # changes every step
            losses.append(step(x.to(device), y.to(device)).item())
            sched.step()
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
    assert step.state == "captured"
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=TOL, atol=TOL)
    for a, b in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


def test_learning_rate_change_is_not_ignored_by_composite_sgd(monkeypatch):
    """Without the fused update (a backend lacking the ``sgd`` capability) SGD scales by lr in a
    host-built constant: a new lr stops the replay instead of being ignored."""
    from torchlight.tensor.backend.numpy import NumpyBackend

    monkeypatch.setattr(NumpyBackend, "capabilities", NumpyBackend.capabilities - {"sgd"})
    model, opt, step, batches = _captured_mlp("sgd_momentum")
    tl.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5).step()
    with pytest.raises(tl.jit.TraceError, match=r"param_groups\[0\]\['lr'\]"):
        step(*batches[5])


def test_other_setting_change_is_not_ignored():
    model, opt, step, batches = _captured_mlp("adam")
    opt.param_groups[0]["betas"] = (0.8, 0.99)
    with pytest.raises(tl.jit.TraceError, match="Adam's hyper-parameters changed"):
        step(*batches[5])


def test_item_inside_the_step_is_refused():
    tl.manual_seed(0)
    model = _mlp()
    opt = tl.optim.SGD(model.parameters(), lr=0.1)
    seen = []

    def step(x, y):
        opt.zero_grad()
        loss = _ce(model, x, y)
        seen.append(loss.item())
        loss.backward()
        opt.step()
        return loss

    captured = tl.jit.capture_step(step)
    x, y = _mlp_batches()[0]
    captured(x, y)  # warm-up runs eagerly
    with pytest.raises(tl.jit.TraceError, match=r"\.item\(\)"):
        captured(x, y)


def test_python_control_flow_that_changes_is_refused():
    tl.manual_seed(0)
    model = _mlp()
    opt = tl.optim.SGD(model.parameters(), lr=0.1)
    calls = [0]

    def step(x, y):
        calls[0] += 1
        opt.zero_grad()
        loss = _ce(model, x, y)
        if calls[0] % 2:  # a branch the capture cannot see
            loss = loss * 2
        loss.backward()
        opt.step()
        return loss

    captured = tl.jit.capture_step(step)
    x, y = _mlp_batches()[0]
    captured(x, y)
    captured(x, y)
    with pytest.raises(tl.jit.TraceError, match="control flow changed|changed between steps"):
        captured(x, y)


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: tl.optim.NAdam(p, lr=1e-2),
        lambda p: tl.optim.Adam(p, lr=1e-2, amsgrad=True),
    ],
    ids=["nadam", "amsgrad"],
)
def test_optimizer_with_host_step_arithmetic_is_refused(make_opt):
    """Updates that turn the step count into host-built constants cannot follow the step."""
    tl.manual_seed(0)
    model = _mlp()
    step = tl.jit.capture_step(_train_step(model, make_opt(model.parameters()), _ce))
    batches = _mlp_batches()
    step(*batches[0])
    step(*batches[1])
    with pytest.raises(tl.jit.TraceError, match="Python constant changed between steps"):
        step(*batches[2])


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: tl.optim.RMSprop(p, lr=1e-2, momentum=0.5),
        lambda p: tl.optim.Adagrad(p, lr=1e-2),
        lambda p: tl.optim.Adadelta(p),
    ],
    ids=["rmsprop", "adagrad", "adadelta"],
)
def test_other_optimizers_captured_match_eager(make_opt):
    _compare(_mlp, lambda m: make_opt(m.parameters()), _ce, _mlp_batches(), "cpu")


def test_replaced_parameter_memory_is_not_ignored():
    model, opt, step, batches = _captured_mlp()
    w = model[0].weight
    w.data = w.detach().clone()  # new memory: the capture's kernels would update the old one
    with pytest.raises(tl.jit.TraceError, match="memory of SGD's parameters"):
        step(*batches[5])


def _token_batches(num_ids=50, batch=8, length=12):
    rng = np.random.default_rng(2)
    out = []
    for _ in range(STEPS):
        lengths = rng.integers(3, length + 1, batch)
        ids = rng.integers(1, num_ids, (batch, length))
        ids[np.arange(length)[None, :] >= lengths[:, None]] = 0  # padding
        label = (ids % 2).sum(1) > lengths / 2
        out.append(((tl.tensor(ids), tl.tensor(lengths)), tl.tensor(label.astype(np.int64))))
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["mean", "cnn"])
def test_sentiment_classifier_captured_matches_eager(project_modules, device, kind):
    """projects/sentiment-classifier's mean-pool and TextCNN models (embedding with padding,
    masks, conv1d, max over positions), dropout 0.3 (new masks at every replay), Adam."""
    with project_modules(ROOT / "projects" / "sentiment-classifier", ("model",)) as project:
        cls = project.model.MODELS[kind]
        batches = []
        for (ids, lengths), y in _token_batches():
            batches.append((ids, lengths, y))
        runs = []
        for captured in (False, True):
            tl.manual_seed(0)
            model = cls(50, dropout=0.3).to(device)
            opt = tl.optim.Adam(model.parameters(), lr=1e-2)

            def step(ids, lengths, y, model=model, opt=opt):
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(ids, lengths), y)
                loss.backward()
                opt.step()
                return loss

            if captured:
                step = tl.jit.capture_step(step)
            losses = [step(*(t.to(device) for t in b)).item() for b in batches]
            runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
        assert step.state == "captured"
        np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=TOL, atol=TOL)
        for a, b in zip(runs[1][1], runs[0][1]):
            np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


def test_step_that_builds_its_batch_from_host_data_is_refused():
    """A step that makes its tensors from numpy inside (as the translation project's loss does)
    cannot be replayed on new data: the capture says so and how to fix it."""
    tl.manual_seed(0)
    model = _mlp()
    opt = tl.optim.SGD(model.parameters(), lr=0.1)
    batches = iter([(x.numpy(), y.numpy()) for x, y in _mlp_batches()[:3]])

    def step():
        x, y = next(batches)
        opt.zero_grad()
        loss = _ce(model, tl.tensor(x), tl.tensor(y))
        loss.backward()
        opt.step()
        return loss

    captured = tl.jit.capture_step(step, warmup=0)
    captured()
    with pytest.raises(tl.jit.TraceError, match="Pass it as an argument of the step"):
        captured()


def _mlp_eager_and_captured(batches, device, on_mismatch):
    """An MLP trained with Adam on ``batches`` eagerly and through a captured step: every
    step's loss and the final parameters must agree to TOL. Returns the captured step."""
    runs = []
    for captured in (False, True):
        tl.manual_seed(0)
        model = _mlp().to(device)
        opt = OPTIMIZERS["adam"](model)
        step = _train_step(model, opt, _ce)
        if captured:
            step = tl.jit.capture_step(step, on_mismatch=on_mismatch)
        losses = [step(x.to(device), y.to(device)).item() for x, y in batches]
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=TOL, atol=TOL)
    for a, b in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
    return step


@pytest.mark.parametrize("device", DEVICES)
def test_on_mismatch_eager_runs_odd_batches_eagerly(device):
    """Full batches replay, the short last batch of each epoch runs eagerly: the run still
    matches eager training step for step."""
    full = _mlp_batches()[:12]
    batches = []
    for epoch in range(3):
        batches += full[epoch * 4 : epoch * 4 + 4]
        x, y = full[epoch * 4]
        batches.append((x[:5], y[:5]))  # the epoch's last, smaller batch
    assert _mlp_eager_and_captured(batches, device, "eager").state == "captured"


@pytest.mark.parametrize("device", DEVICES)
def test_on_mismatch_capture_keeps_one_capture_per_batch_size(device):
    """Batches of three sizes in turn, each size captured on its own and replayed: the run
    matches eager training step for step (Adam's state shared by every capture)."""
    full = _mlp_batches()[:24]
    batches = [(x[: 16 - 5 * (i % 3)], y[: 16 - 5 * (i % 3)]) for i, (x, y) in enumerate(full)]
    assert _mlp_eager_and_captured(batches, device, "capture").n_captures == 3
