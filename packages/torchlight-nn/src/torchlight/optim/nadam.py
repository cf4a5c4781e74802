"""NAdam (Dozat, 2016): Adam with Nesterov momentum — PyTorch's formulation, step ``t``, ``ψ =
momentum_decay``::

    g ← -g                                    if maximize
    g ← g + λ·p        (or p ← p·(1 − lr·λ) with decoupled_weight_decay)
    μ_t = β1·(1 − ½·0.96^(t·ψ)),  μ_{t+1} = β1·(1 − ½·0.96^((t+1)·ψ))
    m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²
    m̂ = μ_{t+1}·m / (1 − Π_{i≤t+1} μ_i) + (1 − μ_t)·g / (1 − Π_{i≤t} μ_i)
    v̂ = v / (1 − β2ᵗ)
    p ← p − lr · m̂ / (√v̂ + eps)

State: ``step``, ``mu_product`` (``Π_{i≤t} μ_i``, a float), ``exp_avg``, ``exp_avg_sq``.
"""

from __future__ import annotations

import torchlight as tl

from .adamax import _check_betas_eps
from .optimizer import Optimizer, OptimizerError, _lerp_

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """``NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, *, maximize=False)``.

    >>> w = tl.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = tl.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); _ = opt.step()
    >>> [round(v, 4) for v in w.detach().tolist()]
    [0.8944, -1.8944]
    """

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        maximize=False,
    ):
        if momentum_decay < 0.0:
            raise OptimizerError(f"invalid momentum_decay value: {momentum_decay} (must be >= 0)")
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
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
        psi = group["momentum_decay"]
        for p, grad, state, _ in self._steps(
            group, mu_product=1.0, exp_avg=tl.zeros_like, exp_avg_sq=tl.zeros_like
        ):
            t = state["step"]
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad + p * wd
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
            state["mu_product"] = mu_product = float(state["mu_product"]) * mu
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            _lerp_(exp_avg, grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
            denom = (exp_avg_sq / (1 - beta2**t)).sqrt().add_(eps)
            p.add_(grad / denom, alpha=-lr * (1 - mu) / (1 - mu_product))
            p.add_(exp_avg / denom, alpha=-lr * mu_next / (1 - mu_product * mu_next))
