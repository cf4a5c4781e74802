"""``spectral_norm`` (Miyato et al.): divide a weight by its largest singular value ``σ``.

The weight, viewed as a matrix ``W`` of ``shape[dim]`` rows, keeps two unit vectors ``u`` and
``v`` (buffers ``name_u``, ``name_v``). In training mode every forward first runs
``n_power_iterations`` steps of power iteration (without gradient)::

    v ← normalize(Wᵀ u),   u ← normalize(W v)

then ``σ = uᵀ W v`` (differentiable in ``W``, with ``u`` and ``v`` held constant) and the module
sees ``weight = weight_orig / σ``. In eval mode ``u`` and ``v`` are used as they are. Names are
PyTorch's (``weight_orig``, ``weight_u``, ``weight_v``), so GAN discriminator checkpoints match.
"""

import torchlight as tl

from ..parameter import Parameter

__all__ = ["spectral_norm", "remove_spectral_norm"]


def _normalize(x, eps):
    return x / ((x * x).sum().sqrt().clamp(min=eps))


class _SpectralNorm:
    def __init__(self, name, n_power_iterations, dim, eps):
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight):
        if self.dim != 0:
            perm = [self.dim] + [d for d in range(weight.ndim) if d != self.dim]
            weight = weight.permute(*perm)
        return weight.reshape(weight.shape[0], -1)

    def compute(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = module._buffers[self.name + "_u"], module._buffers[self.name + "_v"]
        w = self.matrix(weight)
        if do_power_iteration:
            with tl.no_grad():
                wd = w.detach()
                for _ in range(self.n_power_iterations):
                    v = _normalize(wd.T @ u, self.eps)
                    u = _normalize(wd @ v, self.eps)
                module._buffers[self.name + "_u"], module._buffers[self.name + "_v"] = u, v
        sigma = (u.detach() * (w @ v.detach())).sum()
        return weight / sigma

    def __call__(self, module, args):
        object.__setattr__(module, self.name, self.compute(module, module.training))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Apply spectral normalisation to ``module``'s parameter ``name``; returns the module.
    ``dim`` (the rows of ``W``) defaults to 0, or 1 for transposed convolutions.

    >>> from torchlight.nn.utils import spectral_norm
    >>> sorted(spectral_norm(nn.Linear(5, 3)).state_dict())
    ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if n_power_iterations <= 0:
        raise ValueError(
            f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
        )
    weight = module._parameters.get(name)
    if weight is None:
        raise AttributeError(f"{type(module).__name__} has no parameter {name!r}")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    fn = _SpectralNorm(name, n_power_iterations, dim, eps)
    w = fn.matrix(weight.detach())
    h, width = w.shape
    u = _normalize(tl.randn(h, dtype=weight.dtype, device=weight.device), eps)
    v = _normalize(tl.randn(width, dtype=weight.dtype, device=weight.device), eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    object.__setattr__(module, name, fn.compute(module, True))
    fn.handle = module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo :func:`spectral_norm`: ``name`` becomes an ordinary parameter holding ``W / σ``.

    >>> from torchlight.nn.utils import remove_spectral_norm, spectral_norm
    >>> sorted(remove_spectral_norm(spectral_norm(nn.Linear(5, 3))).state_dict())
    ['bias', 'weight']
    """
    for hook in list(module._forward_pre_hooks.values()):
        if isinstance(hook, _SpectralNorm) and hook.name == name:
            weight = hook.compute(module, False).detach()
            hook.handle.remove()
            del module._parameters[name + "_orig"]
            del module._buffers[name + "_u"], module._buffers[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"spectral_norm of {name!r} not found in {type(module).__name__}")
