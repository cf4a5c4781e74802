"""From tensors to backend calls: allocation, broadcasting, casting, and the raw (non-recorded) ops.

This is the only module that calls a backend's primitives. Each helper takes tensors and returns
a new tensor *without* autograd history; the differentiable ``Function`` classes are built from
these. The core's half of the backend contract lives here: check shapes, compute the broadcast
shape, expand inputs with stride 0, cast to a common dtype, allocate ``out``, then call the backend.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from torchlight.autograd.grad_mode import GradMode

from .backend.bounds import value_range
from .backend.protocol import (
    BROADCAST,
    EMPTY_HANDLE,
    FILL,
    HOST_MEMORY,
    NEW_RESULT,
    host_memory,
)
from .backend.registry import get_backend
from .dtypes import fitting
from .errors import BackendError, DTypeError, OutOfMemoryError, ShapeError, TensorIndexError
from .indexing import contiguous_strides, shape_broadcast
from .storage import TensorData

if TYPE_CHECKING:  # types only: at run time this module never names the public class
    from .dtypes import DType
    from .tensor import Tensor as _Tensor

__all__ = [
    "result_class",
    "wrap",
    "alloc",
    "view_of",
    "map_op",
    "zip_op",
    "zip_into",
    "where_op",
    "reduce_op",
    "cast",
    "contiguous",
    "sum_to",
    "same_backend",
    "HOST_MEMORY",
    "common_backend",
    "scalar_like",
    "item_of",
    "filled_cached",
    "freeze_constants",
    "constant_cached",
    "ones_cached",
    "set_index_range",
    "index_range",
    "first_outside",
    "keep_index_range",
    "widen_index_range",
    "normalize_dim",
    "normalize_dims",
    "too_big",
    "MAX_NUMEL",
]


def result_class(like: Any) -> type:
    """The class of a tensor made like ``like`` (a tensor or a tensor class): ``like``'s class
    unless that class names another in ``_results_as`` (see :mod:`~torchlight.tensor.base`).

    >>> import torchlight as tl
    >>> from torchlight.tensor.dispatch import result_class
    >>> result_class(tl.ones(2)) is tl.Tensor
    True
    """
    cls: Any = like if isinstance(like, type) else type(like)
    return cls._results_as or cls


def wrap(td: TensorData, backend: Any, dtype: DType, like: Any) -> _Tensor:
    """A fresh leaf tensor around ``td`` (no history, its own version counter), of the class of
    a tensor made like ``like`` (a tensor or a tensor class, see :func:`result_class`)."""
    cls: Any = result_class(like)
    t = cls.__new__(cls)
    t._td = td
    t.backend = backend
    t.dtype = dtype
    t.requires_grad = False
    t.grad = None
    t._history = None
    t._retains_grad = False
    t._version = [0]
    t._base = None
    return t


def alloc(shape: tuple[int, ...], dtype: DType, backend: Any, like: Any) -> _Tensor:
    """An uninitialised contiguous tensor (of ``like``'s class, see :func:`wrap`)."""
    n = math.prod(shape)
    handle = None
    try:
        if EMPTY_HANDLE in backend.capabilities:
            storage, handle = backend.empty_handle(shape, dtype)
        else:
            storage = backend.empty(n, dtype)
    except (
        MemoryError,
        ValueError,
        OverflowError,
    ) as exc:  # numpy: "Maximum allowed dimension exceeded"
        raise too_big(shape, dtype, backend, exc) from exc
    return wrap(TensorData.packed(storage, shape, n, handle), backend, dtype, like)


MAX_NUMEL = 2**60
"""More elements than any backend can address (an exbibyte even of bools; byte offsets are int64):
refused up front, before numpy fails with a message that names no size."""


def too_big(shape: Sequence[int], dtype: DType, backend: Any, reason: Any = None) -> Exception:
    """The error for a tensor of ``shape`` that cannot be allocated (``reason``: the backend's)."""
    n = 1
    for s in shape:
        n *= s
    nbytes = n * dtype.itemsize
    why = f" ({type(reason).__name__}: {reason})" if reason is not None else ""
    return OutOfMemoryError(
        f"cannot allocate a tensor of size {tuple(shape)} and dtype {dtype} on {backend.name!r}: "
        f"{n} elements, {nbytes} bytes (~{nbytes / 2**30:.3g} GiB){why}. Use a smaller size, or "
        "process the data in chunks"
    )


def view_of(src: _Tensor, td: TensorData) -> _Tensor:
    """A tensor sharing ``src``'s storage and version counter (a view: writes are visible)."""
    t = wrap(td, src.backend, src.dtype, src)
    t._version = src._version
    t._base = src if src._base is None else src._base
    if src.__dict__:  # a view holds the same values: it keeps the base's index bounds
        rec = src.__dict__.get("_index_range")
        if rec is not None:
            t.__dict__["_index_range"] = rec
    return t


def same_backend(a: _Tensor, b: _Tensor) -> Any:
    """The backend an op combining ``a`` and ``b`` runs on; raises when there is none.

    Tensors of one backend run there. Tensors of two *host-memory* backends (capability
    ``"host_memory"``: both keep their data in numpy arrays on the host) can be combined without
    a copy, and the op runs on the one that is not the built-in ``cpu`` reference backend: with
    a compiled host backend as the default device, a batch that arrived as a ``cpu`` tensor meets
    the model's parameters on that backend's kernels. Any other mix raises and says how to move one.
    """
    ba, bb = a.backend, b.backend
    if ba is bb or ba.name == bb.name:
        return ba
    if host_memory(ba) and host_memory(bb):
        ref = _reference_backend()
        if ba is ref:
            return bb
        if bb is ref:
            return ba
    raise BackendError(
        f"tensors are on different devices ('{a.device}' and '{b.device}'); move one with "
        f".to('{a.device}') before combining them"
    )


def common_backend(*tensors: _Tensor) -> Any:
    """:func:`same_backend` over several tensors (``cat``, ``where``)."""
    holder = tensors[0]
    for t in tensors[1:]:
        if t.backend is not holder.backend and same_backend(holder, t) is t.backend:
            holder = t
    return holder.backend


_REFERENCE: list = []


def _reference_backend() -> Any:
    if not _REFERENCE:
        _REFERENCE.append(get_backend("numpy"))  # the built-in backend, whatever "cpu" names
    return _REFERENCE[0]


def map_op(op: str, a: _Tensor, dtype: DType | None = None) -> _Tensor:
    """A new tensor ``op(a)`` computed by ``a``'s backend (``op`` one of ``MAP_OPS``), outside
    autograd; ``dtype`` sets the output's dtype.
    """
    backend, shape, dt = a.backend, a._td.shape, dtype or a.dtype
    # (written out here and in zip_op: one helper taking the call cost every such op ~1.2k
    # instructions, about a third of what the capability saves)
    if shape and NEW_RESULT in backend.capabilities and op in backend.new_result_ops:
        try:
            made = backend.map_new(op, a._td, dt)
        except MemoryError as exc:
            raise too_big(shape, dt, backend, exc) from exc
        if made is not None:
            return _made(made, shape, dt, backend, a)
    out = alloc(shape, dt, backend, a)
    backend.map(op, a._td, out._td)
    return out


def _made(made: tuple, shape: tuple[int, ...], dtype: DType, backend: Any, like: Any) -> _Tensor:
    """The tensor around ``made``, the ``(storage, handle)`` of a result that the backend
    allocated as it computed it (capability ``new_result``: ``map_new``, ``zip_new``)."""
    storage, handle = made
    return wrap(TensorData.packed(storage, shape, math.prod(shape), handle), backend, dtype, like)


def _expanded(t: _Tensor, shape: tuple[int, ...]) -> TensorData:
    td = t._td
    if td.shape == shape:
        return td
    # a scalar operand (x * 2.0) is mostly a shared constant (filled_cached): its remembered
    # view comes back with the backend's handle already built
    return td.expand(shape)


def broadcast_shape(
    a_shape: Sequence[int], b_shape: Sequence[int], what: str = "broadcast"
) -> tuple[int, ...]:
    shape = shape_broadcast(a_shape, b_shape)
    if shape is None:
        raise ShapeError(
            f"{what}: shapes {tuple(a_shape)} and {tuple(b_shape)} are not broadcastable "
            "(sizes must match or be 1, aligned from the right)"
        )
    return shape


def zip_op(op: str, a: _Tensor, b: _Tensor, dtype: DType | None = None) -> _Tensor:
    """Elementwise ``op(a, b)`` with broadcasting; inputs must already share a dtype."""
    backend = a.backend if a.backend is b.backend else same_backend(a, b)
    ta, tb = a._td, b._td
    if ta.shape == tb.shape:
        shape = ta.shape
    else:
        shape = broadcast_shape(ta.shape, tb.shape, op)
        if BROADCAST not in backend.capabilities:
            ta, tb = _expanded(a, shape), _expanded(b, shape)
    dt = dtype or a.dtype
    if shape and NEW_RESULT in backend.capabilities and op in backend.new_result_ops:
        try:
            made = backend.zip_new(op, ta, tb, dt)
        except MemoryError as exc:
            raise too_big(shape, dt, backend, exc) from exc
        if made is not None:
            return _made(made, shape, dt, backend, a)
    out = alloc(shape, dt, backend, a)
    backend.zip(op, ta, tb, out._td)
    return out


def zip_into(op: str, a: _Tensor, b: _Tensor) -> _Tensor:
    """``a = op(a, b)`` in place, ``b`` broadcast to ``a``'s shape; returns ``a``. For a result
    that nothing else has seen yet (it saves allocating another)."""
    be = a.backend
    tb = b._td if BROADCAST in be.capabilities else _expanded(b, a._td.shape)
    be.zip(op, a._td, tb, a._td)
    return a


def where_op(cond: _Tensor, a: _Tensor, b: _Tensor) -> _Tensor:
    """``cond ? a : b`` elementwise with three-way broadcasting (a and b share a dtype)."""
    backend = common_backend(a, b, cond)
    shape = broadcast_shape(
        broadcast_shape(a._td.shape, b._td.shape, "where"), cond._td.shape, "where"
    )
    out = alloc(shape, a.dtype, backend, a)
    backend.where(_expanded(cond, shape), _expanded(a, shape), _expanded(b, shape), out._td)
    return out


def reduce_op(
    op: str, a: _Tensor, dims: Sequence[int], keepdim: bool = False, dtype: DType | None = None
) -> _Tensor:
    """Reduce ``a`` over ``dims`` (a tuple of normalised dims)."""
    shape = a._td.shape
    if len(dims) == 1:  # the usual case, by slicing (no loop: this runs per op)
        d = dims[0]
        empty = not shape[d]
        kept = shape[:d] + (1,) + shape[d + 1 :]
        squeezed = shape[:d] + shape[d + 1 :]
    else:
        empty, kept_l, squeezed_l = False, [], []
        for d, s in enumerate(shape):
            if d in dims:
                kept_l.append(1)
                empty = empty or not s
            else:
                kept_l.append(s)
                squeezed_l.append(s)
        kept, squeezed = tuple(kept_l), tuple(squeezed_l)
    if empty and op != "sum" and op != "prod":
        raise ShapeError(f"{op}: cannot reduce an empty dimension (shape {shape}, dims {dims})")
    out = alloc(kept, dtype or a.dtype, a.backend, a)
    a.backend.reduce(op, a._td, dims, out._td)
    if not keepdim:
        td = out._td
        out._td = TensorData.of(td.storage, squeezed, contiguous_strides(squeezed), 0, td.size)
    return out


def cast(a: _Tensor, dtype: DType) -> _Tensor:
    """``a`` converted to ``dtype`` (the same tensor when it already has it)."""
    if a.dtype is dtype:
        return a
    out = alloc(a._td.shape, dtype, a.backend, a)
    a.backend.map("copy", a._td, out._td)
    return out


def contiguous(a: _Tensor) -> _Tensor:
    """``a`` itself if its layout is C-contiguous, else a packed copy."""
    if a._td.is_contiguous():
        return a
    return map_op("copy", a)


def sum_to(g: _Tensor, shape: tuple[int, ...]) -> _Tensor:
    """Undo broadcasting in backward: sum ``g`` over the dims that were broadcast to reach it.

    If ``y = f(x)`` broadcast ``x`` from ``shape`` then each element of ``x`` fed several
    elements of ``y``; by the multivariate chain rule its gradient is the sum of theirs.
    """
    gshape = g._td.shape
    if gshape == shape:
        return g
    if g._td.size == math.prod(shape):
        # only dims of size 1 differ (a (1,) gradient of a 0-d input): nothing to sum, the same
        # values seen with ``shape``
        if GradMode.enabled:
            return g.reshape(shape)
        td = g._td.reshaped(shape)
        if td is not None:
            return view_of(g, td)
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + k for k, s in enumerate(shape) if s == 1 and gshape[lead + k] != 1
    )
    if GradMode.enabled:  # create_graph: a recorded sum, so the gradient stays differentiable
        return g.sum(dims, keepdim=True).reshape(shape)
    out = reduce_op("sum", g, dims, keepdim=True)
    if not lead:  # the kept shape is the input's already
        return out
    return wrap(TensorData(out._td.storage, shape), out.backend, out.dtype, out)


