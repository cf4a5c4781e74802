"""Making tensors from host data and fill values: what the factories, the ops and the ``Tensor``
methods (``new_zeros``, ``Tensor(data)``) share.

Each function takes a backend object (not a device name: resolving ``device=`` is the public
factories' job) and ``like``, the tensor or tensor class whose class the new tensor gets (see
:func:`~torchlight.tensor.dispatch.result_class`), so this module sits below ``tensor.py`` and never
names the public class. Data is built on the host with numpy and handed to the backend once;
a backend with the ``fill`` capability writes constant tensors in place instead.

>>> import numpy as np, torchlight as tl
>>> from torchlight.tensor.creation import filled, from_numpy_on
>>> cpu = tl.get_backend("cpu")
>>> filled((2,), 7, tl.int64, cpu, like=tl.Tensor)
tensor([7, 7])
>>> from_numpy_on(np.arange(3.0), cpu, like=tl.Tensor).dtype
torchlight.float64
"""

import math
from typing import Any

import numpy as np

from . import dtypes
from .backend.bounds import value_range
from .backend.protocol import FILL
from .base import TensorBase
from .dispatch import MAX_NUMEL, alloc, set_index_range, wrap
from .errors import DTypeError, OutOfMemoryError, ShapeError
from .indexing import contiguous_strides
from .storage import INFERRED_MAX, TensorData

__all__ = [
    "size_of",
    "from_numpy_on",
    "filled",
    "empty",
    "from_data",
    "host_data",
    "host_array",
]


_SIZES: dict = {}  # a factory's size arguments of plain ints -> the checked shape


def size_of(size: tuple) -> tuple[int, ...]:
    """A size given as separate ints or one tuple/list (``zeros(2, 3)``, ``zeros((2, 3))``),
    checked: no negative dimension, no more elements than any backend can address.

    A size of plain ints is checked once and kept (up to ``INFERRED_MAX`` of them, as
    :func:`~torchlight.tensor.storage.infer_shape`'s shapes): a data loader asks for the same
    few sizes for every sample, and the checks cost a fifth of a small ``zeros``."""
    try:
        known = _SIZES.get(size)
    except TypeError:  # a list among the arguments: checked below
        known = None
    if known is not None:
        return known
    given = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    shape = tuple(map(int, given))
    if shape and min(shape) < 0:
        raise ShapeError(f"negative dimension in size {shape}")
    n = math.prod(shape)
    if n > MAX_NUMEL:  # before numpy builds host data for it (its message names no size)
        raise OutOfMemoryError(
            f"a tensor of size {shape} would have {n} elements, more than any "
            f"device can address ({MAX_NUMEL}); use a smaller size"
        )
    if type(given) is tuple and len(_SIZES) < INFERRED_MAX and all(type(s) is int for s in given):
        _SIZES[size] = shape  # (ints, or one tuple of ints: never a tensor, kept alive as a key)
    return shape


def from_numpy_on(
    array: np.ndarray,
    backend: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    *,
    like: Any,
    bounds: tuple[int, int] | None = None,
) -> Any:
    """A tensor on ``backend`` with a copy (or, on a host-memory backend, a share) of the
    C-contiguous ``array``, converted to ``dtype`` when given. An int64 tensor remembers its
    value range, so index checks need no read-back: ``bounds`` (``(lo, hi)``, from a caller that
    knows them) or else the values' own."""
    dt = dtypes.as_dtype(array.dtype) if dtype is None else dtypes.as_dtype(dtype)
    t = wrap(_data_on(array, dt, backend), backend, dt, like)
    if dt is dtypes.int64 and array.size:
        set_index_range(t, *(bounds or value_range(array)))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _data_on(array: np.ndarray, dt: Any, backend: Any) -> TensorData:
    if array.dtype != dt.np:
        array = array.astype(dt.np)
    shape = array.shape
    return TensorData.of(
        backend.from_numpy(array), shape, contiguous_strides(shape), 0, math.prod(shape)
    )


