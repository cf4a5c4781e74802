"""Adam (Kingma & Ba), its AMSGrad variant, and AdamW (decoupled weight decay, Loshchilov & Hutter).

PyTorch's formulation, step ``t`` (counted from 1) for a parameter ``p`` with gradient ``g``::

    g ← -g                                        if maximize
    Adam:  g ← g + weight_decay·p                 (L2 penalty in the gradient)
    AdamW: p ← p·(1 − lr·weight_decay)            (decay applied to the weights directly)
    m ← β1·m + (1 − β1)·g                         (as ``m.lerp_(g, 1 − β1)``)
    v ← β2·v + (1 − β2)·g²
    v̂max ← max(v̂max, v)                           if amsgrad (and use it instead of v below)
    p ← p − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + eps)

State per parameter: ``step`` (an int), ``exp_avg``, ``exp_avg_sq`` and, with amsgrad,
``max_exp_avg_sq``. Backends with the ``"adam"`` capability run the update (not AMSGrad) as one
fused pass per parameter (``torchlight.tensor.functions.updates``); the code below is the
composite form everyone else runs.
"""

from __future__ import annotations

import torchlight as tl
from torchlight.jit import count_up
from torchlight.tensor.extension import adam_step_

from .optimizer import Optimizer, OptimizerError, _lerp_

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba): per-parameter steps scaled by running estimates of the gradient's first
    and second moments,

    .. math::
       m &\leftarrow \beta_1 m + (1 - \beta_1)\,g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\,g^2 \\
       p &\leftarrow p - \frac{\text{lr}}{1 - \beta_1^t}\cdot\frac{m}{\sqrt{v}/\sqrt{1 - \beta_2^t} + \epsilon}

    ``weight_decay`` adds :math:`\lambda p` to the gradient (L2; see :class:`AdamW` for decoupled
    decay); ``amsgrad`` uses the running maximum of :math:`v`; ``maximize`` ascends. Backends with
    the ``"adam"`` capability run the update as one fused kernel per parameter.

    >>> w = nn.Parameter(tl.tensor([1.0, -1.0]))
    >>> opt = tl.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()                        # the first step moves each weight by about lr
    >>> w
    Parameter containing:
    tensor([ 0.9, -0.9], requires_grad=True)
    """

    _decoupled = False

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        amsgrad=False,
        *,
        maximize=False,
    ):
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        group["betas"] = tuple(group["betas"])
        b1, b2 = group["betas"]
        if not 0.0 <= b1 < 1.0:
            raise OptimizerError(f"invalid beta parameter at index 0: {b1} (must be in [0, 1))")
        if not 0.0 <= b2 < 1.0:
            raise OptimizerError(f"invalid beta parameter at index 1: {b2} (must be in [0, 1))")
        if group["eps"] < 0.0:
            raise OptimizerError(f"invalid epsilon value: {group['eps']} (must be >= 0)")

    def _update_group(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
        for p, grad in self._params_with_grad(group):
            state = self.state.setdefault(p, {})
            if not state:
                state["step"] = 0
                state["exp_avg"] = tl.zeros_like(p)
                state["exp_avg_sq"] = tl.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = tl.zeros_like(p)
            step = count_up(state, "step")  # live inside a captured step (torchlight.jit)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            if not amsgrad and adam_step_(
                p,
                grad,
                exp_avg,
                exp_avg_sq,
                lr=lr,
                beta1=beta1,
                beta2=beta2,
                eps=eps,
                weight_decay=weight_decay,
                step=step,
                decoupled=self._decoupled,
                maximize=maximize,
            ):
                continue  # the backend's one-pass kernel did the update below
            if maximize:
                grad = -grad

            if weight_decay != 0:
                if self._decoupled:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad + p * weight_decay

            _lerp_(exp_avg, grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)

            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5

            if amsgrad:
                max_sq = state.get("max_exp_avg_sq")
                if max_sq is None:  # amsgrad switched on after some steps
                    max_sq = state["max_exp_avg_sq"] = tl.zeros_like(p)
                max_sq.copy_(max_sq.maximum(exp_avg_sq))
                denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.add_(exp_avg / denom, alpha=-step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p ← p·(1 − lr·weight_decay)`` before the Adam step.

    >>> w = nn.Parameter(tl.tensor([1.0]))
    >>> opt = tl.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = tl.zeros(1)              # no gradient: only the decay acts
    >>> opt.step()
    >>> w
    Parameter containing:
    tensor([0.95], requires_grad=True)
    """

    _decoupled = True

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
    ):
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
        )