_CONSTANTS: dict[tuple, TensorData] = {}
_CONSTANTS_MAX = 256
_CONSTANTS_FROZEN = [0]  # > 0: filled_cached neither serves nor keeps (see freeze_constants)
_PLAIN = (int, float, bool)


def filled_cached(
    shape: tuple[int, ...], value: Any, dtype: DType, backend: Any, like: Any
) -> _Tensor:
    """A tensor of ``shape`` filled with ``value``, of ``like``'s class, whose storage is shared
    between calls, so it must never be written to: an operand of ops that build a new tensor
    (``x * 2.0``'s scalar, a reduction's divisor, a shift), not something handed to the user.

    Up to ``_CONSTANTS_MAX`` constants of plain Python numbers are kept (zeros and NaN keyed by
    ``repr``, so 0.0 and -0.0 differ); other values (numpy scalars, a captured step's live numbers) are built
    afresh. A backend with the ``fill`` capability writes the value in place (no host→device copy,
    which matters for optimizers on a GPU); otherwise it is built on the host.
    """
    frozen = _CONSTANTS_FROZEN[0]
    key = None
    if type(value) in _PLAIN:  # equal numbers convert alike; 0.0/-0.0 and NaN by their repr
        key = (shape, value if value and value == value else repr(value), dtype, id(backend))
    td = _CONSTANTS.get(key) if key is not None and not frozen else None
    if td is None:
        if key is not None and not dtype.is_floating_point:
            value = fitting(value, dtype)  # NaN or 2**70 for an int64 tensor raise, as in PyTorch
        if FILL in backend.capabilities:
            td = alloc(shape, dtype, backend, like)._td
            backend.fill(td, value)
        else:
            td = TensorData(backend.from_numpy(np.full(shape, value, dtype.np)), shape)
        if key is not None:
            _keep(key, td)
    return wrap(td, backend, dtype, like)


