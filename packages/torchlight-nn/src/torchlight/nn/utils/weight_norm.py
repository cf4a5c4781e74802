"""``weight_norm`` (Salimans & Kingma): reparameterise a weight as ``w = g · v / ‖v‖``.

The parameter ``name`` (``"weight"``) is replaced by ``name_g`` (the magnitude, the norm of ``w``
over every dim except ``dim``, so one value per output unit for ``dim=0``) and ``name_v`` (the
direction). A forward pre-hook recomputes ``w`` from them before every forward, so gradients
reach ``g`` and ``v``. ``dim=None`` uses one norm over the whole tensor. These are PyTorch's
``torch.nn.utils.weight_norm`` names, so state dicts carry ``weight_g`` / ``weight_v``.
"""

from ..parameter import Parameter

__all__ = ["weight_norm", "remove_weight_norm"]


def _norm_except_dim(v, dim):
    if dim is None:
        return (v * v).sum().sqrt()
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return (v * v).sum(others, keepdim=True).sqrt() if others else v.abs()


class _WeightNorm:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, args):
        object.__setattr__(module, self.name, self.compute(module))


def weight_norm(module, name="weight", dim=0):
    """Apply weight normalisation to ``module``'s parameter ``name``; returns the module.

    >>> from torchlight.nn.utils import weight_norm
    >>> m = weight_norm(nn.Linear(4, 3))
    >>> sorted(m.state_dict()), m.weight_g.shape
    (['bias', 'weight_g', 'weight_v'], (3, 1))
    """
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _WeightNorm) and hook.name == name:
            raise RuntimeError(
                f"Cannot register two weight_norm hooks on the same parameter {name}"
            )
    weight = module._parameters.get(name)
    if weight is None:
        raise AttributeError(f"{type(module).__name__} has no parameter {name!r}")
    fn = _WeightNorm(name, dim)
    del module._parameters[name]
    module.register_parameter(
        name + "_g", Parameter(_norm_except_dim(weight.detach(), dim).clone())
    )
    module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
    object.__setattr__(module, name, fn.compute(module))
    handle = module.register_forward_pre_hook(fn)
    fn.handle = handle
    return module


def remove_weight_norm(module, name="weight"):
    """Undo :func:`weight_norm`: ``name`` becomes an ordinary parameter holding ``g · v/‖v‖``.

    >>> from torchlight.nn.utils import remove_weight_norm, weight_norm
    >>> sorted(remove_weight_norm(weight_norm(nn.Linear(4, 3))).state_dict())
    ['bias', 'weight']
    """
    for hook in list(module._forward_pre_hooks.values()):
        if isinstance(hook, _WeightNorm) and hook.name == name:
            weight = hook.compute(module).detach()
            hook.handle.remove()
            del module._parameters[name + "_g"], module._parameters[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"weight_norm of {name!r} not found in {type(module).__name__}")
