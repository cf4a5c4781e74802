"""PyTorch's legacy typed-tensor names: ``tl.FloatTensor``, ``tl.LongTensor``, ...

Each name is a constructor (``tl.LongTensor([1, 2])`` copies data, ``tl.FloatTensor(2, 3)`` makes
an uninitialised 2×3 tensor) and an ``isinstance`` check by dtype
(``isinstance(x, tl.LongTensor)``). torchlight has one integer dtype, so ``IntTensor`` is int64
(PyTorch's is int32). The type strings of ``Tensor.type()`` are in
:mod:`~torchlight.tensor.conveniences`.
"""

from .conveniences import TYPE_NAMES
from .errors import DTypeError
from .factories import empty, tensor
from .tensor import Tensor

__all__ = [
    "FloatTensor",
    "DoubleTensor",
    "LongTensor",
    "IntTensor",
    "BoolTensor",
]


class _TypedTensorMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
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
        name, (), {"dtype": TYPE_NAMES[name], "__doc__": doc, "__module__": "torchlight"}
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
