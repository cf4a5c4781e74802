"""Optimizers against numpy re-derivations of their update rules, step by step.

Each reference below is written from the published update rule (PyTorch's documented
formulation), in float64 numpy, independently of the implementation. Gradients are fed in
directly (``p.grad = ...``) so every step sees a known gradient; one test drives the optimizer
through real ``backward()`` calls as well.
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.optim import SGD, Adagrad, Adam, AdamW, Optimizer, OptimizerError, RMSprop

SHAPES = [(3, 4), (5,)]
STEPS = 6


def _make(rng, dtype=tl.float64):
    arrays = [rng.standard_normal(s) for s in SHAPES]
    return arrays, [tl.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]


def _grads(rng):
    return [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]


def _run(opt, params, grads):
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = tl.tensor(g, dtype=p.dtype)
        opt.step()


# --- numpy references -------------------------------------------------------------------------
def ref_sgd(
    w, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False
):
    w, buf = w.copy(), None
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
    return w


def ref_adam(
    w,
    grads,
    lr,
    betas=(0.9, 0.999),
    eps=1e-8,
    weight_decay=0.0,
    amsgrad=False,
    maximize=False,
    decoupled=False,
):
    b1, b2 = betas
    w = w.copy()
    m, v, vmax = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if decoupled:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vhat = (vmax if amsgrad else v) / (1 - b2**t)
        mhat = m / (1 - b1**t)
        w = w - lr * mhat / (np.sqrt(vhat) + eps)
    return w


def ref_rmsprop(
    w,
    grads,
    lr,
    alpha=0.99,
    eps=1e-8,
    weight_decay=0.0,
    momentum=0.0,
    centered=False,
    maximize=False,
):
    w = w.copy()
    v, gbar, buf = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * w
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            gbar = alpha * gbar + (1 - alpha) * g
            avg = np.sqrt(v - gbar * gbar) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            w = w - lr * buf
        else:
            w = w - lr * g / avg
    return w


def ref_adagrad(
    w,
    grads,
    lr,
    lr_decay=0.0,
    weight_decay=0.0,
    initial_accumulator_value=0.0,
    eps=1e-10,
    maximize=False,
):
    w = w.copy()
    s = np.full_like(w, initial_accumulator_value)
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        g = g + weight_decay * w
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        w = w - clr * g / (np.sqrt(s) + eps)
    return w


CASES = [
    (SGD, ref_sgd, dict(lr=0.1)),
    (SGD, ref_sgd, dict(lr=0.1, momentum=0.9)),
    (SGD, ref_sgd, dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1)),
    (SGD, ref_sgd, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (SGD, ref_sgd, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True)),
    (Adam, ref_adam, dict(lr=0.01)),
    (Adam, ref_adam, dict(lr=0.1, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    (Adam, ref_adam, dict(lr=0.1, amsgrad=True)),
    (Adam, ref_adam, dict(lr=0.1, amsgrad=True, weight_decay=0.05, maximize=True)),
    (
        AdamW,
        lambda w, g, **kw: ref_adam(w, g, decoupled=True, **{"weight_decay": 1e-2, **kw}),
        dict(lr=0.1),
    ),
    (
        AdamW,
        lambda w, g, **kw: ref_adam(w, g, decoupled=True, **kw),
        dict(lr=0.1, weight_decay=0.3, amsgrad=True),
    ),
    (RMSprop, ref_rmsprop, dict(lr=0.01)),
    (RMSprop, ref_rmsprop, dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    (RMSprop, ref_rmsprop, dict(lr=0.01, momentum=0.9, centered=True)),
    (RMSprop, ref_rmsprop, dict(lr=0.01, momentum=0.5, maximize=True)),
    (Adagrad, ref_adagrad, dict(lr=0.1)),
    (
        Adagrad,
        ref_adagrad,
        dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.3),
    ),
    (Adagrad, ref_adagrad, dict(lr=0.1, maximize=True, eps=1e-3)),
]


@pytest.mark.parametrize(
    "cls, kw",
    [
        (Adam, {}),
        (AdamW, {}),
        (Adagrad, {"lr_decay": 0.1}),
        (SGD, {}),
        (SGD, {"momentum": 0.9, "weight_decay": 0.1}),
    ],
)
def test_fused_update_runs_one_backend_call_per_parameter(cls, kw, monkeypatch):
    from torchlight.tensor.backend.numpy import NumpyBackend

    name = next(cap for opt, cap in FUSED.items() if issubclass(cls, opt)) + "_step"
    calls = []
    fused = getattr(NumpyBackend, name)
    monkeypatch.setattr(
        NumpyBackend, name, lambda self, *a, **k: calls.append(1) or fused(self, *a, **k)
    )
    rng = np.random.default_rng(3)
    _, params = _make(rng)
    _run(cls(params, lr=0.1, **kw), params, _grads(rng))
    assert len(calls) == STEPS * len(params)


FUSED = {Adam: "adam", Adagrad: "adagrad", SGD: "sgd"}  # optimizers with a fused update


@pytest.fixture(params=["fused", "composite"])
def update_path(request, monkeypatch):
    """Adam/AdamW, Adagrad and SGD run the backend's fused ``adam_step``/``adagrad_step``/
    ``sgd_step`` when it has the capability, else the composite ops: both must follow the
    reference."""
    if request.param == "composite":
        from torchlight.tensor.backend.numpy import NumpyBackend

        monkeypatch.setattr(
            NumpyBackend, "capabilities", NumpyBackend.capabilities - set(FUSED.values())
        )
    return request.param


@pytest.mark.parametrize(
    "cls, ref, kw",
    CASES,
    ids=lambda v: (
        getattr(v, "__name__", None)
        if not isinstance(v, dict)
        else "-".join(f"{k}={x}" for k, x in v.items())
    ),
)
def test_update_rule_matches_numpy(cls, ref, kw, update_path):
    if update_path == "composite" and not issubclass(cls, tuple(FUSED)):
        pytest.skip("only Adam, Adagrad and SGD have a fused path")
    rng = np.random.default_rng(0)
    arrays, params = _make(rng)
    grads = _grads(rng)
    opt = cls(params, **kw)
    _run(opt, params, grads)
    for i, (a, p) in enumerate(zip(arrays, params)):
        expected = ref(a, [g[i] for g in grads], **kw)
        np.testing.assert_allclose(p.to_numpy(), expected, rtol=1e-12, atol=1e-13)


def test_adam_step_counter_and_state_keys():
    rng = np.random.default_rng(1)
    _, params = _make(rng)
    opt = Adam(params, lr=0.1, amsgrad=True)
    _run(opt, params, _grads(rng))
    state = opt.state[params[0]]
    assert state["step"] == STEPS
    assert set(state) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert state["exp_avg"].shape == params[0].shape


def test_adamw_differs_from_adam_with_l2():
    rng = np.random.default_rng(2)
    arrays, p1 = _make(rng)
    p2 = [tl.tensor(a, dtype=tl.float64, requires_grad=True) for a in arrays]
    grads = _grads(rng)
    _run(Adam(p1, lr=0.1, weight_decay=0.5), p1, grads)
    _run(AdamW(p2, lr=0.1, weight_decay=0.5), p2, grads)
    for i, a in enumerate(arrays):
        gs = [g[i] for g in grads]
        np.testing.assert_allclose(
            p1[i].to_numpy(), ref_adam(a, gs, lr=0.1, weight_decay=0.5), rtol=1e-12
        )
        np.testing.assert_allclose(
            p2[i].to_numpy(), ref_adam(a, gs, lr=0.1, weight_decay=0.5, decoupled=True), rtol=1e-12
        )
        assert np.abs(p1[i].to_numpy() - p2[i].to_numpy()).max() > 1e-3


def test_per_group_lr_and_weight_decay():
    rng = np.random.default_rng(3)
    arrays, params = _make(rng)
    grads = _grads(rng)
    opt = SGD(
        [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.5, "weight_decay": 0.2}],
        lr=0.01,
        momentum=0.9,
    )
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[0]["weight_decay"] == 0.0
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9
    _run(opt, params, grads)
    np.testing.assert_allclose(
        params[0].to_numpy(),
        ref_sgd(arrays[0], [g[0] for g in grads], lr=0.01, momentum=0.9),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        params[1].to_numpy(),
        ref_sgd(arrays[1], [g[1] for g in grads], lr=0.5, momentum=0.9, weight_decay=0.2),
        rtol=1e-12,
    )


def test_add_param_group_later_and_lr_change_between_steps():
    rng = np.random.default_rng(4)
    arrays, params = _make(rng)
    opt = Adam([params[0]], lr=0.1)
    opt.add_param_group({"params": params[1], "lr": 0.01})
    assert len(opt.param_groups) == 2 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    g = [rng.standard_normal(s) for s in SHAPES]
    for p, gi in zip(params, g):
        p.grad = tl.tensor(gi, dtype=tl.float64)
    opt.step()
    # the first Adam step moves every coordinate by ~lr (sign of the gradient)
    np.testing.assert_allclose(np.abs(params[1].to_numpy() - arrays[1]), 0.01, rtol=1e-5)
    with pytest.raises(OptimizerError, match="more than one parameter group"):
        opt.add_param_group({"params": [params[0]]})


def test_real_backward_and_closure():
    rng = np.random.default_rng(5)
    c = rng.uniform(0.5, 2.0, size=(4,))
    w0 = rng.standard_normal(4)
    w = tl.tensor(w0, dtype=tl.float64, requires_grad=True)
    ct = tl.tensor(c, dtype=tl.float64)
    opt = SGD([w], lr=0.1, momentum=0.9, nesterov=True)

    def closure():
        opt.zero_grad()
        loss = (ct * w * w).sum() * 0.5
        loss.backward()
        return loss

    ref, buf = w0.copy(), None
    for _ in range(5):
        loss = opt.step(closure)
        g = c * ref
        assert loss.item() == pytest.approx(0.5 * np.sum(c * ref * ref), rel=1e-12)
        buf = g.copy() if buf is None else 0.9 * buf + g
        ref = ref - 0.1 * (g + 0.9 * buf)
        np.testing.assert_allclose(w.to_numpy(), ref, rtol=1e-12)
    assert w.requires_grad and w.is_leaf


def test_float32_params_keep_float32_state():
    rng = np.random.default_rng(6)
    arrays, params = _make(rng, dtype=tl.float32)
    grads = _grads(rng)
    opt = Adam(params, lr=0.01)
    _run(opt, params, grads)
    assert params[0].dtype is tl.float32 and opt.state[params[0]]["exp_avg"].dtype is tl.float32
    expected = ref_adam(arrays[0], [g[0] for g in grads], lr=0.01)
    np.testing.assert_allclose(params[0].to_numpy(), expected, rtol=1e-4, atol=1e-5)


def test_params_without_grad_are_skipped():
    rng = np.random.default_rng(7)
    arrays, params = _make(rng)
    opt = Adam(params, lr=0.1)
    params[0].grad = tl.ones(params[0].shape, dtype=tl.float64)
    opt.step()
    np.testing.assert_array_equal(params[1].to_numpy(), arrays[1])
    assert params[1] not in opt.state and params[0] in opt.state


def test_zero_grad():
    p = tl.randn(3, dtype=tl.float64, requires_grad=True)
    opt = SGD([p], lr=0.1)
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.to_numpy(), np.zeros(3))
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # no grads at all: fine


def test_parameter_validation():
    p = tl.randn(3, requires_grad=True)
    with pytest.raises(OptimizerError, match="empty parameter list"):
        SGD([], lr=0.1)
    with pytest.raises(OptimizerError, match="single Tensor"):
        SGD(p, lr=0.1)
    with pytest.raises(OptimizerError, match="ordered"):
        SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(OptimizerError, match="non-leaf"):
        SGD([p * 2], lr=0.1)
    with pytest.raises(OptimizerError, match="only optimize Tensors"):
        SGD([p, 3.0], lr=0.1)
    with pytest.raises(OptimizerError, match="more than once"):
        SGD([p, p], lr=0.1)
    with pytest.raises(OptimizerError, match="Nesterov"):
        SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(OptimizerError, match="learning rate"):
        Adam([p], lr=-1.0)
    with pytest.raises(OptimizerError, match="beta"):
        Adam([p], betas=(1.0, 0.999))
    with pytest.raises(OptimizerError, match="weight_decay"):
        RMSprop([p], weight_decay=-0.1)
    assert issubclass(OptimizerError, tl.TorchlightError) and issubclass(OptimizerError, ValueError)


def test_optimizer_is_an_abstract_base():
    p = tl.randn(2, requires_grad=True)
    p.grad = tl.ones(2)
    opt = Optimizer([p], dict(lr=0.1))
    with pytest.raises(NotImplementedError):
        opt.step()
    assert "Parameter Group 0" in repr(SGD([p], lr=0.1))


# --- state dicts -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls, kw",
    [
        (SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
        (Adam, dict(lr=0.1, amsgrad=True)),
        (AdamW, dict(lr=0.1, weight_decay=0.1)),
        (RMSprop, dict(lr=0.01, momentum=0.9, centered=True)),
        (Adagrad, dict(lr=0.1, lr_decay=0.01)),
    ],
)
def test_state_dict_round_trip_resumes_exactly(cls, kw):
    rng = np.random.default_rng(8)
    arrays, pa = _make(rng)
    grads = _grads(rng) + _grads(rng)
    a = cls([{"params": [pa[0]]}, {"params": [pa[1]], "lr": 0.02}], **kw)
    _run(a, pa, grads[:STEPS])

    sd = a.state_dict()
    assert sorted(sd["state"]) == [0, 1]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.02

    pb = [tl.tensor(p.to_numpy(), dtype=tl.float64, requires_grad=True) for p in pa]
    b = cls([{"params": [pb[0]]}, {"params": [pb[1]]}], **kw)
    b.load_state_dict(sd)
    assert b.param_groups[1]["lr"] == 0.02 and b.param_groups[0]["params"][0] is pb[0]
    # loaded state is a copy: stepping b does not touch a's buffers
    _run(b, pb, grads[STEPS:])
    _run(a, pa, grads[STEPS:])
    for x, y in zip(pa, pb):
        np.testing.assert_array_equal(x.to_numpy(), y.to_numpy())


def test_load_state_dict_errors():
    rng = np.random.default_rng(9)
    _, params = _make(rng)
    opt = Adam(params, lr=0.1)
    _run(opt, params, _grads(rng)[:1])
    sd = opt.state_dict()
    with pytest.raises(OptimizerError, match="2 parameters, the optimizer's group has 1"):
        Adam([params[0]], lr=0.1).load_state_dict(sd)
    with pytest.raises(OptimizerError, match="parameter groups"):
        Adam([{"params": [params[0]]}, {"params": [params[1]]}]).load_state_dict(sd)
    other = [
        tl.zeros(2, 2, dtype=tl.float64, requires_grad=True),
        tl.zeros(5, dtype=tl.float64, requires_grad=True),
    ]
    with pytest.raises(OptimizerError, match=r"shape \(3, 4\).*shape \(2, 2\)"):
        Adam(other).load_state_dict(sd)
    bad = {"state": {7: {"step": 1}}, "param_groups": sd["param_groups"]}
    with pytest.raises(OptimizerError, match="index 7"):
        Adam(params).load_state_dict(bad)
    with pytest.raises(OptimizerError, match="'state' and 'param_groups'"):
        Adam(params).load_state_dict({"state": {}})


@pytest.mark.oracle
def test_matches_pytorch_when_available():
    """Cross-check against the real thing (skipped unless PyTorch is installed)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    grads = _grads(rng)
    pairs = [
        (SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
        (SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
        (Adam, torch.optim.Adam, dict(lr=0.1, weight_decay=0.1, amsgrad=True)),
        (AdamW, torch.optim.AdamW, dict(lr=0.1, betas=(0.8, 0.9))),
        (
            RMSprop,
            torch.optim.RMSprop,
            dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1),
        ),
        (Adagrad, torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.5)),
    ]
    for ours, theirs, kw in pairs:
        tp = [tl.tensor(a, dtype=tl.float64, requires_grad=True) for a in arrays]
        hp = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
        o, h = ours(tp, **kw), theirs(hp, foreach=False, **kw)
        for gs in grads:
            for p, q, g in zip(tp, hp, gs):
                p.grad = tl.tensor(g, dtype=tl.float64)
                q.grad = torch.tensor(g, dtype=torch.float64)
            o.step()
            h.step()
        for p, q in zip(tp, hp):
            np.testing.assert_allclose(
                p.to_numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=ours.__name__
            )