def filled(
    shape: tuple[int, ...],
    value: Any,
    dtype: Any,
    backend: Any,
    requires_grad: bool = False,
    *,
    like: Any,
) -> Any:
    """A tensor of ``shape`` on ``backend`` with every element ``value``."""
    dt = dtypes.as_dtype(dtype)
    if not dt.is_floating_point:
        value = dtypes.fitting(value, dt)  # NaN or 2**63 into int64 raise, as in PyTorch
    if FILL in backend.capabilities:  # written where the data lives: one call, no host copy
        t = alloc(shape, dt, backend, like)
        backend.fill(t._td, value)
        stored = value
    else:
        n = math.prod(shape)
        flat = np.empty(n, dt.np)
        flat.fill(value)  # a fifth of np.copyto's cost; the value fits dt (checked above)
        t = wrap(TensorData.packed(backend.from_numpy(flat), shape, n, None), backend, dt, like)
        stored = flat.item(0) if n else None  # the value as numpy cast it
    if dt is dtypes.int64 and t._td.size:  # one value: its range needs no pass over the data
        set_index_range(t, int(stored), int(stored))
    return t.requires_grad_(True) if requires_grad else t


def empty(
    shape: tuple[int, ...], dtype: Any, backend: Any, requires_grad: bool = False, *, like: Any
) -> Any:
    """An uninitialised tensor of ``shape`` on ``backend``."""
    t = alloc(shape, dtypes.as_dtype(dtype), backend, like)
    return t.requires_grad_(True) if requires_grad else t


def host_array(data: Any, dtype: Any = None) -> tuple[np.ndarray, Any]:
    """``data`` (nested lists, numbers, numpy arrays, tensors) as a new C-contiguous host array,
    and the dtype the tensor gets: ``dtype`` if given, else the default float dtype for Python
    floats, int64 for ints, bool for bools, and a float array's own dtype."""
    if isinstance(data, TensorBase):
        data = _numpy_of(data)
    if isinstance(data, (np.ndarray, np.generic)):
        arr = np.array(data, copy=True)
        if arr.dtype.kind == "f" and dtype is None:
            dtype = dtypes.as_dtype(arr.dtype)
    else:
        try:
            arr = np.array(_unwrap(data))
        except ValueError as exc:
            raise ShapeError(f"tensor(): data has an irregular (ragged) shape: {exc}") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise DTypeError(
            f"tensor(): cannot build a tensor from {type(data).__name__} data of dtype {arr.dtype}"
        )
    if dtype is None:
        dtype = dtypes.get_default_dtype() if arr.dtype.kind in "fc" else dtypes.as_dtype(arr.dtype)
    # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
    if not arr.flags.c_contiguous:
        arr = np.array(arr, order="C")
    return arr, dtype


def _numpy_of(t: Any) -> np.ndarray:
    return t.detach().numpy()


_NUMBERS = (int, float, bool)


def _unwrap(data: Any) -> Any:
    if isinstance(data, TensorBase):
        return _numpy_of(data)
    if isinstance(data, (list, tuple)):
        # a row of Python numbers holds no tensor: one pass of type checks instead of a call per
        # element (a dataset's tl.tensor([stoi[c] for c in word]) runs this per sample)
        if all(type(d) in _NUMBERS for d in data):
            return data
        return [_unwrap(d) for d in data]
    return data


def host_data(data: Any, dtype: Any, backend: Any) -> TensorData:
    """``data`` converted to ``dtype`` as by :func:`from_data`, as bare storage on ``backend``
    (no tensor, no value range): the source of a copy (``copy_``, ``x[i] = value``)."""
    arr, dtype = host_array(data, dtype)
    return _data_on(arr, dtypes.as_dtype(dtype), backend)


def from_data(
    data: Any, dtype: Any, backend: Any, requires_grad: bool = False, *, like: Any
) -> Any:
    """A new tensor on ``backend`` holding a copy of ``data`` (see :func:`host_array`)."""
    arr, dtype = host_array(data, dtype)
    return from_numpy_on(arr, backend, dtype, requires_grad, like=like)
