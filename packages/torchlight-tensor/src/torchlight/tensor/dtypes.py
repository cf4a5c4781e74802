"""The four dtypes torchlight supports and PyTorch's promotion rules between them.

``float32`` is the default for floating data, ``int64`` carries indices and labels, ``bool`` is
what comparisons return. Gradients exist only for floating dtypes.
"""

import math

import numpy as np

from .errors import DTypeError

__all__ = [
    "DType",
    "float32",
    "float64",
    "int64",
    "bool_",
    "promote",
    "as_dtype",
    "DTYPES",
    "UnsupportedDType",
    "float16",
    "bfloat16",
    "get_default_dtype",
    "set_default_dtype",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "fitting",
]


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


class UnsupportedDType:
    """A PyTorch dtype name torchlight knows but does not compute in (``tl.float16``,
    ``tl.half``, ``tl.bfloat16``): it exists so programs that *mention* it import and compare,
    and any use (``dtype=``, ``.to``, ``autocast``) raises a :class:`DTypeError` that says so.

    >>> import torchlight as tl
    >>> tl.float16
    torchlight.float16
    >>> tl.zeros(2, dtype=tl.float16)
    Traceback (most recent call last):
    ...
    torchlight.tensor.errors.DTypeError: torchlight does not compute in float16: ...
    """

    __slots__ = ("name", "itemsize")
    is_floating_point = True

    def __init__(self, name, itemsize):
        self.name = name
        self.itemsize = itemsize

    def __repr__(self):
        return f"torchlight.{self.name}"

    def __reduce__(self):
        return self.name


float16 = UnsupportedDType("float16", 2)
bfloat16 = UnsupportedDType("bfloat16", 2)
_UNSUPPORTED = {"float16": float16, "half": float16, "bfloat16": bfloat16}


def unsupported(dtype):
    """The :class:`DTypeError` for a dtype torchlight does not compute in."""
    return DTypeError(
        f"torchlight does not compute in {dtype.name}: its floating dtypes are float32 (the "
        "default) and float64. Use float32 (with autocast: enabled=False or dtype=torchlight.float32)."
    )


def as_dtype(dtype) -> DType:
    """Accept a torchlight dtype, a numpy dtype/type or a name; reject what torchlight lacks."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, np.dtype):  # an array's own dtype (from_numpy, a batch): one lookup
        known = _BY_NP.get(dtype)
        if known is not None:
            return known
    if isinstance(dtype, str) and dtype in _UNSUPPORTED:
        dtype = _UNSUPPORTED[dtype]
    if isinstance(dtype, UnsupportedDType):
        raise unsupported(dtype)
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


def names_a_dtype(obj) -> bool:
    """True when ``obj`` spells a dtype (a DType, a half-precision name, a Python/numpy type or a
    dtype name) rather than a device — how ``Tensor.to(x)`` tells ``to(dtype)`` from ``to(device)``."""
    if isinstance(obj, (DType, UnsupportedDType, type, np.dtype)):
        return True
    return isinstance(obj, str) and (obj in _BY_NAME or obj in _UNSUPPORTED)


def from_numpy_dtype(npd) -> DType:
    return _BY_NP.get(npd) or as_dtype(npd)


def promote(a: DType, b: DType) -> DType:
    """Result dtype of a binary op between tensors: the higher of the two in the lattice."""
    return a if a.rank >= b.rank else b


def scalar_dtype(value) -> DType:
    """dtype a Python scalar would get as a tensor of its own (float -> the default dtype)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return _default[0]


def promote_scalar(t: DType, value) -> DType:
    """Tensor-with-scalar promotion: a scalar never widens a tensor within the same category."""
    s = scalar_dtype(value)
    if t.is_floating_point or s.rank <= t.rank:
        return t
    return s


_default = [float32]  # the default floating dtype; one element so it can be rebound in place


def get_default_dtype() -> DType:
    """The dtype of new floating tensors (Python floats, ``zeros``, ``rand``, integer tensors
    promoted by ``mean``/``exp``...): float32 unless :func:`set_default_dtype` changed it.

    >>> import torchlight as tl
    >>> tl.get_default_dtype()
    torchlight.float32
    """
    return _default[0]


def set_default_dtype(dtype) -> None:
    """Make ``dtype`` (float32 or float64) the default floating dtype, as in PyTorch; a
    process-wide setting. Tensors that exist keep their dtype.

    >>> import torchlight as tl
    >>> tl.set_default_dtype(tl.float64)
    >>> tl.zeros(1).dtype, tl.tensor([0.5]).dtype
    (torchlight.float64, torchlight.float64)
    >>> tl.set_default_dtype(tl.float32)
    """
    dt = as_dtype(dtype)
    if not dt.is_floating_point:
        raise DTypeError(
            f"set_default_dtype: only floating dtypes (float32, float64) can be the default, got {dt}"
        )
    _default[0] = dt


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record PyTorch's float32 matmul precision hint (``"highest"``, ``"high"``, ``"medium"``).

    In PyTorch ``"high"``/``"medium"`` *allow* faster, less precise internal formats (TF32,
    bfloat16); torchlight's products are always full float32, which every setting permits, so
    the value is only remembered for :func:`get_float32_matmul_precision`.

    >>> import torchlight as tl
    >>> tl.set_float32_matmul_precision("high")
    >>> tl.get_float32_matmul_precision()
    'high'
    >>> tl.set_float32_matmul_precision("highest")
    """
    if precision not in _MATMUL_PRECISIONS:
        raise DTypeError(
            f"set_float32_matmul_precision: expected one of {_MATMUL_PRECISIONS}, got {precision!r}"
        )
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    """The last value given to :func:`set_float32_matmul_precision` (``"highest"`` by default).

    >>> import torchlight as tl
    >>> tl.get_float32_matmul_precision() in ("highest", "high", "medium")
    True
    """
    return _matmul_precision[0]


_INT_RANGES: dict = {}  # dtype -> (min, max) for integer dtypes, () for the others


def fitting(value, dtype):
    """``value`` (a Python number written into a tensor of ``dtype``: ``x[i] = v``, ``fill_``,
    ``tl.full``) if the dtype can hold it: an integer dtype raises for a value outside its range,
    or an inf or NaN, as PyTorch does (numpy would write a wrapped or undefined value without a
    word). A float written into an integer dtype is truncated, as in PyTorch.

    >>> import torchlight as tl
    >>> tl.full((2,), float("nan"), dtype=tl.int64)
    Traceback (most recent call last):
      ...
    torchlight.tensor.errors.DTypeError: value nan cannot be converted to type torchlight.int64 without overflow: it holds integers in [-9223372036854775808, 9223372036854775807] (use a float tensor for other values)
    """
    bounds = _INT_RANGES.get(dtype)
    if bounds is None:
        info = np.iinfo(dtype.np) if np.dtype(dtype.np).kind in "iu" else None
        bounds = _INT_RANGES[dtype] = (int(info.min), int(info.max)) if info else ()
    if not bounds or type(value) is bool:
        return value
    if not (math.isfinite(value) and bounds[0] <= value <= bounds[1]):
        raise DTypeError(
            f"value {value!r} cannot be converted to type {dtype} without overflow: it holds "
            f"integers in [{bounds[0]}, {bounds[1]}] (use a float tensor for other values)"
        )
    return value