def test_adam_takes_the_fused_kernel_for_contiguous_params(monkeypatch):
    """One backend call per parameter when the layout allows; AMSGrad and a non-contiguous grad
    fall back to the composite ops."""
    from torchlight.tensor.backend.numpy import NumpyBackend

    calls = []
    real = NumpyBackend.adam_step
    monkeypatch.setattr(
        NumpyBackend, "adam_step", lambda self, *a, **k: calls.append(1) or real(self, *a, **k)
    )
    w = tl.randn(4, 3, requires_grad=True)
    b = tl.randn(3, requires_grad=True)
    opt = AdamW([w, b], lr=0.1)
    w.grad, b.grad = tl.ones(4, 3), tl.ones(3)
    opt.step()
    assert len(calls) == 2
    w.grad = tl.ones(3, 4).t()  # transposed: not contiguous
    opt.step()
    assert len(calls) == 3  # only b's update was fused
    Adam([w], lr=0.1, amsgrad=True).step()
    assert len(calls) == 3


def test_sgd_fused_and_composite_steps_share_the_momentum_buffer(monkeypatch):
    """A parameter whose gradient is sometimes not contiguous takes the composite ops on those
    steps and the fused kernel on the others: one momentum buffer runs through both, and the
    result follows the reference; a fused first step stores the buffer in the state."""
    from torchlight.tensor.backend.numpy import NumpyBackend

    calls = []
    real = NumpyBackend.sgd_step
    monkeypatch.setattr(
        NumpyBackend, "sgd_step", lambda self, *a, **k: calls.append(1) or real(self, *a, **k)
    )
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(4)]
    w = tl.tensor(w0, requires_grad=True)
    kw = dict(lr=0.05, momentum=0.9, weight_decay=0.1, nesterov=True)
    opt = SGD([w], **kw)
    for k, g in enumerate(grads):
        # steps 1 and 3 (0-based) hand over a transposed copy: a non-contiguous gradient
        w.grad = tl.tensor(g.T.copy()).t() if k % 2 else tl.tensor(g)
        opt.step()
        if k == 0:
            assert opt.state[w]["momentum_buffer"].shape == (4, 3)
    assert len(calls) == 2
    np.testing.assert_allclose(w.to_numpy(), ref_sgd(w0, grads, **kw), rtol=1e-12, atol=1e-14)
