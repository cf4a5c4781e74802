"""RMSprop (Hinton's lecture 6e), optionally centered and with momentum — PyTorch's formulation::

    g ← -g                          if maximize
    g ← g + weight_decay·p
    v ← α·v + (1 − α)·g²
    centered:  ḡ ← α·ḡ + (1 − α)·g  (as ``ḡ.lerp_(g, 1 − α)``),  avg = √(v − ḡ²) + eps
    otherwise: avg = √v + eps
    momentum > 0:  buf ← μ·buf + g/avg,  p ← p − lr·buf
    otherwise:     p ← p − lr·g/avg

State: ``step``, ``square_avg``, and ``momentum_buffer`` / ``grad_avg`` when used.
"""

from __future__ import annotations

import torchlight as tl

from .optimizer import Optimizer, OptimizerError, _lerp_

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop: steps divided by a running root-mean-square of the gradient,

    .. math:: v \leftarrow \alpha v + (1 - \alpha)\,g^2, \qquad p \leftarrow p - \text{lr}\,\frac{g}{\sqrt{v} + \epsilon}

    ``centered`` subtracts the square of a running mean of :math:`g` inside the root;
    ``momentum`` :math:`\mu` accumulates :math:`b \leftarrow \mu b + g/(\sqrt v + \epsilon)` and steps
    by :math:`\text{lr}\cdot b`; ``weight_decay`` adds :math:`\lambda p` to :math:`g`.

    >>> w = nn.Parameter(tl.tensor([1.0]))
    >>> opt = tl.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward()
    >>> opt.step()                        # the first step is lr / sqrt(1 - alpha) = 0.1
    >>> w
    Parameter containing:
    tensor([0.9], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0.0,
        momentum=0.0,
        centered=False,
        *,
        maximize=False,
    ):
        defaults = dict(
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        if group["alpha"] < 0.0:
            raise OptimizerError(f"invalid alpha value: {group['alpha']} (must be >= 0)")
        if group["momentum"] < 0.0:
            raise OptimizerError(f"invalid momentum value: {group['momentum']} (must be >= 0)")
        if group["eps"] < 0.0:
            raise OptimizerError(f"invalid epsilon value: {group['eps']} (must be >= 0)")

    def _update_group(self, group):
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        weight_decay, momentum, centered = (
            group["weight_decay"],
            group["momentum"],
            group["centered"],
        )
        buffers = {"square_avg": tl.zeros_like}
        if momentum > 0:
            buffers["momentum_buffer"] = tl.zeros_like
        if centered:
            buffers["grad_avg"] = tl.zeros_like
        for p, grad, state, _ in self._steps(group, **buffers):
            if weight_decay != 0:
                grad = grad + p * weight_decay
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
            if centered:
                grad_avg = state.setdefault("grad_avg", tl.zeros_like(p))
                _lerp_(grad_avg, grad, 1 - alpha)
                avg = (square_avg - grad_avg * grad_avg).sqrt()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(eps)
            if momentum > 0:
                buf = state.setdefault("momentum_buffer", tl.zeros_like(p))
                buf.mul_(momentum).add_(grad / avg)
                p.add_(buf, alpha=-lr)
            else:
                p.add_(grad / avg, alpha=-lr)
