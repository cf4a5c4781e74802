"""Adagrad (Duchi et al.) — PyTorch's formulation, step ``t`` counted from 1::

    g ← -g                          if maximize
    g ← g + weight_decay·p
    clr = lr / (1 + (t − 1)·lr_decay)
    s ← s + g²                      (s starts at ``initial_accumulator_value``)
    p ← p − clr·g / (√s + eps)

State: ``step`` and ``sum``. Backends with the ``"adagrad"`` capability run the update as one
kernel per parameter (``torchlight.tensor.functions.updates``); the code below is the composite
fallback and the reference the kernels are tested against.
"""

from __future__ import annotations

import torchlight as tl
from torchlight.tensor.extension import adagrad_step_

from .optimizer import Optimizer, OptimizerError

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad (Duchi et al.): each parameter's step is divided by the root of its accumulated
    squared gradients, so often-updated coordinates slow down:

    .. math:: s \leftarrow s + g^2, \qquad p \leftarrow p - \frac{\text{lr}_t\, g}{\sqrt{s} + \epsilon},
       \qquad \text{lr}_t = \frac{\text{lr}}{1 + (t - 1)\,\text{lr\_decay}}

    ``initial_accumulator_value`` starts :math:`s`; ``weight_decay`` adds :math:`\lambda p` to
    :math:`g`.

    >>> w = nn.Parameter(tl.tensor([1.0]))
    >>> opt = tl.optim.Adagrad([w], lr=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    Parameter containing:
    tensor([0.5], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0.0,
        weight_decay=0.0,
        initial_accumulator_value=0.0,
        eps=1e-10,
        *,
        maximize=False,
    ):
        if initial_accumulator_value < 0.0:
            raise OptimizerError(
                f"invalid initial_accumulator_value: {initial_accumulator_value} (must be >= 0)"
            )
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            eps=eps,
            initial_accumulator_value=initial_accumulator_value,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        if group["lr_decay"] < 0.0:
            raise OptimizerError(f"invalid lr_decay value: {group['lr_decay']} (must be >= 0)")
        if group["eps"] < 0.0:
            raise OptimizerError(f"invalid epsilon value: {group['eps']} (must be >= 0)")

    def _update_group(self, group):
        lr, lr_decay, eps, weight_decay = (
            group["lr"],
            group["lr_decay"],
            group["eps"],
            group["weight_decay"],
        )
        for p, grad, state, step in self._steps(
            group, sum=lambda p: tl.full_like(p, group["initial_accumulator_value"])
        ):
            clr = lr / (1 + (step - 1) * lr_decay)
            state_sum = state["sum"]
            if adagrad_step_(p, grad, state_sum, clr=clr, weight_decay=weight_decay, eps=eps):
                continue  # the backend's one-pass kernel did the update below
            if weight_decay != 0:
                grad = grad + p * weight_decay
            state_sum.add_(grad * grad)
            std = state_sum.sqrt().add_(eps)
            p.add_(grad / std, alpha=-clr)
