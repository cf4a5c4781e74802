"""A captured step's buffers: its inputs copied in, its outputs copied out, and the host
constants it overwrites put back before each replay (:mod:`torchlight.jit.step`).

>>> import torchlight as tl
>>> from torchlight.jit.step_buffers import buffer_like, load_input, materialise, output_template
>>> x = tl.arange(3.0)
>>> buf = buffer_like(x)
>>> load_input(buf, x)
>>> materialise(output_template(buf * 1)).tolist()
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchlight.tensor.dispatch import alloc, index_range, same_backend, set_index_range
from torchlight.tensor.storage import TensorData
from torchlight.tensor.tensor import Tensor

from .recording import Call, Recording
from .tape import TraceError

__all__ = ["buffer_like", "load_input", "output_template", "materialise", "restores"]


# --- inputs --------------------------------------------------------------------------------------
def buffer_like(t: Any) -> Any:
    """A new tensor of ``t``'s shape, dtype and backend: the capture's buffer for argument ``t``."""
    return alloc(t.shape, t.dtype, t.backend, t)


def load_input(buf: Any, t: Any, index_bounds: bool = False) -> None:
    """Copy ``t``'s values into the captured buffer ``buf`` (a kernel call, no allocation)."""
    same_backend(buf, t)
    buf.backend.map("copy", t._td, buf._td)
    if index_bounds and t.dtype.name == "int64":
        # the recorded step must not read indices back to check them: their bounds go along
        lo, hi = index_range(t)
        set_index_range(buf, lo, hi)


# --- outputs -------------------------------------------------------------------------------------
def output_template(result: Any) -> Any:
    """What the step returned, as the views a replay copies out of (:func:`materialise`):
    tensors, tuples or lists of them, or None; anything else raises :class:`TraceError`."""
    if isinstance(result, Tensor):
        td = result._td
        view = TensorData(td.storage, td.shape, td.strides, td.offset)
        return ("tensor", view, result.backend, result.dtype)  # not the tensor: its graph may go
    if isinstance(result, (tuple, list)):
        return (type(result), [output_template(r) for r in result])
    if result is None:
        return None
    raise TraceError(
        f"a captured step may return tensors, tuples or lists of them, or None; it returned "
        f"{type(result).__name__}. Return the tensor and convert it outside the step"
    )


def materialise(template: Any) -> Any:
    """Fresh tensors (one copy kernel each) holding what :func:`output_template`'s views hold
    now, in the structure the step returned."""
    if template is None:
        return None
    if template[0] == "tensor":
        _, td, backend, dtype = template
        out = alloc(td.shape, dtype, backend, Tensor)
        backend.map("copy", td, out._td)
        return out
    kind, items = template
    return kind(materialise(t) for t in items)


def restores(rec: Recording) -> list[Call]:
    """Calls that put back host data the step wrote over (a tensor built from Python numbers and
    then modified in place), so every replay starts from the same constants."""
    calls = []
    for k, data in rec.host_data.items():
        storage, backend = rec.storages[k], rec.owner[k]
        n = data.size
        view = TensorData(storage, (n,))
        if np.array_equal(backend.to_numpy(view), data.reshape(-1), equal_nan=True):
            continue
        pristine = TensorData(backend.from_numpy(np.ascontiguousarray(data.reshape(-1))), (n,))
        calls.append(Call("map", backend.map, ("copy", pristine, view), {}, backend))
    return calls
