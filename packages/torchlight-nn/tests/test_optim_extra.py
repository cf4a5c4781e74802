"""Adadelta, Adamax, NAdam, RAdam and LBFGS against numpy re-derivations of PyTorch's documented
algorithms (the pseudocode on each optimizer's documentation page), step by step in float64."""

import math

import numpy as np
import pytest

import torchlight as tl
from torchlight.optim import LBFGS, Adadelta, Adamax, NAdam, OptimizerError, RAdam

SHAPES = [(3, 4), (5,)]
STEPS = 7


def ref_adadelta(w, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    w, v, u = w.copy(), np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        g = (-g if maximize else g) + weight_decay * w
        v = rho * v + (1 - rho) * g * g
        dx = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * dx * dx
        w = w - lr * dx
    return w


def ref_adamax(w, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    b1, b2 = betas
    w, m, u = w.copy(), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        g = (-g if maximize else g) + weight_decay * w
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        w = w - lr * m / ((1 - b1**t) * u)
    return w


def ref_nadam(
    w,
    grads,
    lr=2e-3,
    betas=(0.9, 0.999),
    eps=1e-8,
    weight_decay=0.0,
    momentum_decay=4e-3,
    decoupled_weight_decay=False,
    maximize=False,
):
    b1, b2 = betas
    w, m, v = w.copy(), np.zeros_like(w), np.zeros_like(w)
    mus = [None] + [b1 * (1 - 0.5 * 0.96 ** (i * momentum_decay)) for i in range(1, STEPS + 3)]
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if decoupled_weight_decay:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        prod_t = np.prod(mus[1 : t + 1])
        prod_t1 = np.prod(mus[1 : t + 2])
        mhat = mus[t + 1] * m / (1 - prod_t1) + (1 - mus[t]) * g / (1 - prod_t)
        vhat = v / (1 - b2**t)
        w = w - lr * mhat / (np.sqrt(vhat) + eps)
    return w


def ref_radam(
    w,
    grads,
    lr=1e-3,
    betas=(0.9, 0.999),
    eps=1e-8,
    weight_decay=0.0,
    decoupled_weight_decay=False,
    maximize=False,
):
    b1, b2 = betas
    w, m, v = w.copy(), np.zeros_like(w), np.zeros_like(w)
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if decoupled_weight_decay:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1**t)
        rho_t = rho_inf - 2 * t * b2**t / (1 - b2**t)
        if rho_t > 5:
            lt = np.sqrt(1 - b2**t) / (np.sqrt(v) + eps)
            rt = np.sqrt(
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            )
            w = w - lr * mhat * rt * lt
        else:
            w = w - lr * mhat
    return w


CASES = [
    (Adadelta, ref_adadelta, dict()),
    (Adadelta, ref_adadelta, dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    (Adadelta, ref_adadelta, dict(lr=0.5, maximize=True)),
    (Adamax, ref_adamax, dict(lr=0.05)),
    (Adamax, ref_adamax, dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.2, maximize=True)),
    (NAdam, ref_nadam, dict(lr=0.05)),
    (NAdam, ref_nadam, dict(lr=0.05, betas=(0.8, 0.95), momentum_decay=0.1, weight_decay=0.1)),
    (NAdam, ref_nadam, dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    (RAdam, ref_radam, dict(lr=0.05)),
    # β2 = 0.8 / 0.85 make ρ_t cross 5 within the run, so both branches are exercised
    (RAdam, ref_radam, dict(lr=0.05, betas=(0.9, 0.8), weight_decay=0.1)),
    (
        RAdam,
        ref_radam,
        dict(
            lr=0.05, betas=(0.9, 0.85), weight_decay=0.1, decoupled_weight_decay=True, maximize=True
        ),
    ),
]


def _ids(v):
    return (
        v.__name__
        if isinstance(v, type)
        else ("-".join(f"{k}={x}" for k, x in v.items()) or "default")
        if isinstance(v, dict)
        else None
    )


@pytest.mark.parametrize("cls, ref, kw", CASES, ids=_ids)
def test_update_rule_matches_numpy(cls, ref, kw):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    params = [tl.tensor(a, dtype=tl.float64, requires_grad=True) for a in arrays]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    opt = cls(params, **kw)
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = tl.tensor(g, dtype=tl.float64)
        opt.step()
    for i, (a, p) in enumerate(zip(arrays, params)):
        want = ref(a, [gs[i] for gs in grads], **kw)
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("b2", [0.8, 0.85])
def test_radam_cases_cross_the_rectification_threshold(b2):
    rho_inf = 2 / (1 - b2) - 1
    rhos = [rho_inf - 2 * t * b2**t / (1 - b2**t) for t in range(1, STEPS + 1)]
    assert rhos[0] <= 5 < rhos[-1]


@pytest.mark.parametrize(
    "cls, kw",
    [(Adadelta, {}), (Adamax, dict(lr=0.1)), (NAdam, dict(lr=0.1)), (RAdam, dict(lr=0.1))],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_state_dict_resume_is_exact(cls, kw):
    rng = np.random.default_rng(1)
    start = rng.standard_normal(4)
    grads = [rng.standard_normal(4) for _ in range(6)]

    def run(p, opt, gs):
        for g in gs:
            p.grad = tl.tensor(g, dtype=tl.float64)
            opt.step()

    a = tl.tensor(start, dtype=tl.float64, requires_grad=True)
    opt_a = cls([a], **kw)
    run(a, opt_a, grads)
    b = tl.tensor(start, dtype=tl.float64, requires_grad=True)
    opt_b = cls([b], **kw)
    run(b, opt_b, grads[:3])
    sd = opt_b.state_dict()
    assert sd["state"][0]["step"] == 3
    c = tl.tensor(b.detach().numpy(), dtype=tl.float64, requires_grad=True)
    opt_c = cls([c], **kw)
    opt_c.load_state_dict(sd)
    run(c, opt_c, grads[3:])
    np.testing.assert_array_equal(c.detach().numpy(), a.detach().numpy())


def test_validation():
    p = [tl.zeros(2, requires_grad=True)]
    with pytest.raises(OptimizerError, match="rho"):
        Adadelta(p, rho=1.5)
    with pytest.raises(OptimizerError, match="beta"):
        Adamax(p, betas=(1.0, 0.9))
    with pytest.raises(OptimizerError, match="momentum_decay"):
        NAdam(p, momentum_decay=-1)
    with pytest.raises(OptimizerError, match="epsilon"):
        RAdam(p, eps=-1)
    with pytest.raises(OptimizerError, match="line_search_fn"):
        LBFGS(p, line_search_fn="backtracking")
    with pytest.raises(OptimizerError, match="closure"):
        LBFGS(p).step()
    with pytest.raises(OptimizerError, match="groups"):
        LBFGS(
            [
                {"params": [tl.zeros(1, requires_grad=True)]},
                {"params": [tl.zeros(1, requires_grad=True)]},
            ]
        )


# --- LBFGS --------------------------------------------------------------------------------------
def ref_lbfgs(
    x, f_and_grad, lr=1.0, max_iter=20, tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100
):
    """Nocedal & Wright's two-loop L-BFGS with a fixed step (PyTorch's line_search_fn=None),
    with PyTorch's first step ``min(1, 1/‖g‖₁)·lr`` and its stopping rules."""
    x = x.copy()
    f, g = f_and_grad(x)
    if np.abs(g).max() <= tolerance_grad:
        return x
    S, Y = [], []
    d = t = g_prev = None
    max_eval = max_iter * 5 // 4
    evals = 1
    for k in range(1, max_iter + 1):
        if k == 1:
            d = -g
        else:
            y, s = g - g_prev, d * t
            if y @ s > 1e-10:
                if len(S) == history_size:
                    S.pop(0), Y.pop(0)
                S.append(s)
                Y.append(y)
            q = -g
            alphas = []
            for s_i, y_i in reversed(list(zip(S, Y))):
                a = (s_i @ q) / (y_i @ s_i)
                alphas.append(a)
                q = q - a * y_i
            gamma = (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1]) if S else 1.0
            r = gamma * q
            for (s_i, y_i), a in zip(zip(S, Y), reversed(alphas)):
                b = (y_i @ r) / (y_i @ s_i)
                r = r + (a - b) * s_i
            d = r
        g_prev, f_prev = g, f
        t = min(1.0, 1.0 / np.abs(g).sum()) * lr if k == 1 else lr
        if g @ d > -tolerance_change:
            break
        x = x + t * d
        if k == max_iter:
            break
        f, g = f_and_grad(x)
        evals += 1
        if (
            evals >= max_eval
            or np.abs(g).max() <= tolerance_grad
            or np.abs(d * t).max() <= tolerance_change
            or abs(f - f_prev) < tolerance_change
        ):
            break
    return x


def _quadratic(rng, n=6):
    m = rng.standard_normal((n, n))
    A = m @ m.T + n * np.eye(n)
    b = rng.standard_normal(n)
    return A, b


def test_lbfgs_fixed_step_matches_numpy_two_loop():
    rng = np.random.default_rng(2)
    A, b = _quadratic(rng)
    At, bt = tl.tensor(A), tl.tensor(b)
    x0 = rng.standard_normal(6)
    for kw in (dict(lr=0.05, max_iter=12), dict(lr=0.05, max_iter=30, history_size=3)):
        x = tl.tensor(x0, dtype=tl.float64, requires_grad=True)
        opt = LBFGS([x], **kw)

        def closure(opt=opt, x=x):
            opt.zero_grad()
            loss = 0.5 * (x @ (At @ x)) - bt @ x
            loss.backward()
            return loss

        first = opt.step(closure)
        assert abs(first.item() - (0.5 * x0 @ A @ x0 - b @ x0)) < 1e-12
        want = ref_lbfgs(x0, lambda v: (0.5 * v @ A @ v - b @ v, A @ v - b), **kw)
        np.testing.assert_allclose(x.detach().numpy(), want, rtol=1e-9, atol=1e-11)


def _rosenbrock_closure(opt, x):
    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    return closure


def test_lbfgs_strong_wolfe_minimises_rosenbrock():
    x = tl.tensor([-1.2, 1.0], dtype=tl.float64, requires_grad=True)
    opt = LBFGS(
        [x],
        line_search_fn="strong_wolfe",
        max_iter=200,
        tolerance_grad=1e-10,
        tolerance_change=1e-14,
    )
    opt.step(_rosenbrock_closure(opt, x))
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-6)
    state = opt.state[x]
    assert 10 < state["n_iter"] < 200 and state["func_evals"] >= state["n_iter"]


def test_lbfgs_fixed_step_rosenbrock_over_several_steps_and_resume():
    x = tl.tensor([-1.2, 1.0], dtype=tl.float64, requires_grad=True)
    opt = LBFGS([x], lr=0.5, max_iter=20, history_size=10)
    closure = _rosenbrock_closure(opt, x)
    losses = [opt.step(closure).item() for _ in range(40)]
    assert losses[-1] < 1e-6 < losses[0]
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-3)
    # state dict: the history resumes exactly
    y = tl.tensor([-1.2, 1.0], dtype=tl.float64, requires_grad=True)
    opt_y = LBFGS([y], lr=0.5, max_iter=5, history_size=10)
    cy = _rosenbrock_closure(opt_y, y)
    for _ in range(2):
        opt_y.step(cy)
    sd = opt_y.state_dict()
    assert set(sd["state"][0]) >= {
        "d",
        "t",
        "old_dirs",
        "old_stps",
        "ro",
        "H_diag",
        "n_iter",
        "func_evals",
    }
    z = tl.tensor(y.detach().numpy(), dtype=tl.float64, requires_grad=True)
    opt_z = LBFGS([z], lr=0.5, max_iter=5, history_size=10)
    opt_z.load_state_dict(sd)
    opt_y.step(cy)
    opt_z.step(_rosenbrock_closure(opt_z, z))
    np.testing.assert_array_equal(z.detach().numpy(), y.detach().numpy())


def test_lbfgs_multiple_params_and_converged_start():
    rng = np.random.default_rng(3)
    A, b = _quadratic(rng, 5)
    w1 = tl.tensor(np.zeros(2), requires_grad=True)
    w2 = tl.tensor(np.zeros(3), requires_grad=True)
    At, bt = tl.tensor(A), tl.tensor(b)
    opt = LBFGS([w1, w2], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        x = tl.cat([w1, w2])
        loss = 0.5 * (x @ (At @ x)) - bt @ x
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    sol = np.linalg.solve(A, b)
    np.testing.assert_allclose(
        np.concatenate([w1.detach().numpy(), w2.detach().numpy()]), sol, atol=1e-8
    )
    before = opt.state[w1]["func_evals"]
    opt.step(closure)  # already optimal: one evaluation, no iteration
    assert opt.state[w1]["func_evals"] == before + 1
    assert math.isfinite(opt.step(closure).item())
