"""DLPack: hand a tensor's memory to another array library, or take theirs, without copying.

`DLPack <https://dmlc.github.io/dlpack/latest/>`_ is the array ecosystem's exchange format: a
producer describes its memory (pointer, device, dtype, shape, strides) in a capsule and a consumer
wraps that memory in its own array type. ``np.from_dlpack(t)``, ``torch.from_dlpack(t)``,
``jax.dlpack.from_dlpack(t)`` and ``cupy.from_dlpack(t)`` consume a torchlight tensor;
:func:`torchlight.from_dlpack` consumes any of theirs.

torchlight does not write capsules itself: it delegates to the storage's own protocol.

* **Host memory** (backends whose ``host_memory`` is true: storage is a flat numpy array): the
  tensor's strided view is an ndarray on the same buffer (shape, strides and offset of the view),
  and numpy's ``__dlpack__`` exports it. Importing goes through ``np.from_dlpack``; the imported
  array's buffer becomes the tensor's storage and its strides the tensor's strides.
* **Device memory**: a backend that declares the ``"dlpack"`` capability exports and imports its
  own storage (``dlpack_source(view)`` and ``from_dlpack(obj, copy)``; the CUDA backend does it
  through the CUDA array interface of its device arrays).

What cannot be shared is copied, unless ``copy=False`` forbids it: dtypes torchlight lacks
(float16, int32, uint8, ...) are converted to float32/int64, read-only memory is copied (an
in-place torchlight op would otherwise write into memory its owner declared immutable), and
negative strides are copied (torchlight views only step forwards).
"""

import numpy as np

from . import dtypes
from .backend.protocol import host_memory
from .backend.registry import get_backend
from .base import TensorBase
from .dispatch import wrap
from .errors import BackendError, DTypeError
from .storage import TensorData

__all__ = ["import_dlpack", "export", "device_of", "dlpack_source", "DLPACK_DEVICES", "host_view"]

# DLPack device types (dlpack.h): kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged
DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cpu", 13: "cuda"}
"""DLPack device type -> the torchlight device that holds such memory (pinned host memory is
host memory; managed memory is reached through the CUDA backend)."""


def host_view(td):
    """The ndarray on ``td``'s host storage with ``td``'s shape, strides and offset (no copy)."""
    st = td.storage
    item = st.itemsize
    if td.size == 0:
        return np.empty(td.shape, st.dtype)
    return np.ndarray(td.shape, st.dtype, st, td.offset * item, [s * item for s in td.strides])


def dlpack_source(t):
    """An object whose ``__dlpack__``/``__dlpack_device__`` describe ``t``'s memory as it is."""
    backend = t.backend
    if "dlpack" in backend.capabilities:
        return backend.dlpack_source(t._td)
    if host_memory(backend):
        return host_view(t._td)
    raise BackendError(
        f"the {backend.name!r} backend cannot export its memory through DLPack (it declares no "
        "'dlpack' capability); move the tensor to the cpu first: t.cpu().__dlpack__()"
    )


def export(t, stream=None, max_version=None, dl_device=None, copy=None):
    """``t.__dlpack__(...)``: a capsule for ``t``'s memory (the modern protocol's keywords)."""
    if t.requires_grad:
        raise BufferError(
            "can't export a tensor that requires grad through DLPack (the consumer would not see "
            "the graph); use t.detach().__dlpack__()"
        )
    src = dlpack_source(t)
    if dl_device is not None and tuple(dl_device) != tuple(src.__dlpack_device__()):
        if DLPACK_DEVICES.get(int(dl_device[0])) != "cpu":
            raise BufferError(
                f"can't export a {t.device} tensor to DLPack device {tuple(dl_device)}"
            )
        if copy is False:
            raise BufferError(
                f"the tensor lives on {t.device}; exporting it to the host (dl_device={tuple(dl_device)}) "
                "needs a copy, which copy=False forbids"
            )
        src, copy = t.to_numpy(), None
        dl_device = None
    kwargs = {"stream": stream}
    # Only the keywords the caller set: numpy < 2.1 (and older producers) accept just ``stream``.
    for name, value in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy)):
        if value is not None:
            kwargs[name] = value
    return src.__dlpack__(**kwargs)


