"""Gradient clipping and flat parameter vectors (``torchlight.nn.utils``).

``clip_grad_norm_`` treats all gradients as one long vector ``g`` and rescales it when its norm
is too large: ``total = ‖g‖_p`` (``p = inf``: ``max |g_i|``), then every gradient is multiplied
by ``min(1, max_norm / (total + 1e-6))`` — the direction is kept, only the length is capped.
``clip_grad_value_`` clamps every element to ``[-clip_value, clip_value]`` instead.

Subpackage :mod:`torchlight.nn.utils.rnn`: ``pad_sequence``, ``pack_padded_sequence``, ... Weight
reparameterisations: ``weight_norm`` / ``remove_weight_norm``, ``spectral_norm`` /
``remove_spectral_norm``.
"""

import math

import torchlight as tl
from torchlight import Tensor, TorchlightError
from torchlight.jit import is_recording

from . import rnn
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "parameters_to_vector",
    "vector_to_parameters",
    "rnn",
    "weight_norm",
    "remove_weight_norm",
    "spectral_norm",
    "remove_spectral_norm",
]


def _as_list(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


CLIP_CHUNK = 1 << 20
"""Most elements ``clip_grad_norm_`` joins into one float64 vector to square and sum (8 MiB): a
small model's gradients are one vector, so a handful of ops instead of four per gradient
(15 gradients of a one-layer GPT: 0.72 -> 0.17 ms, ``bench_ops.py``), and a large model's never need a float64
copy of all of them at once."""


def _flat_chunks(grads):
    """The gradients, flattened, joined in order into float64 vectors of at most
    ``CLIP_CHUNK`` elements (a larger gradient is a vector of its own)."""
    group, n = [], 0
    for g in grads:
        flat = g.detach().reshape(-1)
        if group and n + flat.numel() > CLIP_CHUNK:
            yield (tl.cat(group) if len(group) > 1 else group[0]).to(tl.float64)
            group, n = [], 0
        group.append(flat)
        n += flat.numel()
    if group:
        yield (tl.cat(group) if len(group) > 1 else group[0]).to(tl.float64)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescale gradients so their joint ``norm_type``-norm is at most ``max_norm`` (each
    ``p.grad`` is replaced by its scaled version).

    Returns the total norm *before* clipping (a 0-d tensor), as PyTorch does.

    >>> w = nn.Parameter(tl.zeros(2))
    >>> w.grad = tl.tensor([3.0, 4.0])
    >>> nn.utils.clip_grad_norm_([w], max_norm=1.0)
    tensor(5.)
    >>> w.grad
    tensor([0.6, 0.8])
    """
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return tl.tensor(0.0)
    with tl.no_grad():
        if norm_type == math.inf:
            total = tl.stack([g.detach().abs().amax().to(tl.float64) for g in grads]).amax()
        elif norm_type == 2.0:  # the usual case: squares summed a chunk of gradients at a time
            total = tl.stack([(v * v).sum() for v in _flat_chunks(grads)]).sum() ** 0.5
        else:
            parts = [(g.detach().abs().to(tl.float64) ** norm_type).sum() for g in grads]
            total = tl.stack(parts).sum() ** (1.0 / norm_type)
        if is_recording() and not error_if_nonfinite:
            # a captured step cannot read the norm on the host (its replays would reuse this
            # step's answer): the factor stays a tensor, min(max_norm / (norm + 1e-6), 1) as
            # below, the same float64 arithmetic, and the product by 1.0 that the host path
            # skips changes no value
            coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        else:
            value = total.item()
            if error_if_nonfinite and not math.isfinite(value):
                raise TorchlightError(
                    f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                    "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                    "anyway, set `error_if_nonfinite=False`"
                )
            coef = min(float(max_norm) / (value + 1e-6), 1.0)
            if coef == 1.0:  # below the limit: a product by 1 changes no value, so none is made
                return total.to(grads[0].dtype)
        for p in params:
            # Out of place, then re-assigned: after backward(create_graph=True) torchlight-tensor
            # 0.1.0 can give several leaves one shared gradient tensor, which an in-place
            # mul_ would scale once per owner.
            if p.grad is not None:
                g = p.grad.detach()
                p.grad = g * (coef if isinstance(coef, float) else coef.to(g.dtype))
    return total.to(grads[0].dtype)


def clip_grad_value_(parameters, clip_value):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` (``p.grad`` is replaced).

    >>> w = nn.Parameter(tl.zeros(2))
    >>> w.grad = tl.tensor([-3.0, 0.5])
    >>> nn.utils.clip_grad_value_([w], 1.0)
    >>> w.grad
    tensor([-1. ,  0.5])
    """
    clip_value = float(clip_value)
    with tl.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad = p.grad.detach().clamp(-clip_value, clip_value)  # out of place: see above


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (differentiable).

    >>> nn.utils.parameters_to_vector(nn.Linear(2, 3).parameters()).shape
    (9,)
    """
    params = _as_list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: no parameters given")
    return tl.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D ``vec`` into the parameters (inverse of the above).

    >>> lin = nn.Linear(2, 1)
    >>> nn.utils.vector_to_parameters(tl.tensor([1.0, 2.0, 3.0]), lin.parameters())
    >>> lin.weight.tolist(), lin.bias.tolist()
    ([[1.0, 2.0]], [3.0])
    """
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"expected vec to be a 1-D Tensor, got {type(vec).__name__}")
    params = _as_list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise tl.ShapeError(
            f"vector_to_parameters: vec has {vec.numel()} elements, the parameters need {total}"
        )
    offset = 0
    with tl.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset : offset + n].reshape(p.shape).detach().to(p.dtype))
            offset += n
