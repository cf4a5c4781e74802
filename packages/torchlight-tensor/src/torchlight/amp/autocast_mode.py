"""``autocast``: mixed-precision regions, which torchlight accepts only where they change nothing.

Decision table for ``autocast(device_type, dtype=None, enabled=True)`` (``dtype`` defaults to
PyTorch's per device: float16 for ``"cuda"``, bfloat16 otherwise):

* ``enabled=False`` or ``dtype`` float32: an exact no-op (the region runs as written);
* the device type has no usable backend here: a warning and a no-op, as PyTorch does for
  ``autocast("cuda")`` on a machine without CUDA;
* otherwise (a half-precision dtype on a device torchlight runs on): ``DTypeError`` — running
  in float32 silently would change results the program asked to get.
"""

import functools
import warnings

from ..tensor import dtypes
from ..tensor.backend import registry
from ..tensor.device import device as _device
from ..tensor.errors import DTypeError

__all__ = ["autocast", "is_autocast_enabled"]


def is_autocast_enabled(device_type=None) -> bool:
    """False: torchlight never changes dtypes inside an autocast region.

    >>> import torchlight as tl
    >>> tl.amp.is_autocast_enabled()
    False
    """
    return False


class autocast:  # noqa: N801 - PyTorch's name
    """Context manager and decorator for a mixed-precision region (see the module docstring
    for what torchlight does with it).

    >>> import torchlight as tl
    >>> with tl.autocast("cpu", enabled=False):
    ...     y = tl.ones(2) * 2
    >>> with tl.autocast("cpu", dtype=tl.float32):
    ...     y = tl.ones(2) * 2
    >>> tl.autocast("cpu")  # bfloat16 by default
    Traceback (most recent call last):
    ...
    torchlight.tensor.errors.DTypeError: autocast(device_type='cpu', dtype=torchlight.bfloat16): ...
    """

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        device_type = _device(str(device_type)).type
        self.device_type = device_type
        if dtype is None:
            dtype = dtypes.float16 if device_type == "cuda" else dtypes.bfloat16
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        if not self._enabled:
            return
        if isinstance(dtype, dtypes.DType) or not isinstance(dtype, dtypes.UnsupportedDType):
            if dtypes.as_dtype(dtype) is dtypes.float32:
                self._enabled = False
                return
        if not registry.backend_usable(device_type):
            warnings.warn(
                f"autocast(device_type={device_type!r}) was asked for, but no usable {device_type!r} "
                "backend is installed here; autocast is disabled (the region runs in float32)",
                stacklevel=2,
            )
            self._enabled = False
            return
        raise DTypeError(
            f"autocast(device_type={device_type!r}, dtype={dtype!r}): torchlight computes in float32 "
            "and float64 only, so it cannot run this region in reduced precision. Use "
            "autocast(..., enabled=False) or dtype=torchlight.float32 (both run the region as written)."
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper
