"""DLPack for the cuda backend: GPU memory shared with CuPy, PyTorch, JAX... without a copy.

The backend declares the ``"dlpack"`` capability of the contract and provides its two halves:

* **export** (``dlpack_source(view)``): the view — storage, shape, strides, offset — is described
  through the CUDA array interface of the numba device array that holds it (pointer to the view's
  first element, byte strides), and ``cuda.core``'s ``StridedMemoryView`` (which numba-cuda
  depends on) writes the DLPack capsule from that description. The description object holds the
  storage, so the memory lives as long as the consumer's array.
* **import** (``from_dlpack(obj, copy)``): ``StridedMemoryView.from_dlpack`` reads the producer's
  capsule (pointer, shape, strides in elements, dtype, read-only flag); the memory becomes a flat
  numba device array through the CUDA array interface, owned by that memory view (which keeps
  the producer's memory alive), and the tensor views it with the producer's strides.

Under numba's CUDA simulator the "device" memory is a numpy array in host memory: a tensor
exports that array's strided view (DLPack device ``kDLCPU``, which is what it is), so the view
arithmetic runs without a GPU.
"""

import numpy as np
from numba import cuda

from torchlight.tensor import dtypes
from torchlight.tensor.dlpack import host_view
from torchlight.tensor.indexing import contiguous_strides
from torchlight.tensor.storage import TensorData

from ._launch import SIMULATOR

__all__ = ["dlpack_source", "from_dlpack"]


class _ViewInterface:
    """A strided view of a device array, as the CUDA array interface (v3) describes it."""

    def __init__(self, view):
        st = view.storage
        item = st.dtype.itemsize
        self.storage = st  # keeps the memory alive while a consumer holds the capsule
        base = st.__cuda_array_interface__["data"][0]
        self.__cuda_array_interface__ = {
            "shape": tuple(view.shape),
            "strides": tuple(s * item for s in view.strides),
            "typestr": st.dtype.str,
            "data": (base + view.offset * item, False),
            "version": 3,
            "stream": None,  # the backend launches on the default stream and synchronises
        }


def dlpack_source(view):
    """An object with ``__dlpack__``/``__dlpack_device__`` for ``view``'s device memory."""
    if SIMULATOR:
        st = view.storage
        return host_view(TensorData(st._ary, view.shape, view.strides, view.offset))
    from cuda.core.utils import StridedMemoryView

    return StridedMemoryView.from_cuda_array_interface(_ViewInterface(view), stream_ptr=-1)


def from_dlpack(backend, obj, copy=None):
    """``(TensorData, dtype)`` on the device memory of the DLPack producer ``obj``.

    Shares the memory unless a copy is needed (a dtype torchlight lacks, read-only memory,
    negative strides) or asked for (``copy=True``); ``copy=False`` refuses a needed copy.
    """
    from cuda.core.utils import StridedMemoryView

    smv = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
    dt = np.dtype(smv.dtype)
    shape = tuple(smv.shape)
    item = dt.itemsize
    strides = tuple(smv.strides) if smv.strides is not None else contiguous_strides(shape)
    size = int(np.prod(shape)) if shape else 1
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if size else 0
    why = None
    if dt not in [d.np for d in dtypes.DTYPES]:
        why = f"dtype {dt} is not one of torchlight's"
    elif smv.readonly:
        why = "the memory is read-only"
    elif any(s < 0 for s in strides):
        why = f"strides {strides} are negative"
    if why is not None and copy is False:
        raise BufferError(
            f"from_dlpack: sharing memory is impossible ({why}) and copy=False forbids a copy"
        )
    desc = {
        "shape": (max(span, 0),),
        "strides": None,
        "typestr": dt.str,
        "data": (smv.ptr, False),
        "version": 3,
        "stream": None,
    }
    if why is not None:  # through the host: the copy converts dtype and layout on the way
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        desc["shape"] = (1 + sum(abs((n - 1) * s) for n, s in zip(shape, strides)),)
        desc["data"] = (smv.ptr + lo * item, False)
        flat = cuda.from_cuda_array_interface(desc, owner=smv, sync=True).copy_to_host()
        host = np.lib.stride_tricks.as_strided(flat[-lo:], shape, [s * item for s in strides])
        target = dtypes.as_dtype(dt)
        arr = np.ascontiguousarray(host, dtype=target.np)
        return TensorData(cuda.to_device(arr.reshape(-1)), shape), target
    flat = cuda.from_cuda_array_interface(desc, owner=smv, sync=True)
    td = TensorData(flat, shape, strides if size else None, 0)
    if copy:
        out = cuda.device_array(size, dtype=dt)
        packed = TensorData(out, shape)
        backend.map("copy", td, packed)
        td = packed
    return td, dtypes.from_numpy_dtype(dt)
