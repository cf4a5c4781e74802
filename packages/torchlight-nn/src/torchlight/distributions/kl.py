"""``kl_divergence(p, q)`` = ``E_p[log p − log q]`` in closed form for the pairs registered here:

* Normal–Normal: ``log(σq/σp) + (σp² + (μp − μq)²) / (2σq²) − ½``
* Categorical–Categorical: ``Σ_k p_k (log p_k − log q_k)``
* Bernoulli–Bernoulli: the two-class case of the above
* Uniform–Uniform: ``log((hq − lq)/(hp − lp))`` when ``[lp, hp] ⊆ [lq, hq]``, else ``inf``
* Independent–Independent: the base pair's KL summed over the reinterpreted dims

``register_kl(type_p, type_q)`` adds a pair, as in PyTorch.
"""

import math
from collections.abc import Callable
from typing import Any

import torchlight as tl

from .bernoulli import Bernoulli
from .categorical import Categorical
from .independent import Independent
from .normal import Normal
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL: dict[tuple[type, type], Callable[..., Any]] = {}  # (type of p, type of q) -> fn(p, q)


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of the two distribution types."""

    def decorator(fn):
        _KL[(type_p, type_q)] = fn
        return fn

    return decorator


def kl_divergence(p, q):
    """``KL(p ‖ q)``, one value per batch element.

    >>> from torchlight.distributions import Normal, kl_divergence
    >>> round(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item(), 4)
    0.5
    """
    fn = _KL.get((type(p), type(q)))
    if fn is None:
        raise NotImplementedError(
            f"kl_divergence: no closed form registered for {type(p).__name__} and "
            f"{type(q).__name__} (add one with register_kl)"
        )
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = tl.where(p.probs > 0, p.probs * (p.logits - q.logits), 0.0)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    sp = Bernoulli(logits=p.logits)
    one_minus = 1 - sp.probs
    return sp.probs * (_log_sigmoid(p.logits) - _log_sigmoid(q.logits)) + one_minus * (
        _log_sigmoid(-p.logits) - _log_sigmoid(-q.logits)
    )


def _log_sigmoid(x):
    return -((-x).softplus(1.0, None))


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    inside = (q.low <= p.low) * (p.high <= q.high)
    return tl.where(inside, result, math.inf)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "kl_divergence of Independent distributions with different event dims"
        )
    return p._sum_rightmost(kl_divergence(p.base_dist, q.base_dist))
