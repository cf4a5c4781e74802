"""PyTorch's conveniences on ``Tensor`` that are not ops: legacy type strings and conversions,
``new_*`` factories, device queries, ``format()`` of 0-d tensors.

A mixin so that ``tensor.py`` keeps the tensor's own machinery (metadata, autograd, arithmetic)
readable; ``Tensor`` inherits these unchanged.
"""

from typing import TYPE_CHECKING, Any

from . import creation, dispatch, dtypes
from .backend.protocol import host_memory
from .backend.registry import get_backend
from .errors import DTypeError

if TYPE_CHECKING:
    from .storage import TensorData

    class _ProvidedByTensor:
        """What the mixin's methods use of ``Tensor``: its slots and its ``device`` property
        (declared for the type checker only: annotations in the class body would give every
        tensor an ``__annotations__`` attribute)."""

        _td: TensorData
        backend: Any  # a Backend (torchlight.tensor.backend.protocol)

        @property
        def device(self) -> Any: ...  # a torchlight.device

else:
    _ProvidedByTensor = object

__all__ = ["TensorConveniences", "TYPE_NAMES", "type_string", "dtype_of_type_string"]


TYPE_NAMES = {
    "FloatTensor": dtypes.float32,
    "DoubleTensor": dtypes.float64,
    "LongTensor": dtypes.int64,
    "IntTensor": dtypes.int64,
    "BoolTensor": dtypes.bool_,
}
"""PyTorch's legacy typed-tensor class names and the dtype each stands for (torchlight has one
integer dtype, so ``IntTensor`` is int64)."""

_NAME_OF = {
    dtypes.float32: "FloatTensor",
    dtypes.float64: "DoubleTensor",
    dtypes.int64: "LongTensor",
    dtypes.bool_: "BoolTensor",
}


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
    if len(parts) in (2, 3) and parts[0] in ("torch", "torchlight") and parts[-1] in TYPE_NAMES:
        return TYPE_NAMES[parts[-1]], (parts[1] if len(parts) == 3 else None)
    raise DTypeError(
        f"unknown tensor type {s!r}; expected e.g. 'torch.FloatTensor', 'torch.LongTensor', "
        "'torch.DoubleTensor' or 'torch.BoolTensor' (or a dtype)"
    )


class TensorConveniences(_ProvidedByTensor):
    """Methods of :class:`~torchlight.Tensor` kept for PyTorch programs (see the module docstring)."""

    __slots__ = ()

    def ndimension(self) -> int:
        """The number of dims (``dim()``'s older name)."""
        return len(self._td.shape)

    def nelement(self) -> int:
        """The number of elements (``numel()``'s older name)."""
        return self._td.size

    @property
    def is_cuda(self) -> bool:
        """True when the tensor is on a ``cuda`` device (PyTorch's attribute)."""
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        """True when the tensor is on the built-in ``cpu`` device."""
        return self.device.type == "cpu"

    def is_complex(self) -> bool:
        """False: torchlight has no complex dtypes."""
        return False

    def get_device(self) -> int:
        """PyTorch's device ordinal: -1 for data in host memory, else 0 (each backend drives one
        device)."""
        return -1 if dispatch.HOST_MEMORY in self.backend.capabilities else 0

    def pin_memory(self):
        """The tensor itself: pinning matters for host→GPU copies, and torchlight's transfers are
        synchronous. Only host-memory tensors can be pinned (as in PyTorch)."""
        if dispatch.HOST_MEMORY not in self.backend.capabilities:
            raise DTypeError(
                f"pin_memory: only tensors in host memory can be pinned, this one is on '{self.device}'"
            )
        return self

    def is_pinned(self) -> bool:
        """False: torchlight does not page-lock memory."""
        return False

    def cuda(self, device=None):
        """``to("cuda")`` (``device`` may name an index: ``cuda(0)``); raises when no usable
        cuda backend is installed."""
        return self.to(
            "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device
        )

    def int(self):
        """An integer copy; torchlight's integer dtype is int64 (PyTorch's ``int()`` gives int32)."""
        return self.to(dtypes.int64)

    def half(self):
        """float16: not a dtype torchlight computes in, so this raises a clear ``DTypeError``."""
        return self.to(dtypes.as_dtype("float16"))

    def bfloat16(self):
        """bfloat16: not a dtype torchlight computes in, so this raises a clear ``DTypeError``."""
        return self.to(dtypes.as_dtype("bfloat16"))

    def type(self, dtype=None, non_blocking=False):
        """No argument: PyTorch's type string (``"torch.FloatTensor"``). With a dtype or a type
        string (``"torch.LongTensor"``): the tensor converted to it.

        >>> import torchlight as tl
        >>> x = tl.tensor([1.5, 2.5])
        >>> x.type(), x.type("torch.LongTensor").tolist(), x.type(tl.float64).dtype
        ('torch.FloatTensor', [1, 2], torchlight.float64)
        """
        if dtype is None:
            return type_string(self)
        if isinstance(dtype, str) and "Tensor" in dtype:
            dt, dev = dtype_of_type_string(dtype)
            out = self.to(dt)
            return out if dev is None else out.to(dev)
        if (
            isinstance(dtype, type)
            and hasattr(dtype, "dtype")
            and isinstance(dtype.dtype, dtypes.DType)
        ):
            return self.to(dtype.dtype)  # tl.LongTensor and friends
        return self.to(dtypes.as_dtype(dtype))

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new tensor from ``data`` with this tensor's dtype and device unless given.

        >>> import torchlight as tl
        >>> tl.ones(2, dtype=tl.float64).new_tensor([1, 2]).dtype
        torchlight.float64
        """
        return creation.from_data(
            data, dtype or self.dtype, self._backend_or(device), requires_grad, like=self
        )

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of ``size`` with this tensor's dtype and device unless given.

        >>> import torchlight as tl
        >>> tl.ones(3, dtype=tl.int64).new_zeros(2, 2).tolist()
        [[0, 0], [0, 0]]
        """
        return self._filled(size, 0, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """Ones of ``size`` with this tensor's dtype and device unless given.

        >>> import torchlight as tl
        >>> tl.zeros(1).new_ones((2,)).tolist()
        [1.0, 1.0]
        """
        return self._filled(size, 1, dtype, device, requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        """``size`` filled with ``fill_value``, this tensor's dtype and device unless given.

        >>> import torchlight as tl
        >>> tl.zeros(1).new_full((2,), 7).tolist()
        [7.0, 7.0]
        """
        return self._filled((size,), fill_value, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """An uninitialised tensor of ``size``, this tensor's dtype and device unless given.

        >>> import torchlight as tl
        >>> tl.zeros(1, dtype=tl.int64).new_empty(2, 3).shape
        (2, 3)
        """
        return creation.empty(
            creation.size_of(size),
            dtype or self.dtype,
            self._backend_or(device),
            requires_grad,
            like=self,
        )

    def _backend_or(self, device):
        return self.backend if device is None else get_backend(device)

    def _filled(self, size, value, dtype, device, requires_grad):
        shape = creation.size_of(size)
        dt = dtype or self.dtype
        return creation.filled(shape, value, dt, self._backend_or(device), requires_grad, like=self)

    def __format__(self, spec):
        """``format(t, ".2f")`` / f-strings: a 0-d tensor formats as its Python number; other
        tensors format as ``str(t)`` and refuse a format spec (as in PyTorch)."""
        if self.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)
