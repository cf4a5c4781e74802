"""torchlight's exception family for tensor-level mistakes.

Every class derives from :class:`TorchlightError` *and* from the built-in a PyTorch user would
expect, so ``except ValueError`` and ``except torchlight.TorchlightError`` both work. Messages say
what was wrong (with the shapes, dtypes, indices involved) and what to do about it.
"""

from torchlight.autograd.errors import AutogradError, TorchlightError

__all__ = [
    "TorchlightError",
    "AutogradError",
    "ShapeError",
    "DTypeError",
    "TensorIndexError",
    "BackendError",
    "DeviceUnavailableError",
    "OutOfMemoryError",
]


class ShapeError(TorchlightError, ValueError):
    """Shapes that cannot broadcast, multiply, view or concatenate."""


class DTypeError(TorchlightError, TypeError):
    """A dtype that an operation does not accept (e.g. a float tensor used as an index)."""


class TensorIndexError(TorchlightError, IndexError):
    """An index out of range for the dimension it indexes."""


class BackendError(TorchlightError, RuntimeError):
    """Unknown backend, a backend that failed to load, or tensors on different backends."""


class DeviceUnavailableError(BackendError):
    """The backend exists but its hardware or runtime is missing (e.g. CUDA without a GPU)."""


class OutOfMemoryError(TorchlightError, MemoryError):
    """A tensor too large to allocate: more bytes than the device has, or a size that overflows."""
