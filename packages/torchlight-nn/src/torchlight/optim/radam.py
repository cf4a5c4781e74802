"""RAdam (Liu et al., 2019): Adam whose adaptive step is switched on only once the variance of
its estimate is tractable — PyTorch's formulation, step ``t``::

    g ← -g                                    if maximize
    g ← g + λ·p        (or p ← p·(1 − lr·λ) with decoupled_weight_decay)
    m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²
    m̂ = m / (1 − β1ᵗ)
    ρ∞ = 2/(1 − β2) − 1,   ρ_t = ρ∞ − 2t·β2ᵗ/(1 − β2ᵗ)
    ρ_t > 5:  l = √(1 − β2ᵗ) / (√v + eps),
              r = √((ρ_t − 4)(ρ_t − 2)ρ∞ / ((ρ∞ − 4)(ρ∞ − 2)ρ_t)),
              p ← p − lr · m̂ · r · l
    else:     p ← p − lr · m̂                 (plain momentum SGD for the first few steps)

State: ``step``, ``exp_avg``, ``exp_avg_sq``.
"""

from __future__ import annotations

import math

import torchlight as tl

from .adamax import _check_betas_eps
from .optimizer import Optimizer, _lerp_

__all__ = ["RAdam"]

_RHO_THRESHOLD = 5.0  # ρ_t above which the variance rectification is used (the paper's choice)


class RAdam(Optimizer):
    """``RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False, *, maximize=False)``.

    >>> w = tl.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = tl.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); _ = opt.step()
    >>> [round(v, 6) for v in w.detach().tolist()]
    [0.8, -1.6]
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        decoupled_weight_decay=False,
        *,
        maximize=False,
    ):
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        _check_betas_eps(group)

    def _update_group(self, group):
        lr, (beta1, beta2), eps, wd = (
            group["lr"],
            group["betas"],
            group["eps"],
            group["weight_decay"],
        )
        rho_inf = 2 / (1 - beta2) - 1
        for p, grad, state, _ in self._steps(
            group, exp_avg=tl.zeros_like, exp_avg_sq=tl.zeros_like
        ):
            t = state["step"]
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad + p * wd
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            _lerp_(exp_avg, grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
            bias_correction1 = 1 - beta1**t
            bias_correction2 = 1 - beta2**t
            rho_t = rho_inf - 2 * t * beta2**t / bias_correction2
            if rho_t > _RHO_THRESHOLD:
                rect = math.sqrt(
                    (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                )
                adaptive = math.sqrt(bias_correction2) / (exp_avg_sq.sqrt().add_(eps))
                p.add_(exp_avg * adaptive, alpha=-lr * rect / bias_correction1)
            else:
                p.add_(exp_avg, alpha=-lr / bias_correction1)
