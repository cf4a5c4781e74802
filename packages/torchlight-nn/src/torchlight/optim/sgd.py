"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay.

PyTorch's formulation, step ``t`` for a parameter ``p`` with gradient ``g``::

    g ← -g                         if maximize
    g ← g + weight_decay·p         (L2 penalty folded into the gradient)
    buf ← g                        on the first step (no dampening then)
    buf ← μ·buf + (1 − dampening)·g  afterwards
    g ← g + μ·buf   (nesterov)   or   g ← buf
    p ← p − lr·g

The Nesterov form is ``g + μ·buf`` (Sutskever et al. rewritten for the current parameters), not
``buf + μ·g``.
"""

from __future__ import annotations

import torchlight as tl
from torchlight.tensor.extension import sgd_step_

from .optimizer import Optimizer, OptimizerError

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent, with optional momentum, dampening, Nesterov momentum and weight
    decay (PyTorch's formulation, spelled out in this module's docstring). The plain update is

    .. math:: p \leftarrow p - \text{lr}\cdot g

    and with momentum :math:`\mu` a velocity :math:`b \leftarrow \mu b + (1 - \text{dampening})\,g`
    replaces :math:`g` (Nesterov: :math:`g + \mu b`).

    ``params`` is an iterable of parameters or of parameter-group dicts (each may override any
    hyper-parameter). Call :meth:`zero_grad`, ``loss.backward()``, then :meth:`step`.

    >>> w = nn.Parameter(tl.tensor([1.0, -2.0]))
    >>> opt = tl.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward()          # gradient 2w
    >>> opt.step()
    >>> w
    Parameter containing:
    tensor([ 0.8, -1.6], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0.0,
        dampening=0.0,
        weight_decay=0.0,
        nesterov=False,
        *,
        maximize=False,
    ):
        if momentum < 0.0:
            raise OptimizerError(f"invalid momentum value: {momentum} (must be >= 0)")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise OptimizerError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _update_group(self, group):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = (
            group["weight_decay"],
            group["nesterov"],
            group["maximize"],
        )
        for p, grad in self._params_with_grad(group):
            state = self.state.setdefault(p, {}) if momentum != 0 else {}
            buf = state.get("momentum_buffer")
            first = momentum != 0 and buf is None
            if first:
                buf = tl.zeros_like(p)  # the fused step sets a new buffer to the gradient
            if sgd_step_(
                p,
                grad,
                buf,
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
                first=first,
            ):
                if first:
                    state["momentum_buffer"] = buf
                continue  # the backend's one-pass kernel did the update below
            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad + p * weight_decay
            if momentum != 0:
                if first:
                    buf = state["momentum_buffer"] = grad.detach().clone()
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad + buf * momentum if nesterov else buf
            p.add_(grad, alpha=-lr)