def device_of(t):
    """``t.__dlpack_device__()``: ``(device_type, device_id)`` as DLPack numbers them."""
    return tuple(dlpack_source(t).__dlpack_device__())


def import_dlpack(ext_tensor, device, copy, like):
    """:func:`torchlight.from_dlpack`'s work: a tensor of ``like``'s class (see
    :func:`~torchlight.tensor.dispatch.result_class`) on the memory of ``ext_tensor``."""
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(
            f"from_dlpack expects an object with __dlpack__ (a numpy array, a PyTorch, JAX or CuPy "
            f"tensor, ...), got {type(ext_tensor).__name__}; legacy capsules are not accepted, "
            "pass the array itself"
        )
    if isinstance(ext_tensor, TensorBase) and ext_tensor.requires_grad:
        ext_tensor = ext_tensor.detach()
    dev_type, _ = ext_tensor.__dlpack_device__()
    kind = DLPACK_DEVICES.get(int(dev_type))
    if kind is None:
        raise BackendError(
            f"from_dlpack: DLPack device type {int(dev_type)} has no torchlight backend"
        )
    if kind == "cuda":
        backend = get_backend(device if device is not None else kind)
        if "dlpack" not in backend.capabilities:
            raise BackendError(
                f"from_dlpack: the memory is on a CUDA device but the {backend.name!r} backend cannot "
                "import DLPack; use device='cuda' with torchlight-backend-cuda installed"
            )
        td, dt = backend.from_dlpack(ext_tensor, copy)
        return wrap(td, backend, dt, like)
    backend = get_backend(device if device is not None else kind)
    # copy=False is passed on (the producer must not copy either); a requested copy is made once, below
    arr = np.from_dlpack(ext_tensor, copy=False) if copy is False else np.from_dlpack(ext_tensor)
    return from_host_array(arr, backend, copy, like)


def from_host_array(arr, backend, copy, like):
    """A tensor (of ``like``'s class) on ``backend`` viewing the host ndarray ``arr`` (shape, strides and offset kept).

    Copies (when ``copy`` allows) what cannot be shared; see the module docstring.
    """
    why = _why_copy(arr)
    if copy is True and why is None:
        why = "copy=True"
    if why is not None:
        if copy is False:
            raise BufferError(
                f"from_dlpack: sharing memory is impossible ({why}) and copy=False forbids a copy"
            )
        dt = dtypes.as_dtype(arr.dtype) if arr.dtype.kind in "fiub" else None
        if dt is None:
            raise DTypeError(f"from_dlpack: dtype {arr.dtype} has no torchlight equivalent")
        arr = np.array(arr, dtype=dt.np, order="C", copy=True)
    dt = dtypes.from_numpy_dtype(arr.dtype)
    item = arr.itemsize
    strides = tuple(s // item for s in arr.strides)
    span = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides)) if arr.size else 0
    # the flat buffer from the first element (the lowest address: strides are >= 0) to the last
    flat = (
        np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,))
        if span
        else arr.reshape(-1)
    )
    storage = backend.from_numpy(flat)
    if span and not (host_memory(backend) and np.shares_memory(storage, flat)):
        # the backend keeps its own (device) memory: it copied, so the view is packed
        if copy is False:
            raise BufferError(
                f"from_dlpack: the {backend.name!r} backend keeps its own memory, so host memory "
                "cannot be shared with it; copy=False forbids a copy"
            )
        arr = np.ascontiguousarray(arr)
        return wrap(TensorData(backend.from_numpy(arr.reshape(-1)), arr.shape), backend, dt, like)
    return wrap(TensorData(storage, arr.shape, strides if arr.size else None, 0), backend, dt, like)


def _why_copy(arr):
    """Why ``arr`` cannot be a tensor's storage as it is, or None when it can."""
    if arr.dtype not in (d.np for d in dtypes.DTYPES) or not arr.dtype.isnative:
        return f"dtype {arr.dtype} is not one of torchlight's float32, float64, int64, bool"
    if not arr.flags.writeable:
        return "the memory is read-only"
    if any(s < 0 or s % arr.itemsize for s in arr.strides):
        return f"strides {arr.strides} are negative or not a multiple of the item size"
    return None