def constant_cached(key: tuple, dtype: DType, backend: Any, like: Any, build: Any) -> _Tensor:
    """The tensor ``build()`` returns (of ``dtype`` on ``backend``), built once per ``key`` and
    shared between calls as :func:`filled_cached`'s constants are (never written to; kept under
    the same cap, and neither served nor kept while :func:`freeze_constants` holds): a constant
    that costs several ops to build, such as attention's causal mask. ``key`` names what is built
    (a tuple starting with a string, so it never meets a filled constant's key); the dtype and
    backend are added to it."""
    full = key + (dtype, id(backend))
    td = None if _CONSTANTS_FROZEN[0] else _CONSTANTS.get(full)
    if td is None:
        td = build()._td
        _keep(full, td)
    return wrap(td, backend, dtype, like)


def _keep(key: tuple, td: TensorData) -> None:
    """Keep the constant ``td`` under ``key`` for later calls: while fewer than
    ``_CONSTANTS_MAX`` are kept, and not while :func:`freeze_constants` holds."""
    if len(_CONSTANTS) < _CONSTANTS_MAX and not _CONSTANTS_FROZEN[0]:
        _CONSTANTS[key] = td


def freeze_constants(frozen: bool) -> None:
    """Stop (``True``) or resume (``False``) sharing :func:`filled_cached` constants: while
    frozen, each is built afresh and not kept; calls nest. A captured step's recordings freeze
    them: two consecutive recordings must allocate alike (a constant kept by the first would be
    old storage to the second), and a Python number that changes between steps must show as new
    host data, not as another kept constant."""
    _CONSTANTS_FROZEN[0] += 1 if frozen else -1


