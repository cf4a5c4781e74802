"""Adamax (Kingma & Ba, §7.1): Adam with the infinity norm — PyTorch's formulation, step ``t``::

    g ← -g                              if maximize
    g ← g + weight_decay·p
    m ← β1·m + (1 − β1)·g               (exp_avg)
    u ← max(β2·u, |g| + eps)            (exp_inf)
    p ← p − lr/(1 − β1ᵗ) · m / u

State: ``step``, ``exp_avg``, ``exp_inf``.
"""

from __future__ import annotations

import torchlight as tl

from .optimizer import Optimizer, OptimizerError, _lerp_

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *, maximize=False)``.

    >>> w = tl.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = tl.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); _ = opt.step()
    >>> [round(v, 6) for v in w.detach().tolist()]
    [0.9, -1.9]
    """

    def __init__(
        self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *, maximize=False
    ):
        defaults = dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize
        )
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        _check_betas_eps(group)

    def _update_group(self, group):
        lr, (beta1, beta2), eps, weight_decay = (
            group["lr"],
            group["betas"],
            group["eps"],
            group["weight_decay"],
        )
        for p, grad, state, step in self._steps(
            group, exp_avg=tl.zeros_like, exp_inf=tl.zeros_like
        ):
            if weight_decay != 0:
                grad = grad + p * weight_decay
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            _lerp_(exp_avg, grad, 1 - beta1)
            exp_inf.copy_(tl.maximum(exp_inf * beta2, grad.abs() + eps))
            p.add_(exp_avg / exp_inf, alpha=-lr / (1 - beta1**step))


def _check_betas_eps(group):
    """The Adam family's checks: each beta in ``[0, 1)``, ``eps >= 0``."""
    group["betas"] = tuple(group["betas"])
    for i, b in enumerate(group["betas"]):
        if not 0.0 <= b < 1.0:
            raise OptimizerError(f"invalid beta parameter at index {i}: {b} (must be in [0, 1))")
    if group["eps"] < 0.0:
        raise OptimizerError(f"invalid epsilon value: {group['eps']} (must be >= 0)")
