"""The four dtypes torchlight supports and PyTorch's promotion rules between them.

``float32`` is the default for floating data, ``int64`` carries indices and labels, ``bool`` is
what comparisons return. Gradients exist only for floating dtypes.
"""

import numpy as np

from .errors import DTypeError

__all__ = ["DType", "float32", "float64", "int64", "bool_", "promote", "as_dtype", "DTYPES"]


class DType:
    """A torchlight dtype: a name, the numpy dtype of its storage, and whether it is floating.

    The four dtypes are ``tl.float32`` (the default for floats), ``tl.float64``, ``tl.int64``
    (the default for ints, and indices) and ``tl.bool``.

    >>> tl.tensor([1, 2]).dtype, tl.tensor([1.0]).dtype, tl.float64.is_floating_point
    (torchlight.int64, torchlight.float32, True)
    """

    __slots__ = ("name", "np", "is_floating_point", "rank")

    def __init__(self, name, np_dtype, is_floating_point, rank):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = is_floating_point
        self.rank = rank  # position in the promotion lattice bool < int64 < float32 < float64

    @property
    def itemsize(self) -> int:
        """Bytes per element (4 for ``float32``, 8 for ``float64`` and ``int64``, 1 for ``bool``).

        >>> tl.float32.itemsize
        4
        """
        return self.np.itemsize

    def __repr__(self):
        return f"torchlight.{self.name}"

    def __reduce__(self):
        return self.name


float32 = DType("float32", np.float32, True, 2)
float64 = DType("float64", np.float64, True, 3)
int64 = DType("int64", np.int64, False, 1)
bool_ = DType("bool", np.bool_, False, 0)

DTYPES = (bool_, int64, float32, float64)
_BY_NP = {d.np: d for d in DTYPES}
_BY_NAME = {d.name: d for d in DTYPES}
_BY_NAME.update({"float": float32, "double": float64, "long": int64, "bool_": bool_})


def as_dtype(dtype) -> DType:
    """Accept a torchlight dtype, a numpy dtype/type or a name; reject what torchlight lacks."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    if dtype is float:
        return float32
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    try:
        npd = np.dtype(dtype)
    except TypeError:
        npd = None
    if npd is not None:
        if npd in _BY_NP:
            return _BY_NP[npd]
        if npd.kind == "f":
            return float32 if npd.itemsize <= 4 else float64
        if npd.kind in "iu":
            return int64
    raise DTypeError(
        f"unsupported dtype {dtype!r}; torchlight supports float32, float64, int64 and bool"
    )


def from_numpy_dtype(npd) -> DType:
    return _BY_NP.get(npd) or as_dtype(npd)


def promote(a: DType, b: DType) -> DType:
    """Result dtype of a binary op between tensors: the higher of the two in the lattice."""
    return a if a.rank >= b.rank else b


def scalar_dtype(value) -> DType:
    """dtype a Python scalar would get as a tensor of its own (PyTorch: float -> float32)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return float32


def promote_scalar(t: DType, value) -> DType:
    """Tensor-with-scalar promotion: a scalar never widens a tensor within the same category."""
    s = scalar_dtype(value)
    if t.is_floating_point or s.rank <= t.rank:
        return t
    return s
