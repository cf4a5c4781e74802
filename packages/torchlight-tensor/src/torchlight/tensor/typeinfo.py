"""``finfo`` and ``iinfo``: the numerical limits of a dtype, as PyTorch spells them.

``torchlight.finfo(torchlight.float32).eps`` is the gap between 1.0 and the next float32 —
the constant numerical code adds to a denominator. The figures come from numpy's ``finfo`` /
``iinfo`` of the dtype's storage type, so they are the machine's IEEE values.
"""

import numpy as np

from .dtypes import as_dtype, get_default_dtype
from .errors import DTypeError

__all__ = ["finfo", "iinfo"]


class finfo:  # noqa: N801 - PyTorch's name
    """Limits of a floating dtype (default: the default dtype, :func:`torchlight.get_default_dtype`).

    Attributes: ``bits``, ``eps`` (smallest ``e`` with ``1 + e != 1``), ``max``, ``min``
    (``-max``), ``tiny`` / ``smallest_normal`` (smallest positive normal number),
    ``resolution`` (``10 ** -precision``) and ``dtype`` (the dtype's name).

    >>> import torchlight as tl
    >>> tl.finfo(tl.float32).eps
    1.1920928955078125e-07
    >>> tl.finfo(tl.float64).bits, tl.finfo().dtype
    (64, 'float32')
    """

    def __init__(self, dtype=None):
        dt = get_default_dtype() if dtype is None else as_dtype(dtype)
        if not dt.is_floating_point:
            raise DTypeError(
                f"finfo needs a floating dtype, got {dt!r}; use iinfo for integer dtypes"
            )
        info = np.finfo(dt.np)
        self.dtype = dt.name
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # exactly 1e-06 for float32, as PyTorch

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
            f"smallest_normal={self.tiny}, tiny={self.tiny}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """Limits of an integer dtype: ``bits``, ``min``, ``max`` and ``dtype`` (its name).

    >>> import torchlight as tl
    >>> tl.iinfo(tl.int64).max
    9223372036854775807
    """

    def __init__(self, dtype):
        dt = as_dtype(dtype)
        if dt.is_floating_point or dt.name == "bool":
            raise DTypeError(
                f"iinfo needs an integer dtype, got {dt!r}; use finfo for floating dtypes"
            )
        info = np.iinfo(dt.np)
        self.dtype = dt.name
        self.bits = int(info.bits)
        self.min = int(info.min)
        self.max = int(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
