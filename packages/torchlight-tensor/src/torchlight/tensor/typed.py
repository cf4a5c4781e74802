"""PyTorch's legacy typed-tensor names: ``tl.FloatTensor``, ``tl.LongTensor``, ... and the type
strings of ``Tensor.type()``.

Each name is a constructor (``tl.LongTensor([1, 2])`` copies data, ``tl.FloatTensor(2, 3)`` makes
an uninitialised 2×3 tensor) and an ``isinstance`` check by dtype
(``isinstance(x, tl.LongTensor)``). The strings are PyTorch's own (``"torch.FloatTensor"``; a
device that does not keep its data in host memory adds its type: ``"torch.cuda.FloatTensor"``)
so comparisons written for PyTorch hold. torchlight has one integer dtype, so ``IntTensor`` is
int64 (PyTorch's is int32).
"""

from . import dtypes
from .backend.protocol import host_memory
from .errors import DTypeError

__all__ = [
    "FloatTensor",
    "DoubleTensor",
    "LongTensor",
    "IntTensor",
    "BoolTensor",
    "type_string",
    "dtype_of_type_string",
]

_NAMES = {
    "FloatTensor": dtypes.float32,
    "DoubleTensor": dtypes.float64,
    "LongTensor": dtypes.int64,
    "IntTensor": dtypes.int64,
    "BoolTensor": dtypes.bool_,
}
_NAME_OF = {
    dtypes.float32: "FloatTensor",
    dtypes.float64: "DoubleTensor",
    dtypes.int64: "LongTensor",
    dtypes.bool_: "BoolTensor",
}


class _TypedTensorMeta(type):
    def __instancecheck__(cls, obj):
        from .tensor import Tensor

        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        from .factories import empty, tensor

        if not args:
            return empty(0, dtype=cls.dtype, device=device)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return empty(*args, dtype=cls.dtype, device=device)
        if len(args) == 1:
            return tensor(args[0], dtype=cls.dtype, device=device)
        raise DTypeError(
            f"{cls.__name__}(...): pass sizes (ints) or one piece of data, got {args!r}"
        )

    def __repr__(cls):
        return f"<class 'torchlight.{cls.__name__}'>"


def _typed(name, doc):
    return _TypedTensorMeta(
        name, (), {"dtype": _NAMES[name], "__doc__": doc, "__module__": "torchlight"}
    )


FloatTensor = _typed(
    "FloatTensor",
    """float32 tensors: ``FloatTensor(data)`` copies, ``FloatTensor(2, 3)``
is uninitialised; ``isinstance(x, FloatTensor)`` tests the dtype.

>>> import torchlight as tl
>>> tl.FloatTensor([1, 2]).dtype, isinstance(tl.ones(1), tl.FloatTensor)
(torchlight.float32, True)
""",
)
DoubleTensor = _typed(
    "DoubleTensor",
    """float64 tensors (see :class:`FloatTensor`).

>>> import torchlight as tl
>>> tl.DoubleTensor(2).shape
(2,)
""",
)
LongTensor = _typed(
    "LongTensor",
    """int64 tensors (see :class:`FloatTensor`).

>>> import torchlight as tl
>>> tl.LongTensor([1, 2]).tolist()
[1, 2]
""",
)
IntTensor = _typed(
    "IntTensor",
    """Integer tensors; torchlight's only integer dtype is int64, so this is
:class:`LongTensor`'s dtype (PyTorch's is int32).

>>> import torchlight as tl
>>> tl.IntTensor([3]).dtype
torchlight.int64
""",
)
BoolTensor = _typed(
    "BoolTensor",
    """bool tensors (see :class:`FloatTensor`).

>>> import torchlight as tl
>>> tl.BoolTensor([1, 0]).tolist()
[True, False]
""",
)


def type_string(t):
    """PyTorch's type string of tensor ``t``: ``"torch.FloatTensor"``, ``"torch.cuda.LongTensor"``."""
    name = _NAME_OF[t.dtype]
    if host_memory(t.backend):
        return f"torch.{name}"
    return f"torch.{t.device.type}.{name}"


def dtype_of_type_string(s):
    """The dtype a type string names (``"torch.LongTensor"``, ``"torchlight.FloatTensor"``,
    ``"torch.cuda.FloatTensor"``), and the device type when it names one (else ``None``)."""
    parts = s.split(".")
    if len(parts) in (2, 3) and parts[0] in ("torch", "torchlight") and parts[-1] in _NAMES:
        return _NAMES[parts[-1]], (parts[1] if len(parts) == 3 else None)
    raise DTypeError(
        f"unknown tensor type {s!r}; expected e.g. 'torch.FloatTensor', 'torch.LongTensor', "
        "'torch.DoubleTensor' or 'torch.BoolTensor' (or a dtype)"
    )
