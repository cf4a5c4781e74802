"""``torchlight.accelerator``: is there an accelerator, and which (PyTorch's ``torch.accelerator``).

An accelerator is a usable backend whose storage does not live in host memory (it lacks the
``"host_memory"`` capability): a GPU. The answers come from the backend registry, so they are
true for this machine: installed *and* usable. Host-memory backends such as ``numba`` are fast
CPU code, not accelerators.
"""

from .tensor.backend import registry
from .tensor.backend.protocol import HOST_MEMORY
from .tensor.device import device

__all__ = ["is_available", "current_accelerator", "device_count"]


def _accelerators():
    out = []
    for name in registry.available_backends():
        try:
            backend = registry.get_backend(name)
        except Exception:  # an unusable backend is simply not an accelerator here
            continue
        if HOST_MEMORY not in backend.capabilities:
            out.append(getattr(backend, "device", name))
    return out


def is_available() -> bool:
    """True when a usable accelerator backend is installed.

    >>> import torchlight as tl
    >>> isinstance(tl.accelerator.is_available(), bool)
    True
    """
    return bool(_accelerators())


def current_accelerator():
    """The accelerator's :class:`~torchlight.device` (the first, by name), or ``None``.

    >>> import torchlight as tl
    >>> acc = tl.accelerator.current_accelerator()
    >>> acc is None or acc.type != "cpu"
    True
    """
    found = _accelerators()
    return device(found[0]) if found else None


def device_count() -> int:
    """Number of accelerator devices: one per usable accelerator backend (each drives one).

    >>> import torchlight as tl
    >>> tl.accelerator.device_count() >= 0
    True
    """
    return len(_accelerators())
