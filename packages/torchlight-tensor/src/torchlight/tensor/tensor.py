"""``Tensor``: a strided view on backend storage, plus what autograd needs to know about it.

The methods are thin: each one names the differentiable function that does the work (in
``functions/``), so a reader can trace ``a + b`` as ``Tensor.__add__`` → ``pointwise.Add`` →
``dispatch.zip_op`` → ``Backend.zip``.
"""

import numpy as np

from torchlight.autograd import engine
from torchlight.autograd.grad_mode import GradMode

from . import creation, dispatch, dtypes
from .backend.protocol import FILL, host_memory
from .backend.registry import get_backend
from .base import STATE, TensorBase
from .conveniences import TensorConveniences
from .device import device_named as _device
from .dlpack import device_of, export
from .errors import AutogradError, DTypeError, ShapeError
from .functions import (
    activation,
    closeness,
    concat,
    gathering,
    index,
    linalg,
    pointwise,
    reductions,
    reorder,
    rounding,
    shape,
    sorting,
    special,
)
from .functions.positions import host_positions as positions_of
from .functions.positions import storage_offsets
from .printing import format_values
from .random import host_drawn, rng_of
from .sampling import bernoulli, multinomial
from .size import Size

__all__ = ["Tensor"]

_P = pointwise


class Tensor(TensorConveniences, TensorBase):
    """An n-dimensional array with reverse-mode autograd (PyTorch semantics).

    Create one with a factory (:func:`torchlight.tensor`, :func:`torchlight.zeros`,
    :func:`torchlight.randn`, ...), not with ``Tensor(...)`` (which works but copies). A tensor is a
    *view* ``(shape, strides, offset)`` of a storage owned by a backend (``device``), with a
    ``dtype`` (``float32``, ``float64``, ``int64`` or ``bool``). When ``requires_grad`` is set, every
    operation on it is recorded, and :meth:`backward` fills ``.grad`` of the leaves.

    >>> x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> x.shape, x.dtype, x.device == "cpu"
    ((2, 2), torchlight.float32, True)
    >>> y = (x @ x).sum()
    >>> y
    tensor(54., grad_fn=<SumBackward>)
    >>> y.backward()
    >>> x.grad
    tensor([[ 7., 11.],
            [ 9., 13.]])
    """

    __slots__ = ()

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        """PyTorch's legacy constructor: ``Tensor(2, 3)`` is an uninitialised tensor of that
        shape, ``Tensor(data)`` a copy of ``data``; both of the default float dtype unless
        ``dtype`` is given (``tl.tensor(data)`` infers the dtype instead).

        >>> import torchlight as tl
        >>> tl.Tensor(2, 3).shape, tl.Tensor([1, 2]).dtype
        ((2, 3), torchlight.float32)
        """
        dt, backend = dtype or dtypes.get_default_dtype(), get_backend(device)
        if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            t = creation.empty(creation.size_of(args), dt, backend, requires_grad, like=self)
        elif len(args) == 1:
            t = creation.from_data(args[0], dt, backend, requires_grad, like=self)
        elif not args:
            t = creation.empty((0,), dt, backend, requires_grad, like=self)
        else:
            raise DTypeError(f"Tensor(...): pass sizes (ints) or one piece of data, got {args!r}")
        for name in STATE:
            setattr(self, name, getattr(t, name))

    # --- metadata ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """The size of each dimension, as a tuple of ints (``()`` for a 0-d tensor).

        >>> tl.zeros(2, 3).shape
        (2, 3)
        """
        return self._td.shape

    def size(self, dim=None):
        """The sizes as a :class:`~torchlight.Size` (a tuple), or the size of dimension ``dim``
        (negative counts from the end).

        >>> x = tl.zeros(2, 3)
        >>> x.size(), x.size(-1)
        (torchlight.Size([2, 3]), 3)
        """
        return (
            Size(self._td.shape)
            if dim is None
            else self._td.shape[dispatch.normalize_dim(dim, self.ndim)]
        )

    @property
    def ndim(self) -> int:
        """The number of dimensions, ``len(self.shape)``.

        >>> tl.zeros(2, 3, 4).ndim
        3
        """
        return len(self._td.shape)

    def dim(self) -> int:
        """The number of dimensions, ``len(self.shape)`` (same as :attr:`ndim`).

        >>> tl.zeros(2, 3).dim()
        2
        """
        return len(self._td.shape)

    def numel(self) -> int:
        """The number of elements: the product of the shape (1 for a 0-d tensor).

        >>> tl.zeros(2, 3, 4).numel()
        24
        """
        return self._td.size

    def stride(self, dim=None):
        """How many *elements* to step in storage to move one index along each dimension (a
        tuple), or along dimension ``dim``. A contiguous ``(2, 3)`` tensor has strides ``(3, 1)``; views
        such as :meth:`transpose` and :meth:`expand` only change strides (a broadcast dimension has
        stride 0).

        >>> x = tl.zeros(2, 3)
        >>> x.stride(), x.t().stride()
        ((3, 1), (1, 3))
        """
        return (
            self._td.strides
            if dim is None
            else self._td.strides[dispatch.normalize_dim(dim, self.ndim)]
        )

    def storage_offset(self) -> int:
        """Index in the underlying storage of this tensor's first element (non-zero for views
        such as ``x[1:]``).

        >>> tl.arange(6)[2:].storage_offset()
        2
        """
        return self._td.offset

    def is_contiguous(self) -> bool:
        """``True`` when the elements lie in storage in row-major order with no gaps
        (strides are those of a fresh tensor of this shape).

        >>> x = tl.zeros(2, 3)
        >>> x.is_contiguous(), x.t().is_contiguous()
        (True, False)
        """
        return self._td.is_contiguous()

    def element_size(self) -> int:
        """Bytes per element of this tensor's dtype (4 for ``float32``).

        >>> tl.zeros(1).element_size(), tl.zeros(1, dtype=tl.int64).element_size()
        (4, 8)
        """
        return self.dtype.itemsize

    @property
    def device(self):
        """The :class:`~torchlight.device` holding the data (equal to its name: ``x.device == "cpu"``):
        the cpu, or a backend's device (``"numba"``, ``"cuda"``).

        >>> tl.zeros(1).device == "cpu"
        True
        """
        return _device(getattr(self.backend, "device", self.backend.name))

    @property
    def is_leaf(self) -> bool:
        """``True`` when no autograd operation created this tensor (it was made by a factory, or
        is the result of :meth:`detach`). Only leaves get ``.grad`` filled in by :meth:`backward`
        (others need :meth:`retain_grad`).

        >>> w = tl.ones(2, requires_grad=True)
        >>> w.is_leaf, (w * 2).is_leaf
        (True, False)
        """
        return self._history is None

    @property
    def grad_fn(self):
        """The autograd function that produced this tensor (``None`` for a leaf); its
        ``backward`` is what :meth:`backward` calls on the way to the leaves.

        >>> x = tl.ones(2, requires_grad=True)
        >>> x.grad_fn is None, (x * 2).grad_fn is not None
        (True, True)
        """
        return None if self._history is None else self._history.fn

    def is_floating_point(self) -> bool:
        """``True`` for ``float32`` and ``float64`` tensors (the only ones that can require
        gradients).

        >>> tl.tensor([1.0]).is_floating_point(), tl.tensor([1]).is_floating_point()
        (True, False)
        """
        return self.dtype.is_floating_point

    @property
    def T(self):
        """All dimensions reversed: the transpose of a matrix, ``permute(n-1, ..., 0)`` in general
        (a view, no copy).

        >>> tl.zeros(2, 3, 4).T.shape
        (4, 3, 2)
        """
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self):
        """The last two dimensions swapped (a batch of transposed matrices; a view).

        >>> tl.zeros(5, 2, 3).mT.shape
        (5, 3, 2)
        """
        return self.transpose(-2, -1)

    @property
    def data(self):
        """The same data, detached from the graph (``self.detach()``). Assigning to ``.data``
        replaces the storage in place (same shape and dtype), without autograd seeing it.

        >>> w = tl.ones(2, requires_grad=True)
        >>> w.data.requires_grad
        False
        """
        return self.detach()

    @data.setter
    def data(self, other):
        if other.shape != self.shape or other.dtype is not self.dtype:
            raise ShapeError(
                f".data assignment needs shape {self.shape} and dtype {self.dtype}, got {other.shape} {other.dtype}"
            )
        self._td, self.backend = other._td, other.backend

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._td.shape[0]

    # --- autograd --------------------------------------------------------------------------
    def requires_grad_(self, requires_grad=True):
        """Set whether autograd records operations on this leaf tensor; returns ``self``.

        Only floating-point leaves can require gradients.

        >>> w = tl.zeros(3).requires_grad_()
        >>> w.requires_grad
        True
        """
        if requires_grad and not self.dtype.is_floating_point:
            raise DTypeError(
                f"only floating point tensors can require gradients, this one is {self.dtype}"
            )
        if not requires_grad and self._history is not None:
            raise AutogradError(
                "you can only change requires_grad of leaf tensors; use .detach() for a non-leaf"
            )
        self.requires_grad = requires_grad
        return self

    def detach(self):
        """The same data (shared storage) cut from the graph.

        >>> x = tl.ones(2, requires_grad=True)
        >>> y = (x * 2).detach()
        >>> y.requires_grad, y.is_leaf
        (False, True)
        """
        t = dispatch.wrap(self._td, self.backend, self.dtype, self)
        t._version = self._version
        return t

    def detach_(self):
        """Cut this tensor from the graph in place: it becomes a leaf that does not require
        grad. Returns ``self``.

        >>> y = tl.ones(2, requires_grad=True) * 2
        >>> y.detach_().is_leaf
        True
        """
        self._history = None
        self.requires_grad = False
        return self

    def retain_grad(self):
        """Ask :meth:`backward` to keep ``.grad`` on this non-leaf tensor too (leaves always
        get it). Returns ``self``.

        >>> x = tl.ones(2, requires_grad=True)
        >>> y = (x * 3).retain_grad()
        >>> y.sum().backward()
        >>> y.grad
        tensor([1., 1.])
        """
        if self._history is not None:
            self._retains_grad = True
            self._history.retain(self)
        return self

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after ``.grad`` of this leaf has been accumulated in backward.

        >>> w = tl.ones(2, requires_grad=True)
        >>> _ = w.register_post_accumulate_grad_hook(lambda t: print("grad ready:", t.grad))
        >>> (w * 3).sum().backward()
        grad ready: tensor([3., 3.])
        """
        hooks = self._hooks
        if hooks is None:
            hooks = self._hooks = []
        hooks.append(hook)
        return hook

    def accumulate_grad(self, g):
        """Engine protocol: add ``g`` into ``.grad`` (a private, contiguous copy the first time)."""
        if g._td.shape != self._td.shape:
            g = (
                dispatch.sum_to(g, self.shape)
                if len(g.shape) >= len(self.shape)
                else g.expand(self.shape)
            )
        if self.grad is None:
            # Always a private copy: ``g`` may be shared with other leaves or be the implicit
            # ones seed, and optimizers/clipping update ``.grad`` in place.
            self.grad = dispatch.map_op("copy", g) if not GradMode.enabled else g.clone()
        elif GradMode.enabled:
            self.grad = self.grad + g
        else:
            self.backend.zip("add", self.grad._td, g._td, self.grad._td)
        hooks = self._hooks
        if hooks:
            for hook in hooks:
                hook(self)

    def backward(self, gradient=None, retain_graph=False, create_graph=False):
        r"""Reverse-mode differentiation: accumulate :math:`\partial L/\partial w` into ``w.grad``
        for every leaf ``w`` this tensor depends on.

        For a scalar (one-element) tensor ``L`` the seed gradient is 1. For any other shape pass
        ``gradient``, a tensor of this tensor's shape holding :math:`\partial L/\partial \text{self}`
        (vector-Jacobian product). Gradients *add* into ``.grad``: zero them between steps
        (``optimizer.zero_grad()``). The graph is freed afterwards unless ``retain_graph=True``;
        ``create_graph=True`` records the backward pass itself, for higher derivatives.

        >>> x = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4., 6.])
        """
        if gradient is None:
            if self._td.size != 1:
                raise AutogradError(
                    f"grad can be implicitly created only for scalar outputs, this one has shape "
                    f"{self.shape}; pass backward(gradient=...) of the same shape"
                )
            gradient = dispatch.ones_cached(self._td.shape, self.dtype, self.backend, self)
        elif gradient.shape != self.shape:
            raise ShapeError(
                f"backward: gradient shape {gradient.shape} does not match tensor shape {self.shape}"
            )
        elif gradient.dtype is not self.dtype:
            # PyTorch's: every gradient takes the dtype of what it is the gradient of, so a
            # float32 leaf gets a float32 .grad from a float64 seed (and no formula mixes dtypes)
            gradient = gradient.to(self.dtype)
        engine.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph)

    # --- finite-difference protocol (gradcheck) ------------------------------------------------
    def _fd_flat(self):
        return [float(v) for v in self.numpy_view().reshape(-1)]

    def _fd_like(self, values):
        return creation.from_numpy_on(
            np.asarray(values, dtype=self.dtype.np).reshape(self.shape), self.backend, like=self
        )

    def _fd_set(self, i, value):
        # Through the host and back: ``to_numpy`` need not share memory (device storage).
        arr = self.to_numpy()
        arr[np.unravel_index(i, self.shape)] = value
        self.backend.map("copy", _host(arr, self)._td, self._td)
        self._version[0] += 1

    # --- conversion ----------------------------------------------------------------------------
    def numpy_view(self):
        """The data as an ndarray (shares memory on the cpu backend).

        >>> tl.tensor([[1, 2]]).numpy_view().shape
        (1, 2)
        """
        return self.backend.to_numpy(self._td)

    def numpy(self):
        """The data as a numpy array, sharing memory on the cpu backend.

        Raises :class:`AutogradError` for a tensor that requires grad (use ``x.detach().numpy()``): a
        change to the array would be invisible to autograd. :meth:`to_numpy` always copies.

        >>> tl.tensor([1.0, 2.0]).numpy()
        array([1., 2.], dtype=float32)
        """
        if self.requires_grad:
            raise AutogradError(
                "can't call numpy() on a tensor that requires grad; use .detach().numpy()"
            )
        arr = self.numpy_view()
        st = self._td.storage
        if (
            "_index_range" in self.__dict__
            and host_memory(self.backend)
            and np.may_share_memory(arr, st)
        ):
            # the caller may write through this shared view without a version bump: forget the
            # index bounds on record so the next index check reads the values (the kernels
            # check anyway); a device backend's host copy keeps them
            del self.__dict__["_index_range"]
        return arr

    def to_numpy(self):
        """A numpy copy of the data, whatever the tensor's grad state or device.

        >>> tl.tensor([1.0, 2.0], requires_grad=True).to_numpy()
        array([1., 2.], dtype=float32)
        """
        return np.array(self.numpy_view(), copy=True)

    # numpy defers binary operators to torchlight (``ndarray + tensor`` calls
    # ``Tensor.__radd__``, giving a tensor that keeps its graph), as it does for PyTorch's tensors;
    # ufuncs (``np.exp(t)``) still convert through ``__array__``.
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        """NumPy's conversion protocol (``np.asarray(t)``): shares memory where the data is on
        the host and the dtype matches; ``copy=True`` always copies, ``copy=False`` raises
        ``ValueError`` when a copy is unavoidable (device memory, another dtype)."""
        if copy:
            arr = self.to_numpy()
            return arr if dtype is None else arr.astype(dtype, copy=False)
        shared = host_memory(self.backend)
        arr = self.numpy_view().view() if shared else self.to_numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            shared = False
            arr = arr.astype(dtype)
        if copy is False and not shared:
            raise ValueError(
                f"__array__(copy=False): a {self.device} tensor of dtype {self.dtype} cannot be viewed "
                f"as an ndarray{'' if dtype is None else f' of dtype {np.dtype(dtype)}'} without a copy; "
                "use np.asarray(t) (copy=None) or t.to_numpy()"
            )
        return arr

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export (``np.from_dlpack(t)``, ``torch.from_dlpack(t)``): a capsule describing
        this tensor's memory, shape, strides and offset, shared with the consumer (see
        :mod:`torchlight.tensor.dlpack`).

        >>> import numpy as np, torchlight as tl
        >>> t = tl.zeros(3)
        >>> a = np.from_dlpack(t)
        >>> a[1] = 5.0
        >>> t.tolist()
        [0.0, 5.0, 0.0]
        """
        return export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """``(device_type, device_id)`` in DLPack's numbering (``(1, 0)``: host memory)."""
        return device_of(self)

    def item(self):
        """The value of a one-element tensor as a Python ``float``, ``int`` or ``bool``.

        >>> tl.tensor([[2.5]]).item()
        2.5
        """
        if self._td.size != 1:
            raise ShapeError(
                f"item(): only one-element tensors can be converted to Python scalars, shape is {self.shape}"
            )
        return dispatch.item_of(self)

    def tolist(self):
        """The data as (nested) Python lists of Python numbers.

        >>> tl.tensor([[1, 2], [3, 4]]).tolist()
        [[1, 2], [3, 4]]
        """
        return self.numpy_view().tolist()

    def to(
        self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None
    ):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)`` (other's dtype and
        device). Returns ``self`` when nothing changes, unless ``copy=True``. ``non_blocking`` and
        ``memory_format`` are accepted for PyTorch compatibility (every transfer completes before
        ``to`` returns; tensors are always strided).

        >>> import torchlight as tl
        >>> x = tl.ones(2)
        >>> x.to("cpu", non_blocking=True) is x, x.to(tl.float64).dtype, x.to(x, copy=True) is x
        (True, torchlight.float64, False)
        """
        for a in args:
            if isinstance(a, Tensor):  # to(other): other's dtype and device
                dtype, device = a.dtype, a.backend
            elif dtypes.names_a_dtype(a):
                dtype = a
            else:
                device = a
        out = self
        if device is not None:
            target = get_backend(device)
            if target is not self.backend:
                out = _Move.apply(out, target)
        if dtype is not None:
            out = _P.to_dtype(out, dtypes.as_dtype(dtype))
        return out.clone() if copy and out is self else out

    def cpu(self):
        """This tensor on the host: ``self.to("cpu")``, the numpy backend unless the default
        device is another host-memory backend (see :func:`~torchlight.tensor.backend.registry.cpu_backend`)."""
        return self.to("cpu")

    def float(self):
        """This tensor as ``float32``: ``self.to(tl.float32)``.

        >>> tl.tensor([1, 2]).float()
        tensor([1., 2.])
        """
        return self.to(dtypes.float32)

    def double(self):
        """This tensor as ``float64``: ``self.to(tl.float64)``.

        >>> tl.tensor([1, 2]).double().dtype
        torchlight.float64
        """
        return self.to(dtypes.float64)

    def long(self):
        """This tensor as ``int64`` (floats are truncated toward zero): ``self.to(tl.int64)``.

        >>> tl.tensor([1.7, -1.7]).long()
        tensor([ 1, -1])
        """
        return self.to(dtypes.int64)

    def bool(self):
        """This tensor as ``bool`` (non-zero is ``True``): ``self.to(tl.bool)``.

        >>> tl.tensor([0.0, 2.0]).bool()
        tensor([False,  True])
        """
        return self.to(dtypes.bool_)

    def type_as(self, other):
        """This tensor converted to ``other``'s dtype: ``self.to(other.dtype)``.

        >>> tl.tensor([1, 2]).type_as(tl.zeros(1))
        tensor([1., 2.])
        """
        return self.to(other.dtype)

    def clone(self):
        """A copy with its own (contiguous) storage; gradients flow back to ``self``.

        >>> x = tl.zeros(2)
        >>> y = x.clone()
        >>> y[0] = 1.0
        >>> x
        tensor([0., 0.])
        """
        return _Clone.apply(self)

    def contiguous(self):
        """``self`` when it is already contiguous, otherwise a row-major copy (what
        :meth:`view` needs after a :meth:`transpose`).

        >>> x = tl.zeros(2, 3).t()
        >>> x.is_contiguous(), x.contiguous().is_contiguous()
        (False, True)
        """
        return self if self._td.is_contiguous() else _Clone.apply(self)

    def __repr__(self):
        arr = format_values(self.numpy_view())
        extra = []
        if self.dtype not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_):
            extra.append(f"dtype={self.dtype}")
        if self.device != "cpu":
            extra.append(f"device='{self.device}'")
        if self._history is not None:
            extra.append(f"grad_fn=<{self._history.fn.__name__}Backward>")
        elif self.requires_grad:
            extra.append("requires_grad=True")
        return f"tensor({arr}{''.join(', ' + e for e in extra)})"

    def __bool__(self):
        if self._td.size != 1:
            raise ShapeError(
                f"the truth value of a tensor with {self._td.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point:
            raise DTypeError(
                "only integer tensors of a single element can be converted to an index"
            )
        return int(self.item())

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))  # as PyTorch: the slices along dim 0

    __hash__ = object.__hash__

    def __reduce__(self):
        # Pickle / deepcopy by value and device *name*: the copy uses the registered backend
        # singleton, so it combines with other tensors (worker processes rely on this).
        return (_rebuild, (self.to_numpy(), self.dtype.name, str(self.device), self.requires_grad))

    # --- arithmetic ----------------------------------------------------------------------------
    def __add__(self, o):
        """Elementwise ``self + other`` with broadcasting (``other`` may be a Python number).

        >>> tl.tensor([1.0, 2.0]) + tl.tensor([[10.0], [20.0]])
        tensor([[11., 12.],
                [21., 22.]])
        """
        return _P.binary("add", self, o)

    def __radd__(self, o):
        return _P.binary("add", self, o, reverse=True)

    def __sub__(self, o):
        """Elementwise ``self - other`` with broadcasting.

        >>> tl.tensor([5.0, 7.0]) - 1
        tensor([4., 6.])
        """
        return _P.binary("sub", self, o)

    def __rsub__(self, o):
        return _P.binary("sub", self, o, reverse=True)

    def __mul__(self, o):
        """Elementwise product ``self * other`` with broadcasting (also :meth:`mul`).

        >>> tl.tensor([1.0, 2.0]).mul(3)
        tensor([3., 6.])
        """
        return _P.binary("mul", self, o)

    def __rmul__(self, o):
        return _P.binary("mul", self, o, reverse=True)

    def __truediv__(self, o):
        """Elementwise true division ``self / other`` with broadcasting (also :meth:`div`);
        integer inputs give a float result.

        >>> tl.tensor([1, 2]).div(4)
        tensor([0.25, 0.5 ])
        """
        return _P.binary("div", self, o)

    def __rtruediv__(self, o):
        return _P.binary("div", self, o, reverse=True)

    def __pow__(self, o):
        """Elementwise power :math:`x^p` (also :meth:`pow`); ``other`` is a number or a
        broadcastable tensor.

        >>> tl.tensor([1.0, 2.0, 3.0]).pow(2)
        tensor([1., 4., 9.])
        """
        return _P.binary("pow", self, o)

    def __rpow__(self, o):
        return _P.binary("pow", self, o, reverse=True)

    def __matmul__(self, o):
        """Matrix product ``self @ other`` with PyTorch's rules (also :meth:`matmul`,
        :meth:`mm`, :meth:`bmm`): see :func:`torchlight.matmul`.

        Shapes: ``(n, k) @ (k, m) -> (n, m)``; 1-d operands are treated as a row / column vector; leading
        dimensions are batch dimensions and broadcast, ``(b, n, k) @ (k, m) -> (b, n, m)``.

        >>> a = tl.ones(2, 3)
        >>> b = tl.ones(3, 4)
        >>> (a @ b).shape, a.matmul(b)[0, 0].item()
        ((2, 4), 3.0)
        """
        return linalg.matmul(self, o)

    def __rmatmul__(self, o):
        return linalg.matmul(o, self)

    def __neg__(self):
        """Elementwise ``-self``.

        >>> -tl.tensor([1.0, -2.0])
        tensor([-1.,  2.])
        """
        return (
            _P.Unary.apply_unary(self, "neg")
            if self.dtype is not dtypes.bool_
            else self.logical_not()
        )

    def __abs__(self):
        """Elementwise ``abs(self)``.

        >>> abs(tl.tensor([-1.5]))
        tensor([1.5])
        """
        return self.abs()

    def __lt__(self, o):
        """Elementwise ``self < other`` as a ``bool`` tensor (also :meth:`lt`); no gradient.

        >>> tl.tensor([1, 2, 3]) < 2
        tensor([ True, False, False])
        """
        return _P.compare("lt", self, o)

    def __le__(self, o):
        """Elementwise ``self <= other`` as a ``bool`` tensor (also :meth:`le`); no gradient.

        >>> tl.tensor([1, 2, 3]).le(2)
        tensor([ True,  True, False])
        """
        return _P.compare("le", self, o)

    def __gt__(self, o):
        """Elementwise ``self > other`` as a ``bool`` tensor (also :meth:`gt`); no gradient.

        >>> tl.tensor([1.0, 5.0]).gt(2)
        tensor([False,  True])
        """
        return _P.compare("gt", self, o)

    def __ge__(self, o):
        """Elementwise ``self >= other`` as a ``bool`` tensor (also :meth:`ge`); no gradient.

        >>> tl.tensor([1, 2, 3]).ge(2)
        tensor([False,  True,  True])
        """
        return _P.compare("ge", self, o)

    def __eq__(self, o):
        """Elementwise ``self == other`` as a ``bool`` tensor (also :meth:`eq`); no gradient.

        Like PyTorch (and numpy), ``==`` does not give one ``bool``: use ``(a == b).all()`` for that.

        >>> tl.tensor([1, 2, 3]).eq(2)
        tensor([False,  True, False])
        """
        return _P.compare("eq", self, o)

    def __ne__(self, o):
        """Elementwise ``self != other`` as a ``bool`` tensor (also :meth:`ne`); no gradient.

        >>> tl.tensor([1, 2]).ne(tl.tensor([1, 3]))
        tensor([False,  True])
        """
        return _P.compare("ne", self, o)

    def __and__(self, o):
        o = _P.ndarray_operand(o, self)
        return _P.compare(
            "logical_and", self.bool(), o.bool() if isinstance(o, Tensor) else bool(o)
        )

    def __or__(self, o):
        o = _P.ndarray_operand(o, self)
        return _P.compare("logical_or", self.bool(), o.bool() if isinstance(o, Tensor) else bool(o))

    __rand__ = __and__
    __ror__ = __or__

    def __invert__(self):
        if self.dtype is not dtypes.bool_:
            raise DTypeError(f"~ is only defined for bool tensors here, got {self.dtype}")
        return self.logical_not()

    def logical_not(self):
        """Elementwise logical negation as a ``bool`` tensor (zero becomes ``True``); ``~x``
        for a bool tensor.

        >>> tl.tensor([0, 1, 2]).logical_not()
        tensor([ True, False, False])
        """
        return _P.MapNoGrad.apply(self.bool(), "logical_not")

    def __floordiv__(self, o):
        """``self // o``: floor division (exact for integers; see :func:`torchlight.floor_divide`)."""
        return rounding.floor_divide(self, o)

    def __rfloordiv__(self, o):
        """``o // self`` for a number ``o``."""
        return rounding.floor_divide(
            dispatch.scalar_like(o, self, dtypes.promote_scalar(self.dtype, o)), self
        )

    def __mod__(self, o):
        """``self % o``: remainder with the divisor's sign (see :func:`torchlight.remainder`)."""
        return rounding.remainder(self, o)

    def __rmod__(self, o):
        """``o % self`` for a number ``o``."""
        return rounding.remainder(
            dispatch.scalar_like(o, self, dtypes.promote_scalar(self.dtype, o)), self
        )

    add = lambda self, o, alpha=1: self + (o * alpha if alpha != 1 else o)  # noqa: E731
    sub = lambda self, o, alpha=1: self - (o * alpha if alpha != 1 else o)  # noqa: E731
    add.__doc__ = """``self + alpha * other``, elementwise with broadcasting.

    >>> tl.tensor([1.0, 2.0]).add(tl.tensor([1.0, 1.0]), alpha=3)
    tensor([4., 5.])
    """
    sub.__doc__ = """``self - alpha * other``, elementwise with broadcasting.

    >>> tl.tensor([5.0, 7.0]).sub(tl.tensor([1.0, 2.0]), alpha=2)
    tensor([3., 3.])
    """
    mul = __mul__

    def div(self, other, rounding_mode=None):
        """``self / other``; ``rounding_mode`` "trunc" or "floor" rounds the quotient."""
        return rounding.div(self, other, rounding_mode)

    def floor_divide(self, other):
        """``floor(self / other)`` (see :func:`torchlight.floor_divide`)."""
        return rounding.floor_divide(self, other)

    def remainder(self, other):
        """``self - other·floor(self / other)`` (see :func:`torchlight.remainder`)."""
        return rounding.remainder(self, other)

    def floor(self):
        """Round down elementwise; zero gradient (see :func:`torchlight.floor`)."""
        return rounding.floor(self)

    def ceil(self):
        """Round up elementwise; zero gradient (see :func:`torchlight.ceil`)."""
        return rounding.ceil(self)

    def trunc(self):
        """Round towards zero elementwise; zero gradient (see :func:`torchlight.trunc`)."""
        return rounding.trunc(self)

    def round(self, decimals=0):
        """Round half to even, to ``decimals`` places (see :func:`torchlight.round`)."""
        return rounding.round(self, decimals)

    pow = __pow__
    matmul = __matmul__

    def mm(self, mat2):
        """2-D matrix product (see :func:`torchlight.mm`)."""
        return linalg.mm(self, mat2)

    def bmm(self, mat2):
        """3-D batched matrix product (see :func:`torchlight.bmm`)."""
        return linalg.bmm(self, mat2)

    def dot(self, other):
        """Inner product of two 1-D tensors (see :func:`torchlight.dot`)."""
        return linalg.dot(self, other)

    def outer(self, other):
        """Outer product of two 1-D tensors (see :func:`torchlight.outer`)."""
        return linalg.outer(self, other)

    def diag(self, diagonal=0):
        """Diagonal matrix from a vector, or a matrix's diagonal (see :func:`torchlight.diag`)."""
        return linalg.diag(self, diagonal)

    def norm(self, p="fro", dim=None, keepdim=False):
        """Vector p-norm over ``dim`` (see :func:`torchlight.norm`)."""
        return linalg.norm(self, p, dim, keepdim)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise closeness test (see :func:`torchlight.isclose`)."""
        return closeness.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """True when every element is close (see :func:`torchlight.allclose`)."""
        return closeness.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other):
        """True when shapes and values are equal (see :func:`torchlight.equal`)."""
        return closeness.equal(self, other)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def maximum(self, o):
        """Elementwise maximum of ``self`` and ``other`` (broadcast); see :func:`torchlight.maximum`.

        >>> tl.tensor([1.0, 5.0]).maximum(tl.tensor([3.0, 2.0]))
        tensor([3., 5.])
        """
        return _P.binary("maximum", self, o)

    def minimum(self, o):
        """Elementwise minimum of ``self`` and ``other`` (broadcast); see :func:`torchlight.minimum`.

        >>> tl.tensor([1.0, 5.0]).minimum(tl.tensor([3.0, 2.0]))
        tensor([1., 2.])
        """
        return _P.binary("minimum", self, o)

    # --- unary math ----------------------------------------------------------------------------
    def neg(self):
        """Elementwise negation, ``-self``.

        >>> tl.tensor([1.0, -2.0]).neg()
        tensor([-1.,  2.])
        """
        return -self

    def abs(self):
        """Elementwise absolute value :math:`|x|` (the gradient at 0 is 0).

        >>> tl.tensor([-1.5, 2.0]).abs()
        tensor([1.5, 2. ])
        """
        return _P.unary("abs", self)

    def sign(self):
        """Elementwise sign: -1, 0 or 1 (zero gradient).

        >>> tl.tensor([-2.0, 0.0, 3.0]).sign()
        tensor([-1.,  0.,  1.])
        """
        return _P.unary("sign", self)

    def exp(self):
        """Elementwise :math:`e^x`; see :func:`torchlight.exp`.

        >>> tl.tensor([0.0, 1.0]).exp()
        tensor([1.    , 2.7183])
        """
        return _P.unary("exp", self)

    def log(self):
        r"""Elementwise natural logarithm :math:`\ln x`; see :func:`torchlight.log`.

        >>> tl.tensor([1.0, 100.0]).log()
        tensor([0.    , 4.6052])
        """
        return _P.unary("log", self)

    def sqrt(self):
        r"""Elementwise :math:`\sqrt{x}`; see :func:`torchlight.sqrt`.

        >>> tl.tensor([4.0, 9.0]).sqrt()
        tensor([2., 3.])
        """
        return _P.unary("sqrt", self)

    def rsqrt(self):
        r"""Elementwise :math:`1/\sqrt{x}`; see :func:`torchlight.rsqrt`.

        >>> tl.tensor([4.0]).rsqrt()
        tensor([0.5])
        """
        return _P.unary("rsqrt", self)

    def reciprocal(self):
        """Elementwise :math:`1/x`.

        >>> tl.tensor([2.0, 4.0]).reciprocal()
        tensor([0.5 , 0.25])
        """
        return _P.unary("reciprocal", self)

    def square(self):
        """Elementwise :math:`x^2`.

        >>> tl.tensor([-3.0, 2.0]).square()
        tensor([9., 4.])
        """
        return _P.unary("square", self)

    def sin(self):
        """Elementwise sine (radians); see :func:`torchlight.sin`.

        >>> tl.tensor([0.0]).sin()
        tensor([0.])
        """
        return _P.unary("sin", self)

    def cos(self):
        """Elementwise cosine (radians); see :func:`torchlight.cos`.

        >>> tl.tensor([0.0]).cos()
        tensor([1.])
        """
        return _P.unary("cos", self)

    def tanh(self):
        """Elementwise hyperbolic tangent; see :func:`torchlight.tanh`.

        >>> tl.tensor([0.0, 1.0]).tanh()
        tensor([0.    , 0.7616])
        """
        return _P.unary("tanh", self)

    def log1p(self):
        """``log(1 + x)``, accurate for tiny x (see :func:`torchlight.log1p`)."""
        return special.log1p(self)

    def expm1(self):
        """``exp(x) - 1``, accurate for tiny x (see :func:`torchlight.expm1`)."""
        return special.expm1(self)

    def log2(self):
        """Base-2 logarithm."""
        return special.log2(self)

    def log10(self):
        """Base-10 logarithm."""
        return special.log10(self)

    def exp2(self):
        """``2 ** x``."""
        return special.exp2(self)

    def erf(self):
        """The error function (see :func:`torchlight.erf`)."""
        return special.erf(self)

    def sigmoid(self):
        """Elementwise logistic sigmoid :math:`1/(1+e^{-x})`; see :func:`torchlight.sigmoid`.

        >>> tl.tensor([0.0, 2.0]).sigmoid()
        tensor([0.5   , 0.8808])
        """
        return _P.unary("sigmoid", self)

    def relu(self):
        r"""Elementwise :math:`\max(x, 0)`; see :func:`torchlight.relu`.

        >>> tl.tensor([-1.0, 2.0]).relu()
        tensor([0., 2.])
        """
        return _P.unary("relu", self)

    def gelu(self, approximate="none"):
        """Elementwise GELU, exact or ``approximate="tanh"``; see :func:`torchlight.gelu`.

        >>> tl.tensor([1.0]).gelu(), tl.tensor([1.0]).gelu(approximate="tanh")
        (tensor([0.8413]), tensor([0.8412]))
        """
        return _P.unary("gelu_tanh" if approximate == "tanh" else "gelu", self)

    def silu(self):
        r"""Elementwise SiLU (swish) :math:`x\,\sigma(x)`; see :func:`torchlight.silu`.

        >>> tl.tensor([1.0]).silu()
        tensor([0.7311])
        """
        return _P.unary("silu", self)

    def softplus(self, beta=1.0, threshold=20.0):
        r"""Elementwise :math:`\frac{1}{\beta}\log(1+e^{\beta x})`, and ``x`` itself where
        :math:`\beta x` > ``threshold``; see :func:`torchlight.softplus`.

        >>> tl.tensor([0.0, 30.0]).softplus()
        tensor([ 0.6931, 30.    ])
        """
        if beta == 1.0:
            soft = _P.unary("softplus", self)
        else:
            soft = _P.unary("softplus", self * beta) / beta
        # Above the threshold softplus(x) == x to float precision (PyTorch's linear regime).
        return soft.where(self * beta <= threshold, self) if threshold is not None else soft

    def leaky_relu(self, negative_slope=0.01):
        """Elementwise ``x`` for positive ``x``, ``negative_slope * x`` otherwise.

        >>> tl.tensor([-2.0, 3.0]).leaky_relu(0.1)
        tensor([-0.2,  3. ])
        """
        return activation.leaky_relu(self, negative_slope)

    def clamp(self, min=None, max=None):
        r"""Elementwise :math:`\min(\max(x, \text{min}), \text{max})` (also :meth:`clip`); give at
        least one bound. See :func:`torchlight.clamp`.

        >>> tl.tensor([-2.0, 0.5, 3.0]).clamp(0.0, 1.0)
        tensor([0. , 0.5, 1. ])
        """
        if min is None and max is None:
            raise ShapeError("clamp: at least one of min and max must be given")
        return _P.Clamp.apply(self, min, max)

    clip = clamp

    def clamp_min(self, min):
        """``clamp(min=min)``."""
        return self.clamp(min=min)

    def clamp_max(self, max):
        """``clamp(max=max)``."""
        return self.clamp(max=max)

    def where(self, condition, other):
        """``where(condition, self, other)`` (PyTorch's ``Tensor.where``).

        >>> x = tl.tensor([-1.0, 2.0])
        >>> x.where(x > 0, 0.0)
        tensor([0., 2.])
        """
        return where(condition, self, other)

    # --- reductions ------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False, dtype=None):
        """Sum over all elements, or over ``dim`` (an int or tuple); see :func:`torchlight.sum`.

        >>> x = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.sum(), x.sum(dim=0), x.sum(1, keepdim=True).shape
        (tensor(10.), tensor([4., 6.]), (2, 1))
        """
        return reductions.sum(self, dim, keepdim, dtype)

    def mean(self, dim=None, keepdim=False):
        """Arithmetic mean over all elements or over ``dim``; see :func:`torchlight.mean`.

        >>> tl.tensor([[1.0, 2.0], [3.0, 4.0]]).mean(dim=1)
        tensor([1.5, 3.5])
        """
        return reductions.mean(self, dim, keepdim)

    def var(self, dim=None, unbiased=True, keepdim=False, correction=None):
        """Variance over all elements or over ``dim`` (Bessel-corrected by default); see
        :func:`torchlight.var`.

        >>> tl.tensor([1.0, 2.0, 3.0, 4.0]).var()
        tensor(1.6667)
        """
        return reductions.var(self, dim, unbiased, keepdim, correction)

    def std(self, dim=None, unbiased=True, keepdim=False, correction=None):
        """Standard deviation, the square root of :meth:`var`; see :func:`torchlight.std`.

        >>> tl.tensor([1.0, 2.0, 3.0, 4.0]).std(unbiased=False)
        tensor(1.118)
        """
        return reductions.std(self, dim, unbiased, keepdim, correction)

    def max(self, dim=None, keepdim=False):
        """Largest element (no ``dim``); ``(values, indices)`` along ``dim``; or, given a tensor,
        the elementwise :meth:`maximum`. See :func:`torchlight.max`.

        >>> x = tl.tensor([[1.0, 5.0], [7.0, 2.0]])
        >>> x.max()
        tensor(7.)
        >>> x.max(dim=1)
        MinMax(values=tensor([5., 7.]), indices=tensor([1, 0]))
        """
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        return reductions.max(self, dim, keepdim)

    def min(self, dim=None, keepdim=False):
        """Smallest element (no ``dim``); ``(values, indices)`` along ``dim``; or, given a tensor,
        the elementwise :meth:`minimum`. See :func:`torchlight.min`.

        >>> tl.tensor([[1.0, 5.0], [7.0, 2.0]]).min(dim=0)
        MinMax(values=tensor([1., 2.]), indices=tensor([0, 1]))
        """
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        return reductions.min(self, dim, keepdim)

    def amax(self, dim=None, keepdim=False):
        """Largest value over ``dim`` (an int or tuple; all elements when ``None``), values only;
        see :func:`torchlight.amax`.

        >>> tl.tensor([[1.0, 5.0], [7.0, 2.0]]).amax(dim=1)
        tensor([5., 7.])
        """
        return reductions.amax(self, dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        """Smallest value over ``dim`` (an int or tuple; all elements when ``None``), values only;
        see :func:`torchlight.amin`.

        >>> tl.tensor([[1.0, 5.0], [7.0, 2.0]]).amin()
        tensor(1.)
        """
        return reductions.amin(self, dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        """Index of the largest element (in the flattened tensor, or along ``dim``), ``int64``;
        see :func:`torchlight.argmax`.

        >>> tl.tensor([[1.0, 5.0], [7.0, 2.0]]).argmax(dim=1)
        tensor([1, 0])
        """
        return reductions.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        """Index of the smallest element (flattened, or along ``dim``), ``int64``; see
        :func:`torchlight.argmin`.

        >>> tl.tensor([3.0, 1.0, 2.0]).argmin()
        tensor(1)
        """
        return reductions.argmin(self, dim, keepdim)

    def prod(self, dim=None, keepdim=False):
        """Product of the elements, over all or along ``dim``; see :func:`torchlight.prod`.

        >>> tl.tensor([[1.0, 2.0], [3.0, 4.0]]).prod(dim=0)
        tensor([3., 8.])
        """
        return reductions.prod(self, dim, keepdim)

    def logsumexp(self, dim=None, keepdim=False):
        r""":math:`\log\sum_i e^{x_i}` over ``dim``, computed stably; see
        :func:`torchlight.logsumexp`.

        >>> tl.tensor([0.0, 0.0]).logsumexp(dim=0)
        tensor(0.6931)
        """
        return reductions.logsumexp(self, dim, keepdim)

    def all(self, dim=None, keepdim=False):
        """``True`` where every element (over all, or along ``dim``) is non-zero; a ``bool`` tensor.

        >>> tl.tensor([[1, 0], [1, 1]]).all(dim=1)
        tensor([False,  True])
        """
        return reductions.all(self, dim, keepdim)

    def any(self, dim=None, keepdim=False):
        """``True`` where some element (over all, or along ``dim``) is non-zero; a ``bool`` tensor.

        >>> tl.tensor([0, 0, 3]).any()
        tensor(True)
        """
        return reductions.any(self, dim, keepdim)

    def softmax(self, dim=-1):
        """Softmax along ``dim`` (default the last); see :func:`torchlight.softmax`.

        >>> tl.tensor([[1.0, 1.0, 2.0]]).softmax(dim=-1)
        tensor([[0.2119, 0.2119, 0.5761]])
        """
        return activation.softmax(self, dim)

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's name
        """The ``k`` largest elements along ``dim``, with indices (see :func:`torchlight.topk`)."""
        return sorting.topk(self, k, dim, largest, sorted)

    def sort(self, dim=-1, descending=False, stable=False):
        """``(values, indices)`` sorted along ``dim`` (see :func:`torchlight.sort`)."""
        return sorting.sort(self, dim, descending, stable)

    def argsort(self, dim=-1, descending=False, stable=False):
        """Indices that sort along ``dim`` (see :func:`torchlight.argsort`)."""
        return sorting.argsort(self, dim, descending, stable)

    def cumsum(self, dim, dtype=None):
        """Running sum along ``dim`` (see :func:`torchlight.cumsum`)."""
        return reorder.cumsum(self, dim, dtype)

    def multinomial(self, num_samples, replacement=False, generator=None):
        """Category indices drawn from these weights (see :func:`torchlight.multinomial`)."""
        return multinomial(self, num_samples, replacement, generator)

    def bernoulli(self, p=None, generator=None):
        """1 with probability given by the elements (or ``p``), else 0 (see :func:`torchlight.bernoulli`)."""
        return bernoulli(self, p, generator)

    def bernoulli_(self, p=0.5, generator=None):
        """Fill in place with 1 (probability ``p``, a number or a tensor) or 0."""
        probs = p if isinstance(p, Tensor) else self.detach().new_full(self.shape, float(p))
        return self.copy_(
            bernoulli(probs.to(self.dtype).expand(self.shape).contiguous(), generator=generator)
        )

    def log_softmax(self, dim=-1):
        """Log of the softmax along ``dim``, computed stably; see :func:`torchlight.log_softmax`.

        >>> tl.tensor([0.0, 0.0]).log_softmax(dim=0)
        tensor([-0.6931, -0.6931])
        """
        return activation.log_softmax(self, dim)

    # --- shape -------------------------------------------------------------------------------
    def view(self, *shape):
        """The same data seen with another shape (no copy); one size may be ``-1`` (inferred).

        The shape must be compatible with the strides (a transposed tensor usually is not: use
        :meth:`reshape`, or :meth:`contiguous` first). Shares storage with ``self``.

        >>> x = tl.arange(6)
        >>> x.view(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]])
        >>> x.view(-1, 2).shape
        (3, 2)
        """
        return shape_ops.view(self, shape)

    def reshape(self, *shape):
        """Like :meth:`view`, but copies when the data cannot be viewed with the new shape
        (after a :meth:`transpose`, say).

        >>> tl.arange(6).view(2, 3).t().reshape(6)
        tensor([0, 3, 1, 4, 2, 5])
        """
        return shape_ops.reshape(self, shape)

    def view_as(self, other):
        """:meth:`view` with ``other``'s shape.

        >>> tl.arange(6).view_as(tl.zeros(2, 3)).shape
        (2, 3)
        """
        return self.view(other.shape)

    def reshape_as(self, other):
        """:meth:`reshape` to ``other``'s shape.

        >>> tl.arange(6).reshape_as(tl.zeros(3, 2)).shape
        (3, 2)
        """
        return self.reshape(other.shape)

    def permute(self, *dims):
        """A view with the dimensions reordered: dimension ``i`` of the result is ``dims[i]`` of
        ``self``.

        >>> tl.zeros(2, 3, 4).permute(2, 0, 1).shape
        (4, 2, 3)
        """
        return shape_ops.permute(self, *dims)

    def transpose(self, d0, d1):
        """A view with dimensions ``d0`` and ``d1`` swapped.

        >>> tl.zeros(2, 3, 4).transpose(0, 2).shape
        (4, 3, 2)
        """
        return shape_ops.transpose(self, d0, d1)

    def t(self):
        """The transpose of a matrix (``transpose(0, 1)``); 0-d and 1-d tensors come back as they are.

        >>> tl.tensor([[1, 2, 3]]).t()
        tensor([[1],
                [2],
                [3]])
        """
        if self.ndim > 2:
            raise ShapeError(
                f"t() expects a tensor with <= 2 dims, got shape {self.shape}; use transpose"
            )
        return self.transpose(0, 1) if self.ndim == 2 else self

    def expand(self, *shape):
        """A view broadcast to a larger ``shape`` without copying (a size-1 dimension gets
        stride 0; ``-1`` keeps a size; new leading dimensions may be added).

        >>> tl.tensor([[1], [2]]).expand(2, 3)
        tensor([[1, 1, 1],
                [2, 2, 2]])
        """
        return shape_ops.expand(self, *shape)

    def expand_as(self, other):
        """:meth:`expand` to ``other``'s shape.

        >>> tl.tensor([[1], [2]]).expand_as(tl.zeros(2, 3))
        tensor([[1, 1, 1],
                [2, 2, 2]])
        """
        return self.expand(other.shape)

    def squeeze(self, dim=None):
        """A view without size-1 dimensions (all of them, or only ``dim``).

        >>> tl.zeros(2, 1, 3, 1).squeeze().shape, tl.zeros(2, 1, 3).squeeze(1).shape
        ((2, 3), (2, 3))
        """
        return shape_ops.squeeze(self, dim)

    def unsqueeze(self, dim):
        """A view with a new size-1 dimension inserted at ``dim``.

        >>> tl.zeros(2, 3).unsqueeze(0).shape, tl.zeros(2, 3).unsqueeze(-1).shape
        ((1, 2, 3), (2, 3, 1))
        """
        return shape_ops.unsqueeze(self, dim)

    def flatten(self, start_dim=0, end_dim=-1):
        """Dimensions ``start_dim`` to ``end_dim`` merged into one (a view when possible).

        >>> tl.zeros(2, 3, 4).flatten(1).shape
        (2, 12)
        """
        return shape_ops.flatten(self, start_dim, end_dim)

    def unflatten(self, dim, sizes):
        """Dimension ``dim`` split into ``sizes`` (the inverse of :meth:`flatten`).

        >>> tl.zeros(2, 12).unflatten(1, (3, 4)).shape
        (2, 3, 4)
        """
        dim = dispatch.normalize_dim(dim, self.ndim)
        return self.reshape(self.shape[:dim] + tuple(sizes) + self.shape[dim + 1 :])

    def unfold(self, dimension, size, step):
        """A view of every window of ``size`` elements along ``dimension``, windows ``step``
        apart, as a new last dimension: dimension ``dimension`` becomes ``(n - size) // step + 1``.

        >>> tl.arange(5).unfold(0, 2, 1)
        tensor([[0, 1],
                [1, 2],
                [2, 3],
                [3, 4]])
        """
        return shape_ops.unfold(self, dimension, size, step)

    def narrow(self, dim, start, length):
        """A view of ``length`` elements of dimension ``dim`` starting at ``start``
        (``x.narrow(0, 1, 2)`` is ``x[1:3]``).

        >>> tl.arange(5).narrow(0, 1, 2)
        tensor([1, 2])
        """
        return shape_ops.narrow(self, dim, start, length)

    def split(self, split_size, dim=0):
        """A tuple of views of ``split_size`` elements along ``dim`` (the last may be shorter), or
        of the given sizes when ``split_size`` is a list.

        >>> [p.tolist() for p in tl.arange(5).split(2)]
        [[0, 1], [2, 3], [4]]
        """
        return concat.split(self, split_size, dim)

    def chunk(self, chunks, dim=0):
        """A tuple of ``chunks`` (or fewer) views of equal size along ``dim``
        (``ceil(n / chunks)`` each, the last may be shorter).

        >>> [p.tolist() for p in tl.arange(6).chunk(3)]
        [[0, 1], [2, 3], [4, 5]]
        """
        return concat.chunk(self, chunks, dim)

    def tril(self, diagonal=0):
        """The lower triangle of the last two dimensions: elements above diagonal ``diagonal``
        are zero. See :func:`torchlight.tril`.

        >>> tl.ones(2, 3).tril()
        tensor([[1., 0., 0.],
                [1., 1., 0.]])
        """
        return shape_ops.tril(self, diagonal)

    def triu(self, diagonal=0):
        """The upper triangle of the last two dimensions: elements below diagonal ``diagonal``
        are zero. See :func:`torchlight.triu`.

        >>> tl.ones(3, 3).triu(1)
        tensor([[0., 1., 1.],
                [0., 0., 1.],
                [0., 0., 0.]])
        """
        return shape_ops.triu(self, diagonal)

    def roll(self, shifts, dims=None):
        """Shift elements with wrap-around (see :func:`torchlight.roll`)."""
        return reorder.roll(self, shifts, dims)

    def flip(self, *dims):
        """Reverse the order along ``dims`` (see :func:`torchlight.flip`)."""
        return reorder.flip(
            self, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        )

    def repeat_interleave(self, repeats, dim=None):
        """Repeat each element (see :func:`torchlight.repeat_interleave`)."""
        return reorder.repeat_interleave(self, repeats, dim)

    def unbind(self, dim=0):
        """The slices along ``dim`` as a tuple (see :func:`torchlight.unbind`)."""
        return reorder.unbind(self, dim)

    def select(self, dim, index):
        """The slice at ``index`` along ``dim`` (see :func:`torchlight.select`)."""
        return reorder.select(self, dim, index)

    def repeat(self, *sizes):
        """Tile the tensor: view as (1, s0, 1, s1, ...), expand to (r0, s0, r1, s1, ...), flatten pairs.

        >>> tl.tensor([1, 2]).repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
        """
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        if len(sizes) < self.ndim:
            raise ShapeError(f"repeat: need at least {self.ndim} repeat counts, got {sizes}")
        x = self.reshape((1,) * (len(sizes) - self.ndim) + self.shape)
        paired = x.reshape(tuple(v for s in x.shape for v in (1, s)))
        tiled = paired.expand(tuple(v for s, r in zip(x.shape, sizes) for v in (r, s)))
        return tiled.reshape(tuple(s * r for s, r in zip(x.shape, sizes)))

    # --- indexing ----------------------------------------------------------------------------
    def __getitem__(self, idx):
        return index.getitem(self, idx)

    def __setitem__(self, idx, value):
        before = self._version[0]  # the version the index bounds on record were taken at
        self._check_inplace("__setitem__")
        norm, advanced = index.expand_index(self, idx)
        if not advanced:
            self._write(index.basic_view(self._td, norm), value)
            if type(value) is int and self.__dict__:  # x[:, 0] = 14 on indices: bounds kept
                dispatch.widen_index_range(self, value, before)
            return
        # The positions are computed (and every index checked) as for reading x[idx]. In host
        # memory the values go straight into the storage at the selected elements (O(selection);
        # numpy's casting, broadcasting and last-write-wins for repeats); device memory takes a
        # round trip through the host, correct if not fast.
        positions = positions_of(self, norm)
        new = value.to_numpy() if isinstance(value, Tensor) else value
        if host_memory(self.backend):
            self._td.storage[storage_offsets(self._td, positions)] = new
            return
        arr = self.to_numpy()
        arr.reshape(-1)[positions] = new
        self.copy_(_host(arr, self))
        self._version[0] -= 1

    def index_select(self, dim, idx):
        """The entries at positions ``idx`` (a 1-d ``int64`` tensor) along ``dim``; see
        :func:`torchlight.index_select`.

        >>> tl.tensor([[1, 2], [3, 4], [5, 6]]).index_select(0, tl.tensor([2, 0]))
        tensor([[5, 6],
                [1, 2]])
        """
        return gathering.index_select(self, dim, idx)

    def gather(self, dim, idx):
        """Pick one element per position along ``dim``: ``out[i][j] = self[i][idx[i][j]]`` for
        ``dim=1``; see :func:`torchlight.gather`.

        >>> tl.tensor([[10, 11, 12], [20, 21, 22]]).gather(1, tl.tensor([[2], [0]]))
        tensor([[12],
                [20]])
        """
        return gathering.gather(self, dim, idx)

    def scatter_add(self, dim, idx, src):
        """A copy of ``self`` with ``src`` added at the positions ``idx`` along ``dim``
        (repeated indices add up); see :func:`torchlight.scatter_add`.

        >>> tl.zeros(3).scatter_add(0, tl.tensor([0, 2, 0]), tl.tensor([1.0, 2.0, 3.0]))
        tensor([4., 0., 2.])
        """
        return gathering.scatter_add(self, dim, idx, src)

    def masked_fill(self, mask, value):
        """A copy with ``value`` where ``mask`` (a broadcastable ``bool`` tensor) is ``True``;
        see :func:`torchlight.masked_fill`.

        >>> x = tl.tensor([1.0, 2.0, 3.0])
        >>> x.masked_fill(x > 1.5, 0.0)
        tensor([1., 0., 0.])
        """
        return index.masked_fill(self, mask, value)

    def scatter(self, dim, index_, src=None, value=None):
        """Out-of-place scatter (see :func:`torchlight.tensor.functions.gathering.scatter`)."""
        return gathering.scatter(self, dim, index_, value if src is None else src)

    def scatter_(self, dim, index_, src=None, value=None):
        """In-place :meth:`scatter` (``x.zero_().scatter_(1, idx, 1.0)`` builds one-hots)."""
        return self.copy_(
            gathering.scatter(self.detach(), dim, index_, value if src is None else src)
        )

    def nonzero(self, as_tuple=False):
        """Indices of the non-zero elements (see :func:`torchlight.nonzero`)."""
        return index.nonzero(self, as_tuple)

    def argwhere(self):
        """``nonzero()``: the ``(count, ndim)`` indices of the non-zero elements."""
        return index.nonzero(self)

    def masked_select(self, mask):
        """The elements where ``mask`` holds, 1-D (see :func:`torchlight.masked_select`)."""
        return index.masked_select(self, mask)

    # --- in place ------------------------------------------------------------------------------
    def _check_inplace(self, name):
        if GradMode.enabled and self.requires_grad and self._history is None:
            raise AutogradError(
                f"{name}: a leaf tensor that requires grad is being used in an in-place operation; "
                "wrap the update in `with torchlight.no_grad():` (as optimizers do)"
            )
        if GradMode.enabled and (self._history is not None):
            raise AutogradError(
                f"{name}: in-place operations on tensors that are part of a graph are not supported; use the out-of-place version"
            )
        self._version[0] += 1

    def _inplace_zip(self, op, other, name):
        self._check_inplace(name)
        if (
            isinstance(other, Tensor)
            and other.dtype is self.dtype
            and other.backend is self.backend
            and other._td.shape == self._td.shape
        ):  # the common case (a gradient summed into a buffer): nothing to convert or broadcast
            self.backend.zip(op, self._td, other._td, self._td)
            return self
        other = _P.ndarray_operand(other, self)
        if isinstance(other, Tensor):
            dispatch.same_backend(self, other)
            other = dispatch.cast(other, self.dtype)
            if other.shape != self.shape:
                shape = dispatch.broadcast_shape(self.shape, other.shape, name)
                if shape != self.shape:
                    raise ShapeError(
                        f"{name}: operand of shape {other.shape} cannot be broadcast to {self.shape} in place"
                    )
                other_td = other._td.expand(self.shape)
            else:
                other_td = other._td
        else:
            other_td = dispatch.scalar_like(other, self)._td.expand(self.shape)
        self.backend.zip(op, self._td, other_td, self._td)
        return self

    def _scaled(self, other, alpha):
        """``alpha * other`` for an in-place update of ``self``: an optimizer's ``p.add_(g,
        alpha=-lr)`` in one kernel call (nothing is recorded: the update itself is not)."""
        if (
            isinstance(other, Tensor)
            and other.dtype is self.dtype
            and self.dtype.is_floating_point
            and type(alpha) in (int, float)
        ):
            return dispatch.zip_op("mul", other, dispatch.scalar_like(alpha, other))
        return other * alpha

    def add_(self, other, alpha=1):
        """In place: ``self += alpha * other`` (broadcast to ``self``'s shape); returns ``self``.

        In-place operations are for tensors outside the graph (parameter updates under
        :func:`torchlight.no_grad`, buffers); on a tensor autograd needs they raise :class:`AutogradError`.

        >>> x = tl.zeros(2)
        >>> x.add_(tl.tensor([1.0, 2.0]), alpha=10)
        tensor([10., 20.])
        """
        if alpha != 1:
            other = self._scaled(other, alpha)
        return self._inplace_zip("add", other, "add_")

    def sub_(self, other, alpha=1):
        """In place: ``self -= alpha * other``; returns ``self`` (see :meth:`add_`).

        >>> tl.ones(2).sub_(tl.tensor([1.0, 2.0]), alpha=0.5)
        tensor([0.5, 0. ])
        """
        if alpha != 1:
            other = self._scaled(other, alpha)
        return self._inplace_zip("sub", other, "sub_")

    def mul_(self, other):
        """In place: ``self *= other``; returns ``self`` (see :meth:`add_`).

        >>> tl.ones(2).mul_(3)
        tensor([3., 3.])
        """
        return self._inplace_zip("mul", other, "mul_")

    def div_(self, other):
        """In place: ``self /= other``; returns ``self`` (see :meth:`add_`).

        >>> tl.ones(2).div_(4)
        tensor([0.25, 0.25])
        """
        return self._inplace_zip("div", other, "div_")

    # ``a += b`` and friends: in place, as in PyTorch (``with no_grad(): w -= lr * w.grad`` updates
    # the leaf ``w`` itself). torchlight records no in-place ops in a graph, so on a tensor that is
    # part of one (grad mode on, ``grad_fn`` set) they rebind the name to the out-of-place result.
    def _augmented(self, inplace, other, outofplace):
        if GradMode.enabled and self._history is not None:
            return outofplace(self, other)
        return inplace(self, other)

    def __iadd__(self, other):
        """``self += other``: :meth:`add_` (out of place on a tensor with a ``grad_fn``)."""
        return self._augmented(Tensor.add_, other, Tensor.__add__)

    def __isub__(self, other):
        """``self -= other``: :meth:`sub_` (out of place on a tensor with a ``grad_fn``)."""
        return self._augmented(Tensor.sub_, other, Tensor.__sub__)

    def __imul__(self, other):
        """``self *= other``: :meth:`mul_` (out of place on a tensor with a ``grad_fn``)."""
        return self._augmented(Tensor.mul_, other, Tensor.__mul__)

    def __itruediv__(self, other):
        """``self /= other``: :meth:`div_` (out of place on a tensor with a ``grad_fn``)."""
        return self._augmented(Tensor.div_, other, Tensor.__truediv__)

    def clamp_(self, min=None, max=None):
        """In place :meth:`clamp`; returns ``self``.

        >>> tl.tensor([-1.0, 0.5, 2.0]).clamp_(0.0, 1.0)
        tensor([0. , 0.5, 1. ])
        """
        if min is not None:
            self._inplace_zip("maximum", min, "clamp_")
            self._version[0] -= 1
        if max is not None:
            self._inplace_zip("minimum", max, "clamp_")
        return self

    def copy_(self, src):
        """In place: overwrite the elements with ``src`` (a tensor broadcastable to this shape, on
        any device, or a Python number or list); returns ``self``.

        >>> x = tl.zeros(2, 2)
        >>> x.copy_(tl.tensor([1.0, 2.0]))
        tensor([[1., 2.],
                [1., 2.]])
        """
        self._check_inplace("copy_")
        self._write(self._td, src)
        return self

    def _write(self, target, src):
        """Copy ``src`` (as for :meth:`copy_`) into ``target``, a view of this tensor's storage."""
        if isinstance(src, Tensor):
            source = (src if src.backend is self.backend else src.to(self.device))._td
            if (
                source.storage is target.storage
                and source.offset == target.offset
                and source.strides == target.strides
                and source.shape == target.shape
            ):
                return  # x[i] += 1 writes the updated view back onto itself: nothing to copy
        elif type(src) in (int, float, bool):  # x[i:] = -1
            value = dtypes.fitting(src, self.dtype)
            if FILL in self.backend.capabilities and (
                len(target.shape) < 2 or target.is_contiguous()
            ):
                self.backend.fill(target, value)  # one call, as the contract takes its views
                return
            source = dispatch.filled_cached((), value, self.dtype, self.backend, self)._td
        else:
            source = creation.host_data(src, self.dtype, self.backend)
        shape = target.shape
        self.backend.map("copy", source if source.shape == shape else source.expand(shape), target)

    def fill_(self, value):
        """In place: set every element to ``value``; returns ``self``.

        >>> tl.zeros(3).fill_(7)
        tensor([7., 7., 7.])
        """
        value = value.item() if isinstance(value, Tensor) else value
        if type(value) in (int, float, bool):  # written as a number (one fill call, checked)
            return self.copy_(value)
        return self.copy_(dispatch.scalar_like(value, self))

    def zero_(self):
        """In place: set every element to 0; returns ``self``.

        >>> tl.ones(2).zero_()
        tensor([0., 0.])
        """
        return self.fill_(0)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        """In place: fill with samples from the uniform distribution on :math:`[a, b)`, drawn
        from ``generator`` (the global one by default, see :func:`torchlight.manual_seed`); returns ``self``.

        >>> w = tl.empty(3).uniform_(-1.0, 1.0)
        >>> bool((w.abs() <= 1).all())
        True
        """
        return self.copy_(
            host_drawn(
                lambda: rng_of(generator).uniform(a, b, self.shape), lambda arr: _host(arr, self)
            )
        )

    def normal_(self, mean=0.0, std=1.0, generator=None):
        r"""In place: fill with samples from :math:`\mathcal N(\text{mean}, \text{std}^2)`, drawn
        from ``generator`` (the global one by default); returns ``self``.

        >>> w = tl.empty(10000).normal_(0.0, 0.5)
        >>> abs(w.std().item() - 0.5) < 0.02
        True
        """
        return self.copy_(
            host_drawn(
                lambda: rng_of(generator).normal(mean, std, self.shape),
                lambda arr: _host(arr, self),
            )
        )

    def _inplace_result(self, name, result):
        """Write ``result`` (computed out of place from this tensor's data) into this tensor."""
        self._check_inplace(name)
        self.backend.map("copy", result._td, self._td)
        return self

    def exp_(self):
        """In-place :meth:`exp`."""
        return self._inplace_result("exp_", self.detach().exp())

    def log_(self):
        """In-place :meth:`log`."""
        return self._inplace_result("log_", self.detach().log())

    def sqrt_(self):
        """In-place :meth:`sqrt`."""
        return self._inplace_result("sqrt_", self.detach().sqrt())

    def abs_(self):
        """In-place :meth:`abs`."""
        return self._inplace_result("abs_", self.detach().abs())

    def neg_(self):
        """In-place negation."""
        return self._inplace_result("neg_", -self.detach())

    def sigmoid_(self):
        """In-place :meth:`sigmoid`."""
        return self._inplace_result("sigmoid_", self.detach().sigmoid())

    def tanh_(self):
        """In-place :meth:`tanh`."""
        return self._inplace_result("tanh_", self.detach().tanh())

    def relu_(self):
        """In-place :meth:`relu`."""
        return self._inplace_result("relu_", self.detach().relu())

    def pow_(self, exponent):
        """In-place ``self ** exponent`` (the result keeps this tensor's dtype)."""
        return self._inplace_result("pow_", (self.detach() ** exponent).to(self.dtype))

    def masked_fill_(self, mask, value):
        """In place :meth:`masked_fill`: ``value`` where ``mask`` is ``True``; returns ``self``.

        >>> x = tl.tensor([1.0, 2.0, 3.0])
        >>> x.masked_fill_(x > 1.5, 0.0)
        tensor([1., 0., 0.])
        """
        return self.copy_(self.detach().masked_fill(mask, value))


def _rebuild(array, dtype, device, requires_grad):
    return creation.from_numpy_on(
        array, get_backend(device), dtypes.as_dtype(dtype), requires_grad, like=Tensor
    )


def _host(arr, like):
    return creation.from_numpy_on(np.asarray(arr, dtype=like.dtype.np), like.backend, like=like)


def where(condition, input, other):
    """``condition ? input : other`` elementwise, with broadcasting; scalars are accepted.

    >>> x = tl.tensor([-1.0, 2.0, -3.0])
    >>> tl.where(x > 0, x, 0.0)
    tensor([0., 2., 0.])
    """
    if not isinstance(condition, Tensor) or condition.dtype is not dtypes.bool_:
        raise DTypeError("where: condition must be a bool tensor")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two Python scalars: PyTorch gives the default dtype for floats, int64 for ints
        dt = (
            dtypes.get_default_dtype()
            if isinstance(input, float) or isinstance(other, float)
            else dtypes.int64
        )
        input = dispatch.scalar_like(input, condition, dt)
    if not isinstance(input, Tensor):
        other, input = _P.operands(other, input)
    else:
        input, other = _P.operands(input, other)
    return _P.Where.apply(condition, input, other)


class _Clone(_P.Function):
    @staticmethod
    def forward(ctx, x):
        return dispatch.map_op("copy", x)

    @staticmethod
    def backward(ctx, g):
        return g


class _Move(_P.Function):
    """Move between backends; the gradient moves back."""

    @staticmethod
    def forward(ctx, x, target):
        ctx.source = x.backend
        arr = np.array(x.backend.to_numpy(x._td), copy=True, order="C")  # keeps 0-d shapes
        return creation.from_numpy_on(arr, target, x.dtype, like=x)

    @staticmethod
    def backward(ctx, g):
        return _Move.forward(ctx.__class__(), g, ctx.source), None


shape_ops = shape
