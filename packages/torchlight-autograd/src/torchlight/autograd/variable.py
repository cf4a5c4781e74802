"""``Variable``: PyTorch's pre-0.4 autograd wrapper, kept as PyTorch keeps it — as a no-op.

Since PyTorch 0.4 every tensor records history itself and ``Variable(t)`` simply returns ``t``
(with ``requires_grad`` set when asked); older programs and tutorials still write it. The same
holds here for any variable of the engine (a ``torchlight.Tensor``, a ``Scalar``), and
``isinstance(x, Variable)`` is true for every such variable, as it is for every tensor in PyTorch.
"""

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        # the engine's variable protocol (see torchlight.autograd): what a Variable used to add
        return hasattr(obj, "requires_grad") and hasattr(obj, "_history")


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)`` returns ``data`` itself, marked as requiring grad
    when ``requires_grad`` is true (``volatile`` is accepted and ignored, as in PyTorch).

    >>> from torchlight.autograd import Scalar, Variable
    >>> x = Scalar(2.0)
    >>> Variable(x, requires_grad=True) is x, x.requires_grad
    (True, True)
    >>> isinstance(x, Variable)
    True
    """

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not (hasattr(data, "requires_grad") and hasattr(data, "_history")):
            raise TypeError(
                f"Variable(data) needs a tensor, got {type(data).__name__}; "
                "make one first, e.g. torchlight.tensor(data)"
            )
        if requires_grad:
            data.requires_grad_(True)
        return data
