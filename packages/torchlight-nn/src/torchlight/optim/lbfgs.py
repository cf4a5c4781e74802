"""L-BFGS (Nocedal & Wright, Algorithm 7.4/7.5), a port of PyTorch's ``torch.optim.LBFGS``.

L-BFGS approximates Newton's step ``-H⁻¹ g`` from the last ``history_size`` pairs
``s_k = x_{k+1} − x_k`` and ``y_k = g_{k+1} − g_k``. The two-loop recursion computes the
direction without forming any matrix::

    q = −g
    for k newest → oldest:  α_k = ρ_k s_kᵀ q,   q ← q − α_k y_k          (ρ_k = 1 / y_kᵀ s_k)
    r = γ q                                      (γ = y_kᵀ s_k / y_kᵀ y_k of the newest pair)
    for k oldest → newest:  β = ρ_k y_kᵀ r,     r ← r + (α_k − β) s_k
    d = r

A pair is kept only if ``y_kᵀ s_k > 1e-10`` (the curvature condition that keeps the implied
matrix positive definite). The step length is ``lr`` (the first iteration scales it by
``min(1, 1/‖g‖₁)``), or found by a line search satisfying the strong Wolfe conditions
(``line_search_fn="strong_wolfe"``: bracketing then zooming with cubic interpolation).

One :meth:`LBFGS.step` runs up to ``max_iter`` iterations and needs ``closure`` (it re-evaluates
the loss and its gradients several times). All parameters are treated as one flat vector, so
there is a single parameter group, as in PyTorch.
"""

from __future__ import annotations

import torchlight as tl
from torchlight import Tensor

from .optimizer import Optimizer, OptimizerError

__all__ = ["LBFGS"]

_CURVATURE_EPS = 1e-10  # y·s must exceed this for a pair to enter the history


def _dot(a: Tensor, b: Tensor) -> float:
    return float((a * b).sum().item())


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through ``(x1, f1, f1'=g1)`` and ``(x2, f2, g2)``, clamped to
    ``bounds`` (default: the interval); the midpoint when the cubic has no minimiser."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square**0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Step ``t`` along ``d`` with sufficient decrease ``f(t) <= f + c1 t gtd`` and curvature
    ``|f'(t)| <= -c2 gtd`` (Nocedal & Wright, Algorithms 3.5 and 3.6).

    Returns ``(f_new, g_new, t, evaluations)``.
    """
    d_norm = float(d.abs().amax().item())
    f_new, g_new = obj_func(x, t, d)
    evals, ls_iter = 1, 0
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    bracket = bracket_f = bracket_g = bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) or gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, done = [t], [f_new], [g_new], True
            break
        # extrapolate: the minimum lies further along d
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = (
            t,
            _cubic_interpolate(
                t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
            ),
        )
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals, ls_iter = evals + 1, ls_iter + 1
        gtd_new = _dot(g_new, d)
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    # zoom into the bracket
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # keep t away from the bracket's ends, or it may converge to one without progress
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = (
                    max(bracket) - eps
                    if abs(t - max(bracket)) < abs(t - min(bracket))
                    else min(bracket) + eps
                )
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals, ls_iter = evals + 1, ls_iter + 1
        gtd_new = _dot(g_new, d)
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = (
                t,
                f_new,
                g_new,
                gtd_new,
            )
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = (
                t,
                f_new,
                g_new,
                gtd_new,
            )
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
    history_size=100, line_search_fn=None)``; ``step(closure)`` is required.

    ``max_eval`` defaults to ``max_iter · 5 // 4`` closure evaluations per step. An iteration
    stops early when ``max |g| <= tolerance_grad``, or when the step or the change of the loss
    falls below ``tolerance_change``. ``line_search_fn`` is ``None`` (fixed step ``lr``) or
    ``"strong_wolfe"``.

    >>> x = tl.tensor([-1.5, 2.0], dtype=tl.float64, requires_grad=True)
    >>> opt = tl.optim.LBFGS([x], line_search_fn="strong_wolfe", max_iter=100)
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2   # Rosenbrock
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> [round(v, 4) for v in x.detach().tolist()]
    [1.0, 1.0]
    """

    def __init__(
        self,
        params,
        lr=1,
        max_iter=20,
        max_eval=None,
        tolerance_grad=1e-7,
        tolerance_change=1e-9,
        history_size=100,
        line_search_fn=None,
    ):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise OptimizerError(
                f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}"
            )
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise OptimizerError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # --- the parameters as one flat vector ------------------------------------------------------
    def _gather_flat_grad(self) -> Tensor:
        parts = [
            tl.zeros(p.numel(), dtype=p.dtype, device=p.device)
            if p.grad is None
            else p.grad.detach().reshape(-1)
            for p in self._params
        ]
        return tl.cat(parts, 0)

    def _add_grad(self, step: float, direction: Tensor) -> None:
        offset = 0
        with tl.no_grad():
            for p in self._params:
                n = p.numel()
                p.add_(direction[offset : offset + n].reshape(p.shape), alpha=step)
                offset += n

    def _clone_param(self):
        return [p.detach().clone() for p in self._params]

    def _set_param(self, values) -> None:
        with tl.no_grad():
            for p, v in zip(self._params, values):
                p.copy_(v)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = _as_float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # --- one step ---------------------------------------------------------------------------
    def step(self, closure=None):
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss of the first evaluation."""
        if closure is None:
            raise OptimizerError(
                "LBFGS.step needs a closure that re-evaluates the loss and calls backward()"
            )

        def evaluate():
            with tl.enable_grad():
                return closure()

        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = evaluate()
        loss = _as_float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(flat_grad.abs().amax().item()) <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, H_diag = [], [], [], 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(y, s)
                if ys > _CURVATURE_EPS:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / _dot(y, y)
                al = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    q = q - old_dirs[i] * al[i]
                r = q * H_diag
                for i in range(len(old_dirs)):
                    be_i = _dot(old_dirs[i], r) * ro[i]
                    r = r + old_stps[i] * (al[i] - be_i)
                d = r
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(flat_grad.abs().sum().item())) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = self._clone_param()

                def obj_func(x, step, direction):
                    return self._directional_evaluate(evaluate, x, step, direction)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd
                )
                self._add_grad(t, d)
                opt_cond = float(flat_grad.abs().amax().item()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = _as_float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(flat_grad.abs().amax().item()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float((d * t).abs().amax().item()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(
            d=d,
            t=t,
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=ro,
            H_diag=H_diag,
            prev_flat_grad=prev_flat_grad,
            prev_loss=prev_loss if n_iter else None,
        )
        return orig_loss

    def _cast_state(self, param, idx, name, value):
        # L-BFGS keeps flat vectors (and lists of them), not per-parameter tensors.
        def cast(v):
            if isinstance(v, Tensor):
                return tl.tensor(v.detach().to_numpy(), dtype=param.dtype, device=param.device)
            return v

        if name in ("func_evals", "n_iter"):
            return int(value)
        if isinstance(value, (list, tuple)):
            return [cast(v) for v in value]
        return cast(value)


def _as_float(loss) -> float:
    return float(loss.item()) if isinstance(loss, Tensor) else float(loss)
