"""``Scalar``: a micrograd-style variable holding one Python float, built on the same engine.

It exists to show (and test) that the engine knows nothing about tensors: the same ``Function``,
``History`` and topological sort that drive ``torchlight.Tensor`` drive this 150-line class.
"""

import math

from .engine import backward as _backward
from .function import Function

__all__ = ["Scalar"]


class Scalar:
    """A differentiable real number. ``Scalar(2.0, requires_grad=True) ** 2`` then ``.backward()``."""

    __slots__ = (
        "data",
        "grad",
        "requires_grad",
        "_history",
        "_retains_grad",
        "name",
        "__weakref__",
    )

    def __init__(self, data, requires_grad: bool = False, name: str = ""):
        self.data = float(data)
        self.grad = None
        self.requires_grad = requires_grad
        self._history = None
        self._retains_grad = False
        self.name = name

    # --- engine protocol -------------------------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        """``True`` when no operation created this value (it was constructed directly); only
        leaves keep ``.grad`` after :meth:`backward`.
        """
        return self._history is None

    @property
    def parents(self):
        """The inputs of the operation that made this value (an empty list for a leaf): the edges
        the engine walks backwards.
        """
        return [] if self._history is None else self._history.parents

    def accumulate_grad(self, g):
        """Add ``g`` into ``.grad`` (the engine calls this for each path that reaches the value)."""
        g = g.data if isinstance(g, Scalar) else float(g)
        self.grad = g if self.grad is None else self.grad + g

    def retain_grad(self):
        """Ask :meth:`backward` to keep ``.grad`` on this computed value too (leaves always
        get it). Returns ``self``.

        >>> from torchlight.autograd import Scalar
        >>> x = Scalar(2.0, requires_grad=True)
        >>> h = (x * 3.0).retain_grad()
        >>> (h * h).backward()
        >>> h.grad
        12.0
        """
        if self._history is not None:
            self._retains_grad = True
            self._history.retain(self)
        return self

    def backward(self, grad=1.0, retain_graph=False):
        r"""Backpropagate from this value: afterwards every leaf ``x`` it depends on holds
        :math:`\partial\,\text{self}/\partial x` (times ``grad``) in ``x.grad``.

        >>> from torchlight.autograd import Scalar
        >>> x = Scalar(3.0, requires_grad=True)
        >>> y = x * x + 2 * x
        >>> y.backward()
        >>> x.grad
        8.0
        """
        _backward(
            self, grad if isinstance(grad, Scalar) else Scalar(grad), retain_graph=retain_graph
        )

    def detach(self):
        """A new leaf with the same value, cut from the graph."""
        return Scalar(self.data)

    def requires_grad_(self, flag=True):
        """Set whether operations on this leaf are recorded; returns ``self``."""
        self.requires_grad = flag
        return self

    # --- finite-difference protocol used by gradcheck --------------------------------------
    def _fd_flat(self):
        return [self.data]

    def _fd_like(self, values):
        return Scalar(values[0])

    def _fd_set(self, i, value):
        self.data = float(value)

    # --- arithmetic ------------------------------------------------------------------------
    def __add__(self, b):
        return Add.apply(self, _wrap(b))

    def __radd__(self, b):
        return Add.apply(_wrap(b), self)

    def __sub__(self, b):
        return Add.apply(self, Neg.apply(_wrap(b)))

    def __rsub__(self, b):
        return Add.apply(_wrap(b), Neg.apply(self))

    def __mul__(self, b):
        return Mul.apply(self, _wrap(b))

    def __rmul__(self, b):
        return Mul.apply(_wrap(b), self)

    def __truediv__(self, b):
        return Mul.apply(self, Inv.apply(_wrap(b)))

    def __rtruediv__(self, b):
        return Mul.apply(_wrap(b), Inv.apply(self))

    def __pow__(self, p):
        return Pow.apply(self, float(p))

    def __neg__(self):
        return Neg.apply(self)

    def exp(self):
        """:math:`e^x` (derivative :math:`e^x`)."""
        return Exp.apply(self)

    def log(self):
        """Natural logarithm (derivative :math:`1/x`)."""
        return Log.apply(self)

    def tanh(self):
        r""":math:`\tanh x` (derivative :math:`1 - \tanh^2 x`)."""
        return Tanh.apply(self)

    def relu(self):
        r""":math:`\max(x, 0)` (derivative 1 for :math:`x > 0`, else 0)."""
        return Relu.apply(self)

    def sigmoid(self):
        r""":math:`\sigma(x) = 1/(1 + e^{-x})` (derivative :math:`\sigma(x)(1 - \sigma(x))`).

        >>> from torchlight.autograd import Scalar
        >>> Scalar(0.0).sigmoid().data
        0.5
        """
        return Sigmoid.apply(self)

    def __repr__(self):
        grad = "" if self.grad is None else f", grad={self.grad:.6g}"
        return f"Scalar({self.data:.6g}{grad})"


def _wrap(x):
    return x if isinstance(x, Scalar) else Scalar(x)


def _out(value):
    s = Scalar.__new__(Scalar)
    s.data, s.grad, s.requires_grad, s._history, s._retains_grad, s.name = (
        value,
        None,
        False,
        None,
        False,
        "",
    )
    return s


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return _out(a.data + b.data)

    @staticmethod
    def backward(ctx, g):
        return g, g


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a.data, b.data)
        return _out(a.data * b.data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return _out(-a.data)

    @staticmethod
    def backward(ctx, g):
        return -g


class Inv(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a.data)
        return _out(1.0 / a.data)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * (-1.0 / (a * a))


class Pow(Function):
    @staticmethod
    def forward(ctx, a, p):
        ctx.save_for_backward(a.data)
        ctx.p = p
        return _out(a.data**p)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        if ctx.p == 0:  # d(x^0)/dx = 0 everywhere; 0.0 ** -1 would raise at x = 0
            return g * 0.0, None
        return g * (ctx.p * a ** (ctx.p - 1)), None


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        y = math.exp(a.data)
        ctx.save_for_backward(y)
        return _out(y)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a.data)
        return _out(math.log(a.data))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * (1.0 / a)


class Tanh(Function):
    @staticmethod
    def forward(ctx, a):
        y = math.tanh(a.data)
        ctx.save_for_backward(y)
        return _out(y)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1.0 - y * y)


class Relu(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a.data)
        return _out(max(a.data, 0.0))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * (1.0 if a > 0 else 0.0)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, a):
        x = a.data
        y = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
        ctx.save_for_backward(y)
        return _out(y)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y * (1.0 - y))
