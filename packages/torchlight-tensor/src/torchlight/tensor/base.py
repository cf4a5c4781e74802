"""``TensorBase``: what every tensor is made of, and which class a new tensor gets.

The public :class:`~torchlight.Tensor` (``tensor.py``) is ``TensorBase`` plus the operations.
The modules below ``tensor.py`` (``dispatch``, ``creation``, ``functions/*``) build and check
tensors through this class, never through ``Tensor`` itself, so the tensor core imports strictly
bottom-up: ``base`` → ``dispatch`` → ``creation`` → ``functions`` → ``tensor`` → ``factories``.

A new tensor takes its class from a tensor it is made *like* (an operand of the op, or the
tensor whose method made it), as in PyTorch: an op on an instance of a user's subclass of
``Tensor`` returns that subclass. A subclass that wants plain results (``nn.Parameter``: only
the leaf is a parameter) names the class in ``_results_as``; the factories pass ``Tensor``.
:func:`torchlight.tensor.dispatch.result_class` applies the rule.

>>> import torchlight as tl
>>> from torchlight.tensor.base import TensorBase
>>> isinstance(tl.ones(2), TensorBase)
True
"""

from typing import TYPE_CHECKING, Any

__all__ = ["TensorBase", "STATE"]

STATE = (
    "_td",
    "backend",
    "dtype",
    "requires_grad",
    "grad",
    "_history",
    "_retains_grad",
    "_version",
    "_base",
)
"""The slots that make a tensor (set by ``dispatch.wrap``; copying them copies the tensor's
identity: ``Tensor(data)`` takes over a freshly built tensor this way)."""

if TYPE_CHECKING:
    from .dtypes import DType
    from .storage import TensorData

    class _Slots:
        """The types of the slots, for readers and type checkers (set by ``dispatch.wrap``). A
        separate class only while type checking: annotations in the class body would give every
        tensor an ``__annotations__`` attribute."""

        _td: TensorData
        backend: Any  # a Backend (torchlight.tensor.backend.protocol)
        dtype: DType
        requires_grad: bool
        grad: Any  # a Tensor or None
        _history: Any  # autograd's record of the Function call that produced this tensor
        _retains_grad: bool
        _version: list  # [count], shared by views of one storage
        _base: Any  # the tensor whose storage a view shares, or None
else:
    _Slots = object


class TensorBase(_Slots):
    """The state of a tensor: a strided view (``_td``: storage, shape, strides, offset) on a
    ``backend``, its ``dtype``, and what autograd records (``requires_grad``, ``grad``,
    ``_history``, the version counter shared by views, the ``_base`` of a view).

    Not instantiated directly: :class:`~torchlight.Tensor` is the class users meet.
    """

    __slots__ = (*STATE, "__weakref__", "__dict__")

    # Post-accumulate-grad hooks: rare, so a class default, and the list in the instance's
    # __dict__ once one is registered (an unset slot would raise inside every leaf's
    # accumulate_grad: 0.4 µs per leaf per backward).
    _hooks = None  # type: list | None

    # The class of tensors that ops on instances of this class return (None: this class). No
    # annotation here (see _Slots): it would give every tensor class an ``__annotations__``.
    _results_as = None  # type: type | None
