"""The supported API for distributions built on torchlight-tensor (nn, optim, distributed, yours).

Layers above the tensor package sometimes need more than the user API: a loss that hands
validated rows to a fused kernel, an optimizer step that runs a backend's update in place, a
data-parallel wrapper that lays gradients into its own communication buffers. They import what
they need from here, never from the tensor package's internal modules, so those modules can be
reorganised without breaking them. Everything here keeps its signature within an ``API_VERSION``.

* Views and tensors: :class:`TensorData` (a strided view of a backend's storage),
  :func:`tensor_data` (the view behind a tensor), :func:`wrap` (a leaf tensor around a view),
  :func:`alloc` (an uninitialised contiguous tensor).
* Memory: :func:`host_memory` — may this backend's storage be read and written as a numpy array?
* Index bounds: :func:`index_range` / :func:`set_index_range` — the checked ``[lo, hi]`` of an
  int64 tensor, recorded so index checks need no device→host read.
* Constants: :func:`ones_cached` — a read-only ones tensor whose memory is shared between calls.
* Kernels under public functions: :func:`cross_entropy_rows` (per-row cross-entropy of
  validated targets; ``nn.functional.cross_entropy`` validates and reduces), :func:`nll_rows`
  (the same for ``nn.functional.nll_loss`` on log-probabilities), :func:`linear`
  (``x @ w.T + b`` as one autograd node; ``nn.functional.linear`` checks the shapes),
  :func:`adam_step_` (one in-place Adam/AdamW update; ``optim.Adam`` keeps the state),
  :func:`adagrad_step_` (likewise for Adagrad), :func:`sgd_step_` (and for SGD),
  :func:`batch_norm_training` (train-mode batch norm as one node; ``nn.functional.batch_norm``
  checks the shapes).

>>> import torchlight as tl
>>> from torchlight.tensor.extension import host_memory, tensor_data, wrap
>>> t = tl.ones(3)
>>> host_memory(t.backend)
True
>>> u = wrap(tensor_data(t), t.backend, t.dtype)  # a second tensor on the same memory
>>> u.add_(1.0).tolist(), t.tolist()
([2.0, 2.0, 2.0], [2.0, 2.0, 2.0])
"""

from typing import Any

from . import dispatch
from .backend.protocol import host_memory
from .dispatch import index_range, ones_cached, set_index_range
from .functions.activation import cross_entropy_rows
from .functions.batch_norm import batch_norm_training
from .functions.gathering import nll_rows
from .functions.linalg import linear
from .functions.updates import adagrad_step_, adam_step_, sgd_step_
from .storage import TensorData
from .tensor import Tensor

__all__ = [
    "TensorData",
    "tensor_data",
    "wrap",
    "alloc",
    "host_memory",
    "index_range",
    "set_index_range",
    "ones_cached",
    "cross_entropy_rows",
    "nll_rows",
    "linear",
    "adam_step_",
    "adagrad_step_",
    "sgd_step_",
    "batch_norm_training",
]


def wrap(td: TensorData, backend: Any, dtype: Any, like: Any = None) -> Tensor:
    """A fresh leaf tensor around the view ``td`` on ``backend`` (no history, its own version
    counter): a :class:`~torchlight.Tensor`, or of the class a tensor made like ``like`` gets
    (see :func:`torchlight.tensor.dispatch.result_class`)."""
    return dispatch.wrap(td, backend, dtype, Tensor if like is None else like)


def alloc(shape: tuple[int, ...], dtype: Any, backend: Any, like: Any = None) -> Tensor:
    """An uninitialised contiguous tensor of ``shape`` on ``backend`` (a
    :class:`~torchlight.Tensor` unless ``like`` says otherwise, as in :func:`wrap`)."""
    return dispatch.alloc(shape, dtype, backend, Tensor if like is None else like)


def tensor_data(t) -> TensorData:
    """The strided view ``(storage, shape, strides, offset)`` behind tensor ``t`` (shared, not
    copied: writing through it writes ``t``; bump nothing, autograd does not see it)."""
    return t._td
