"""Creating tensors: from data, filled, ranges, random; plus ``cat``/``stack``/``where``.

Every factory takes ``dtype=``, ``device=`` (a backend name such as ``"cpu"``, or a
:class:`~torchlight.device`; ``python -m torchlight`` lists the installed backends) and
``requires_grad=``. Data is built on the host with numpy and handed to the backend once.
"""

import math

import numpy as np

from . import creation, dlpack, dtypes
from .backend.protocol import host_memory
from .backend.registry import get_backend
from .dispatch import alloc, wrap
from .errors import DTypeError, ShapeError
from .random import (
    device_stream,
    host_drawn,
    normal_floats,
    rng_of,
    uniform_floats,
    uniform_ints,
)
from .storage import TensorData
from .tensor import Tensor

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "full",
    "empty",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand_like",
    "randn_like",
    "arange",
    "linspace",
    "eye",
    "rand",
    "randn",
    "randint",
    "logspace",
    "randperm",
    "from_dlpack",
]


def _on(array, device, dtype=None, requires_grad=False):
    return creation.from_numpy_on(array, get_backend(device), dtype, requires_grad, like=Tensor)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, numpy arrays, tensors).

    Python floats get the default dtype (float32 unless ``set_default_dtype`` changed it), ints
    int64, bools bool; numpy arrays keep their dtype (float16 → float32, other ints → int64).

    >>> tl.tensor([[1, 2], [3, 4]])
    tensor([[1, 2],
            [3, 4]])
    >>> tl.tensor([0.5, 1.5], requires_grad=True)
    tensor([0.5, 1.5], requires_grad=True)
    """
    return creation.from_data(data, dtype, get_backend(device), requires_grad, like=Tensor)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but returns ``data`` itself when it already is a matching tensor.

    >>> x = tl.tensor([1.0, 2.0])
    >>> tl.as_tensor(x) is x, tl.as_tensor([1, 2]).dtype
    (True, torchlight.int64)
    """
    if isinstance(data, Tensor):
        out = data
        if dtype is not None:
            out = out.to(dtypes.as_dtype(dtype))
        return out if device is None else out.to(device)
    if isinstance(data, np.ndarray) and dtype is None and device is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A tensor sharing memory with a C-contiguous ``array`` (copied when not contiguous, or when
    its dtype is not one of torchlight's).

    It lives on the default device when that device keeps its data in host memory (the
    ``"host_memory"`` backend capability, e.g. ``cpu``), so writes through either
    side stay visible; otherwise (a GPU default device) on ``cpu``, as in PyTorch.

    >>> import numpy as np, torchlight as tl
    >>> a = np.arange(3.0)
    >>> t = tl.from_numpy(a)
    >>> a[0] = 7.0
    >>> t.tolist()
    [7.0, 1.0, 2.0]
    """
    if not isinstance(array, np.ndarray):
        raise DTypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    dt = dtypes.as_dtype(array.dtype)
    if array.dtype != dt.np or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array, dtype=dt.np)
    elif type(array) is not np.ndarray:
        # a subclass (np.memmap: nanoGPT's batches) as a plain array over the same memory: a
        # subclass's hooks would run again in every op on every view of it
        array = array.view(np.ndarray)
    backend = get_backend()
    if not host_memory(backend):
        backend = get_backend("cpu")
    return wrap(
        TensorData.packed(array.reshape(-1), array.shape, array.size, None), backend, dt, Tensor
    )


def _filled(shape, value, dtype, device, requires_grad):
    return creation.filled(shape, value, dtype, get_backend(device), requires_grad, like=Tensor)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given shape filled with 0 (the default dtype, ``float32``, unless ``dtype``
    says otherwise).

    The shape is given as separate ints or one tuple; ``device`` picks the backend (the default
    device when ``None``, see :func:`torchlight.set_default_device`).

    >>> tl.zeros(2, 3)
    tensor([[0., 0., 0.],
            [0., 0., 0.]])
    >>> tl.zeros((2,), dtype=tl.int64)
    tensor([0, 0])
    """
    return _filled(
        creation.size_of(size), 0, dtype or dtypes.get_default_dtype(), device, requires_grad
    )


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given shape filled with 1 (the default dtype unless given); arguments as
    :func:`zeros`.

    >>> tl.ones(2, 2, requires_grad=True)
    tensor([[1., 1.],
            [1., 1.]], requires_grad=True)
    """
    return _filled(
        creation.size_of(size), 1, dtype or dtypes.get_default_dtype(), device, requires_grad
    )


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value``; the dtype follows the value (``int64``
    for an int, ``float32`` for a float, ``bool``) unless given.

    >>> tl.full((2, 2), 7)
    tensor([[7, 7],
            [7, 7]])
    """
    if dtype is None:
        dtype = dtypes.scalar_dtype(fill_value)
    return _filled(creation.size_of((size,)), fill_value, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given shape whose elements are not initialised (whatever the memory held):
    use it only when every element is written before being read.

    >>> tl.empty(2, 3).shape
    (2, 3)
    """
    return creation.empty(
        creation.size_of(size),
        dtype or dtypes.get_default_dtype(),
        get_backend(device),
        requires_grad,
        like=Tensor,
    )


def _like(fn, x, dtype, device, requires_grad, *args):
    return fn(
        x.shape,
        *args,
        dtype=dtype or x.dtype,
        device=device or x.backend,
        requires_grad=requires_grad,
    )


def zeros_like(x, dtype=None, device=None, requires_grad=False):
    """Zeros with ``x``'s shape, and its dtype and device unless given.

    >>> tl.zeros_like(tl.tensor([1, 2, 3]))
    tensor([0, 0, 0])
    """
    return _like(zeros, x, dtype, device, requires_grad)


def ones_like(x, dtype=None, device=None, requires_grad=False):
    """Ones with ``x``'s shape, dtype and device (unless given).

    >>> tl.ones_like(tl.zeros(2))
    tensor([1., 1.])
    """
    return _like(ones, x, dtype, device, requires_grad)


def empty_like(x, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with ``x``'s shape, dtype and device (see :func:`empty`).

    >>> tl.empty_like(tl.zeros(2, dtype=tl.int64)).dtype
    torchlight.int64
    """
    return _like(empty, x, dtype, device, requires_grad)


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of ``x``'s shape, dtype and device filled with ``fill_value``.

    >>> tl.full_like(tl.zeros(3), 0.5)
    tensor([0.5, 0.5, 0.5])
    """
    return full(
        x.shape,
        fill_value,
        dtype=dtype or x.dtype,
        device=device or x.backend,
        requires_grad=requires_grad,
    )


def rand_like(x, dtype=None, device=None, generator=None):
    """Uniform samples on :math:`[0, 1)` with ``x``'s shape, dtype and device (see :func:`rand`).

    >>> tl.rand_like(tl.zeros(2, 2)).shape
    (2, 2)
    """
    return rand(x.shape, dtype=dtype or x.dtype, device=device or x.backend, generator=generator)


def randn_like(x, dtype=None, device=None, generator=None):
    """Standard normal samples with ``x``'s shape, dtype and device (see :func:`randn`).

    >>> x = tl.randn_like(tl.zeros(3, dtype=tl.float64))
    >>> x.shape, x.dtype
    ((3,), torchlight.float64)
    """
    return randn(x.shape, dtype=dtype or x.dtype, device=device or x.backend, generator=generator)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    r"""The 1-d tensor ``[start, start + step, ...]`` up to but excluding ``end``:
    :math:`\lceil(\text{end} - \text{start})/\text{step}\rceil` elements. With one argument it counts
    from 0. ``int64`` when every argument is an int, else ``float32``.

    >>> tl.arange(5)
    tensor([0, 1, 2, 3, 4])
    >>> tl.arange(0, 1, 0.25)
    tensor([0.  , 0.25, 0.5 , 0.75])
    """
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ShapeError("arange: step must be non-zero")
    if dtype is None:
        dtype = (
            dtypes.int64
            if all(isinstance(v, int) for v in (start, end, step))
            else dtypes.get_default_dtype()
        )
    dt = dtypes.as_dtype(dtype)
    n = max(0, math.ceil((end - start) / step))
    arr = (
        start + np.arange(n, dtype=np.float64 if dt.is_floating_point else np.int64) * step
    ).astype(dt.np)
    return _on(arr, device, dt, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (the default dtype
    unless given).

    >>> tl.linspace(0, 1, 5)
    tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    dt = dtypes.as_dtype(dtype or dtypes.get_default_dtype())
    return _on(np.linspace(start, end, int(steps)), device, dt, requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """``steps`` values ``base ** v`` for ``v`` evenly spaced from ``start`` to ``end``.

    >>> import torchlight as tl
    >>> tl.logspace(0, 2, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    dt = dtypes.as_dtype(dtype or dtypes.get_default_dtype())
    arr = np.logspace(start, end, int(steps), base=base)
    return _on(arr, device, dt, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The ``(n, m)`` identity matrix (``m = n`` by default): ones on the diagonal, zeros elsewhere.

    >>> tl.eye(2, 3)
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    dt = dtypes.as_dtype(dtype or dtypes.get_default_dtype())
    return _on(np.eye(n, m), device, dt, requires_grad)


def _random(shape, draw, dtype, device, requires_grad, kind=None, generator=None):
    dt = dtypes.as_dtype(dtype or dtypes.get_default_dtype())
    if not dt.is_floating_point:
        raise DTypeError(f"random floats cannot have dtype {dt}; use randint for integers")
    be = get_backend(device)
    if kind is not None and "random" in be.capabilities:  # drawn on the device: nothing uploaded
        t = alloc(shape, dt, be, Tensor)
        be.random_(t._td, kind, *device_stream(generator))
        return t.requires_grad_(True) if requires_grad else t
    # drawn at the tensor's precision: a float64 uniform rounded to float32 could be 1.0
    return host_drawn(
        lambda: draw(generator, shape, dt.np), lambda a: _on(a, be, dt, requires_grad)
    )


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    """Samples from the uniform distribution on :math:`[0, 1)`, of the given shape (ints or one
    tuple), drawn from ``generator`` (the global one, seeded by :func:`torchlight.manual_seed`, by
    default).

    >>> x = tl.rand(2, 3)
    >>> x.shape, bool(((x >= 0) & (x < 1)).all())
    ((2, 3), True)
    """
    return _random(
        creation.size_of(size),
        uniform_floats,
        dtype,
        device,
        requires_grad,
        "uniform",
        generator,
    )


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    """Samples from the standard normal distribution :math:`\\mathcal N(0, 1)`, of the given shape,
    drawn from ``generator`` (the global one by default). For :math:`\\mathcal N(\\mu, \\sigma^2)`
    use ``mu + sigma * tl.randn(...)``.

    >>> x = tl.randn(10000)
    >>> abs(x.mean().item()) < 0.05, abs(x.std().item() - 1) < 0.05
    (True, True)
    """
    return _random(
        creation.size_of(size),
        normal_floats,
        dtype,
        device,
        requires_grad,
        "normal",
        generator,
    )


def randint(low, high=None, size=(), dtype=None, device=None, generator=None):
    """Integers uniform on [low, high) (``randint(high, size)`` also works, like PyTorch).

    >>> x = tl.randint(0, 10, (2, 3))
    >>> x.shape, x.dtype, bool(((x >= 0) & (x < 10)).all())
    ((2, 3), torchlight.int64, True)
    """
    if isinstance(high, (tuple, list)) and size == ():  # randint(high, size), as in PyTorch
        high, size = None, high
    if high is None:
        low, high = 0, low
    low, high = int(low), int(high)
    shape = creation.size_of((size,))
    dt = dtypes.as_dtype(dtype or dtypes.int64)
    be = get_backend(device)
    # the bounds are known: no pass over the values to record them
    return host_drawn(
        lambda: uniform_ints(generator, low, high, shape),
        lambda a: creation.from_numpy_on(a, be, dt, like=Tensor, bounds=(low, high - 1)),
    )


def randperm(n, dtype=None, device=None, requires_grad=False, generator=None):
    """A random permutation of ``0 .. n-1`` (int64 by default).

    >>> import torchlight as tl
    >>> sorted(tl.randperm(5).tolist())
    [0, 1, 2, 3, 4]
    """
    n = int(n)
    if n < 0:
        raise ShapeError(f"randperm: n must be non-negative, got {n}")
    dt = dtypes.as_dtype(dtype or dtypes.int64)
    return host_drawn(
        lambda: rng_of(generator).permutation(n).astype(np.int64),
        lambda a: _on(a, device, dt, requires_grad),
    )


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor on the memory of ``ext_tensor``, any object with ``__dlpack__`` (zero-copy).

    ``ext_tensor`` may be a numpy array, a PyTorch/JAX/CuPy tensor, another torchlight tensor,
    or any DLPack producer. Host memory becomes a ``cpu`` tensor (``device=`` may name another
    host-memory backend); CUDA memory becomes a ``cuda`` tensor. Writes through
    either side are seen by the other. ``copy=None`` copies only what cannot be shared (a dtype
    torchlight lacks, read-only memory, negative strides), ``copy=True`` always copies,
    ``copy=False`` raises :class:`BufferError` instead of copying.

    >>> import numpy as np, torchlight as tl
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> t = tl.from_dlpack(a)
    >>> t[0, 0] = 10.0
    >>> a[0, 0]
    np.float64(10.0)
    >>> tl.from_dlpack(a.T).stride()          # views keep their strides
    (1, 3)
    """
    return dlpack.import_dlpack(ext_tensor, device, copy, like=Tensor)