def ones_cached(shape: tuple[int, ...], dtype: DType, backend: Any, like: Any) -> _Tensor:
    """:func:`filled_cached` ones: ``backward()``'s implicit gradient (leaves copy the first
    gradient they receive, see ``Tensor.accumulate_grad``), cross-entropy's unit weights."""
    return filled_cached(shape, 1, dtype, backend, like)


def scalar_like(value: Any, ref: _Tensor, dtype: DType | None = None) -> _Tensor:
    """A 0-d tensor holding ``value`` on ``ref``'s backend (broadcast by zip via stride 0): a
    shared, read-only :func:`filled_cached` constant."""
    return filled_cached((), value, dtype or ref.dtype, ref.backend, ref)


def item_of(t: _Tensor) -> Any:
    """The value of the one-element tensor ``t`` as a Python number (its caller checked the size).

    Read through the backend's ``to_numpy`` (a captured step must see every host read) and
    ``ndarray.item``, which takes any one-element shape: no flattened copy, no numpy scalar in
    between (``bench_ops.py``'s ``x.item()`` row: 1.1–1.9 -> 0.30 µs).
    """
    return t.backend.to_numpy(t._td).item()


def set_index_range(t: _Tensor, lo: int, hi: int) -> None:
    """Remember that every value of the int64 tensor ``t`` lies in ``[lo, hi]``.

    Index checks (``check_index``) then need no device→host read while ``t`` is unmodified
    (the record carries ``t``'s version). Set for tensors built from host data, where the bounds
    cost nothing to compute.
    """
    t.__dict__["_index_range"] = (lo, hi, t._version[0])


