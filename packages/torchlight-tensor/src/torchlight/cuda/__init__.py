"""``torchlight.cuda``: PyTorch's ``torch.cuda`` queries, answered from the backend registry.

``is_available()`` is True only when the ``cuda`` backend (the torchlight-backend-cuda
distribution) is installed *and* usable here (driver and GPU present, or the backend's CUDA simulator
switched on); it never imports the GPU stack. The backend drives one GPU, so ``device_count()``
is 0 or 1 and ``current_device()`` is 0. Random numbers for every device come from one host
generator (see :mod:`torchlight.tensor.random`), so ``manual_seed``/``manual_seed_all`` seed it,
exactly like :func:`torchlight.manual_seed`.
"""

from ..tensor import random as _random
from ..tensor.backend import registry as _registry
from ..tensor.errors import DeviceUnavailableError
from . import amp

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "get_device_name",
    "synchronize",
    "manual_seed",
    "manual_seed_all",
    "is_bf16_supported",
    "amp",
    "empty_cache",
    "set_device",
]

_NAME = "cuda"


def is_available() -> bool:
    """True when the cuda backend is installed and usable on this machine.

    >>> import torchlight as tl
    >>> isinstance(tl.cuda.is_available(), bool)
    True
    """
    return _registry.backend_usable(_NAME)


def device_count() -> int:
    """1 when :func:`is_available` (the backend drives one GPU), else 0.

    >>> import torchlight as tl
    >>> tl.cuda.device_count() == int(tl.cuda.is_available())
    True
    """
    return 1 if is_available() else 0


def _backend():
    return _registry.get_backend(_NAME)  # raises DeviceUnavailableError with the reason


def current_device() -> int:
    """The index of the current GPU: always 0; raises when cuda is not usable.

    >>> import torchlight as tl
    >>> tl.cuda.current_device() if tl.cuda.is_available() else 0
    0
    """
    _backend()
    return 0


def get_device_name(device=None) -> str:
    """The GPU's name (``"NVIDIA H200"``); raises when cuda is not usable.

    >>> import torchlight as tl
    >>> isinstance(tl.cuda.get_device_name(), str) if tl.cuda.is_available() else True
    True
    """
    if device not in (None, 0, "cuda", "cuda:0") and str(device) not in ("cuda", "cuda:0"):
        raise DeviceUnavailableError(
            f"get_device_name({device!r}): the cuda backend drives one device, index 0"
        )
    backend = _backend()
    return str(getattr(backend, "device_name", backend.name))


def synchronize(device=None) -> None:
    """Wait for queued GPU work to finish; does nothing when cuda is not usable (no work can
    be queued then).

    >>> import torchlight as tl
    >>> tl.cuda.synchronize()
    """
    if not is_available():
        return
    sync = getattr(_backend(), "synchronize", None)
    if sync is not None:
        sync()


def manual_seed(seed: int) -> None:
    """Seed torchlight's generator, which every device draws from (same as ``tl.manual_seed``).

    >>> import torchlight as tl
    >>> tl.cuda.manual_seed(0)
    """
    _random.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Same as :func:`manual_seed` (one generator serves every device).

    >>> import torchlight as tl
    >>> tl.cuda.manual_seed_all(0)
    """
    _random.manual_seed(seed)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: torchlight computes in float32 and float64 only (see ``torchlight.bfloat16``).

    >>> import torchlight as tl
    >>> tl.cuda.is_bf16_supported()
    False
    """
    return False


def empty_cache() -> None:
    """Return the GPU memory the backend holds on to but no tensor uses (its ``empty_cache()``,
    when it has one); nothing to do when cuda is not usable.

    >>> import torchlight as tl
    >>> tl.cuda.empty_cache()
    """
    if not is_available():
        return
    release = getattr(_backend(), "empty_cache", None)
    if release is not None:
        release()


def set_device(device) -> None:
    """Select the current GPU: only index 0 exists (the backend drives one device).

    >>> import torchlight as tl
    >>> tl.cuda.set_device(0) if tl.cuda.is_available() else None
    """
    index = device if isinstance(device, int) else (_device_index(device))
    if index:
        raise DeviceUnavailableError(
            f"set_device({device!r}): the cuda backend drives one device, index 0"
        )
    _backend()


def _device_index(device):
    from ..tensor.device import device as _dev

    return _dev(str(device)).index or 0
