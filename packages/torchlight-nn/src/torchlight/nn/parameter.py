"""``Parameter``: a tensor that a :class:`~torchlight.nn.Module` learns.

A ``Parameter`` *is* a :class:`~torchlight.Tensor` (a subclass), so layers use it directly in
expressions (``x @ self.weight.T``). The only differences are

* assigning one to a module attribute registers it (``Module.__setattr__`` checks the type), and
* it is a leaf that requires a gradient by default.

Construction takes over the internals of an existing tensor rather than copying it, exactly like
``torch.nn.Parameter(t)``: the parameter shares ``t``'s storage. ``Tensor`` keeps its state in
``__slots__`` (``_td``, ``backend``, ``dtype``, ...) and also has a ``__dict__`` slot, so a subclass
instance needs no extra layout and ``Tensor.__new__(Parameter)`` followed by copying the slot
values yields a fully formed tensor. Operations on a parameter return plain ``Tensor`` objects
(``_results_as = Tensor``, as PyTorch's ``Parameter`` disables subclass propagation), so only
the leaf is a ``Parameter``.
"""

import torchlight as tl
from torchlight import Tensor

__all__ = ["Parameter", "Buffer"]

# The slot values that make up a tensor's identity as a view plus its autograd leaf state.
_SLOTS = ("_td", "backend", "dtype", "_version", "_base")


class Parameter(Tensor):
    """A learnable tensor: ``Parameter(data=None, requires_grad=True)``.

    ``data`` defaults to an empty float32 tensor of shape ``(0,)``. The parameter shares storage
    with ``data`` (no copy) and is always a leaf: any autograd history of ``data`` is dropped.

    >>> p = nn.Parameter(tl.ones(2))
    >>> p
    Parameter containing:
    tensor([1., 1.], requires_grad=True)
    >>> p.is_leaf
    True
    """

    __slots__ = ()
    _results_as = Tensor

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = tl.empty(0)
        if not isinstance(data, Tensor):
            data = tl.tensor(data)
        self = Tensor.__new__(cls)
        for name in _SLOTS:
            setattr(self, name, getattr(data, name))
        self.grad = None
        self._history = None  # a parameter is a leaf, whatever produced ``data``
        self._retains_grad = False
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)  # raises DTypeError for integer data, like PyTorch
        return self

    def __init__(self, data=None, requires_grad=True):
        # Tensor.__init__ builds from Python data; everything was done in __new__.
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self):
        # Pickling is deliberately unsupported across torchlight (checkpoints are .npz + JSON);
        # this keeps copy.deepcopy working by rebuilding from a copy of the data.
        return (_rebuild, (self.detach().to_numpy(), self.requires_grad, self.device))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            out.grad = self.grad.detach().clone()
        memo[id(self)] = out
        return out


def _rebuild(array, requires_grad, device):
    return Parameter(tl.tensor(array, device=device), requires_grad)


class Buffer(Tensor):
    """Marker type for ``module.x = Buffer(t)`` (PyTorch 2.5's ``nn.Buffer``).

    Assigning a ``Buffer`` registers ``t`` as a buffer; the module stores the plain tensor, not
    this wrapper. ``persistent=False`` keeps it out of ``state_dict()``.

    >>> class Counter(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.count = nn.Buffer(tl.zeros(1))
    >>> list(Counter().state_dict())
    ['count']
    """

    __slots__ = ()
    _results_as = Tensor

    def __new__(cls, data, persistent=True):
        self = Tensor.__new__(cls)
        for name in _SLOTS:
            setattr(self, name, getattr(data, name))
        self.grad = None
        self._history = None
        self._retains_grad = False
        self.requires_grad = data.requires_grad
        self.__dict__["persistent"] = persistent
        return self

    def __init__(self, data, persistent=True):
        pass

    def as_tensor(self):
        """The plain tensor (same storage) that the module actually stores."""
        return (
            self.detach().requires_grad_(self.requires_grad)
            if self.requires_grad
            else self.detach()
        )