def index_range(t: _Tensor, fresh: bool = False) -> tuple[int, int]:
    """``(lo, hi)`` of an int64 tensor: from the record when still valid, else by reading it
    (``fresh``: always by reading it, for an error that must name a value the tensor holds).

    A record bounds the values; it may be wider than they are (a write of a number widens it,
    :func:`widen_index_range`), so a check it fails re-reads before raising
    (:func:`first_outside`). An empty tensor has the empty range ``(0, -1)``, which passes every
    bounds check. The record is a fast path only: the backends' kernels check every index
    themselves (``backend/bounds.py``).
    """
    rec = t.__dict__.get("_index_range")
    if rec is not None and rec[2] == t._version[0] and not fresh:
        return rec[0], rec[1]
    if t._td.size == 0:
        return 0, -1
    lo, hi = value_range(t.backend.to_numpy(t._td))
    set_index_range(t, lo, hi)
    return lo, hi


def first_outside(t: _Tensor, size: int) -> int | None:
    """``None`` when every value of the int64 tensor ``t`` lies in ``[0, size)``; else the
    offending bound it holds (its max if that is too large, else its min), read afresh when the
    record alone failed the check. The one bounds rule of ``check_index`` and ``check_targets``."""
    lo, hi = index_range(t)
    if lo >= 0 and hi < size:
        return None
    lo, hi = index_range(t, fresh=True)
    if lo >= 0 and hi < size:
        return None
    return hi if hi >= size else lo


def keep_index_range(src: _Tensor, dst: _Tensor) -> None:
    """Give ``dst``, a new int64 tensor holding only values of ``src`` (a roll, a flip), ``src``'s
    valid record, if it has one: its index checks then read nothing."""
    rec = src.__dict__.get("_index_range") if src.__dict__ else None
    if rec is not None and rec[2] == src._version[0]:
        set_index_range(dst, rec[0], rec[1])


def widen_index_range(t: _Tensor, value: int, version: int) -> None:
    """After ``value`` was written into part of ``t`` (``x[:, 0] = 14``), whose record was valid
    at ``version`` (the version before the write): the record widened to include ``value``."""
    rec = t.__dict__.get("_index_range")
    if rec is not None and rec[2] == version:
        set_index_range(t, min(rec[0], value), max(rec[1], value))


def normalize_dim(dim: Any, ndim: int, allow_end: bool = False) -> int:
    """The one place a ``dim`` argument is checked: returns it as a non-negative int.

    Valid dims of an ``ndim``-tensor are ``[-ndim, ndim - 1]`` (a 0-d tensor accepts 0 and -1, as
    in PyTorch); ``allow_end`` widens that by one for ops that insert a dim (``unsqueeze``,
    ``stack``). Out of range raises :class:`TensorIndexError` (an ``IndexError``, as in PyTorch).

    >>> from torchlight.tensor.dispatch import normalize_dim
    >>> normalize_dim(-1, 3)
    2
    """
    n = ndim + 1 if allow_end else ndim
    if type(dim) is int and -n <= dim < n:  # the common case, before the general checks
        return dim % n
    try:
        dim = operator.index(dim)  # ints, numpy integers, 0-d int tensors
    except TypeError:
        raise DTypeError(f"dimension must be an int, got {type(dim).__name__}") from None
    if not -max(n, 1) <= dim < max(n, 1):
        raise TensorIndexError(
            f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], "
            f"but got {dim}): the tensor has {ndim} dims"
        )
    return dim % n if n else 0


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """``None`` → all dims; int or sequence → sorted tuple of non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if not isinstance(dim, (tuple, list)):
        return (normalize_dim(dim, ndim),)
    dims = tuple(sorted({normalize_dim(d, ndim) for d in dim}))
    return dims
