"""Adadelta (Zeiler, 2012) — PyTorch's formulation, for a parameter ``p`` with gradient ``g``::

    g ← -g                              if maximize
    g ← g + weight_decay·p
    v ← ρ·v + (1 − ρ)·g²                (square_avg)
    Δ = √(u + eps) / √(v + eps) · g
    u ← ρ·u + (1 − ρ)·Δ²                (acc_delta)
    p ← p − lr·Δ

State: ``step``, ``square_avg``, ``acc_delta``. ``lr`` defaults to 1.0: the ratio of the two
running RMS values already carries the step's units.
"""

from __future__ import annotations

import torchlight as tl

from .optimizer import Optimizer, OptimizerError

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """``Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False)``.

    >>> w = tl.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = tl.optim.Adadelta([w])
    >>> (w * w).sum().backward(); _ = opt.step()
    >>> [round(v, 6) for v in w.detach().tolist()]
    [0.996838, -1.996838]
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, *, maximize=False):
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        if not 0.0 <= group["rho"] <= 1.0:
            raise OptimizerError(f"invalid rho value: {group['rho']} (must be in [0, 1])")
        if group["eps"] < 0.0:
            raise OptimizerError(f"invalid epsilon value: {group['eps']} (must be >= 0)")

    def _update_group(self, group):
        lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        for p, grad, state, _ in self._steps(
            group, square_avg=tl.zeros_like, acc_delta=tl.zeros_like
        ):
            if weight_decay != 0:
                grad = grad + p * weight_decay
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
            delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
            acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
            p.add_(delta, alpha=-lr)
