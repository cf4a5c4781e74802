"""Fused in-place parameter updates: the optimizer's inner loop in one backend call per parameter.

An optimizer step is a dozen tiny elementwise ops per parameter (Adam: decay, two moment
updates, a square root, a division, an add), each a separate pass over memory plus torchlight's
per-op Python overhead — on a small model that is most of the step's optimizer time (measured on
the mini-GPT benchmark: 6 ms for 52 parameters, ~300 backend calls). A backend that declares the
``"adam"`` capability does the whole update in one pass; without it, or for layouts it is not
given, ``adam_step_`` returns False and the optimizer runs its composite code, which is also
the reference the conformance kit checks the fused kernels against. Adagrad's update (six ops
per parameter, a quarter of a recommender's training step) is the ``"adagrad"`` capability, and
SGD's (weight decay and momentum: up to seven ops and three allocations per parameter, 7 %
of a small tagger's step) the ``"sgd"`` capability.

SGD, PyTorch's formulation (``buf`` the momentum buffer, absent when μ = 0)::

    g ← −g                                  if maximize
    g ← g + λ·p                             if λ ≠ 0
    buf ← g   (its first step)   or   buf ← μ·buf + (1 − dampening)·g
    g ← g + μ·buf    (Nesterov)  or   g ← buf
    p ← p + (−lr)·g

Adam, PyTorch's formulation, step ``t`` (from 1), gradient ``g``::

    g ← −g                                  if maximize
    g ← g + λ·p      (Adam)    or    p ← p·(1 − lr·λ)      (AdamW, "decoupled")
    m ← m + (1 − β1)·(g − m)                (lerp; exact at the ends)
    v ← β2·v + (1 − β2)·g²
    p ← p − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε)

Adagrad, PyTorch's formulation (``clr`` = lr / (1 + (t − 1)·lr_decay), computed by the caller)::

    g ← g + λ·p
    s ← s + g²
    p ← p − clr · g / (√s + ε)
"""

from __future__ import annotations

from ..dispatch import same_backend

__all__ = ["adam_step_", "adagrad_step_", "sgd_step_"]


def adam_step_(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    *,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    step,
    decoupled,
    maximize=False,
) -> bool:
    """One fused Adam/AdamW update of ``param``, ``exp_avg``, ``exp_avg_sq`` in place.

    Returns False (and touches nothing) when the backend lacks the ``"adam"`` capability or the
    four tensors are not contiguous float tensors of one shape and dtype; the caller then runs
    the composite update.
    """
    be = _fusable("adam", param, grad, exp_avg, exp_avg_sq)
    if be is None:
        return False
    # every scalar of the step is computed here once, so a backend only runs the elementwise part
    decay, l2 = (1.0 - lr * weight_decay, 0.0) if decoupled else (1.0, float(weight_decay))
    be.adam_step(
        param._td,
        grad._td,
        exp_avg._td,
        exp_avg_sq._td,
        beta1=beta1,
        beta2=beta2,
        eps=eps,
        decay=decay,
        l2=l2,
        maximize=maximize,
        step_size=lr / (1.0 - beta1**step),
        bias_correction2_sqrt=(1.0 - beta2**step) ** 0.5,
    )
    return True


def adagrad_step_(param, grad, state_sum, *, clr, weight_decay, eps) -> bool:
    """One fused Adagrad update of ``param`` and ``state_sum`` in place (``clr`` the step's
    decayed learning rate; a maximizing optimizer passes ``-grad``).

    Returns False (and touches nothing) when the backend lacks the ``"adagrad"`` capability or
    the three tensors are not contiguous float tensors of one shape and dtype; the caller then
    runs the composite update.
    """
    be = _fusable("adagrad", param, grad, state_sum)
    if be is None:
        return False
    be.adagrad_step(param._td, grad._td, state_sum._td, clr=clr, l2=float(weight_decay), eps=eps)
    return True


def sgd_step_(
    param,
    grad,
    momentum_buffer,
    *,
    lr,
    momentum,
    dampening,
    weight_decay,
    nesterov,
    maximize,
    first,
) -> bool:
    """One fused SGD update of ``param`` (and of ``momentum_buffer``, ``None`` when ``momentum``
    is 0) in place; ``first``: the buffer is new and takes the gradient as it is (its content is
    not read).

    Returns False (and touches nothing) when the backend lacks the ``"sgd"`` capability or the
    tensors are not contiguous float tensors of one shape and dtype; the caller then runs the
    composite update.
    """
    others = (grad,) if momentum_buffer is None else (grad, momentum_buffer)
    be = _fusable("sgd", param, *others)
    if be is None:
        return False
    be.sgd_step(
        param._td,
        grad._td,
        None if momentum_buffer is None else momentum_buffer._td,
        lr=lr,
        momentum=momentum,
        dampening=dampening,
        l2=weight_decay,
        nesterov=bool(nesterov),
        maximize=bool(maximize),
        first=bool(first),
    )
    return True


def _fusable(capability, param, *others):
    """``param``'s backend when it has ``capability`` and ``param`` and ``others`` are
    contiguous float tensors of one shape and dtype (the fused kernels' layout), else None.
    The tensors the kernel writes (``param`` and all but the first of ``others``, the gradient)
    pass the in-place checks of ``add_``, which also count their versions up."""
    be = param.backend
    if capability not in be.capabilities or param.dtype.np.kind != "f":
        return None
    for t in others:
        same_backend(param, t)
        if t.shape != param.shape or t.dtype != param.dtype:
            return None
    if not param._td.is_contiguous() or not all(t._td.is_contiguous() for t in others):
        return None
    for t in (param, *others[1:]):
        t._check_inplace(f"{capability}_step_")
    return be
