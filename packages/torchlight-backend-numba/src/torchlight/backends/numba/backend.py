"""``NumbaBackend``: the backend contract on numba kernels.

Storage is a 1-D numpy array, exactly as on the ``cpu`` backend, so ``.to("numba")`` and back
costs one memcpy (or nothing, when the core shares) and ``to_numpy`` returns a view. Each
primitive does a little Python first — drop size-1 dims, coalesce dims that are contiguous with
respect to each other in every operand, pick the contiguous fast path when it applies, turn op
names into codes — and then calls one compiled kernel (``_elementwise``, ``_flat32``,
``_reduce``, ``_index``, ``_fused``, ``_cross_entropy``, ``_matmul``). Which kernel an elementwise
op or a reduction runs is decided by ``routing.route`` from one table (``routing.TABLE``);
``_LAUNCH`` below turns its answer into the kernel call. Float matmuls go to BLAS
through the numpy backend (measured: far faster than any loop we can JIT); dtype-changing copies
go to ``np.copyto`` (memory-bound either way, and it saves a compiled specialisation per dtype
pair).
"""

import os

import numpy as np

import numba
from torchlight.tensor.backend.bounds import new_flag, raise_if_flagged
from torchlight.tensor.backend.numpy import NumpyBackend, as_array
from torchlight.tensor.backend.protocol import API_VERSION
from torchlight.tensor.errors import BackendError
from torchlight.tensor.indexing import coalesce, prod, row_layout
from torchlight.tensor.random import stream_base

from . import _blas as B
from . import _cross_entropy as CE
from . import _elementwise as E
from . import _flat32 as L
from . import _fused as F
from . import _index as X
from . import _matmul as M
from . import _packed as P
from . import _random as RND
from . import _recurrent as RNN
from . import _reduce as R
from . import _tiled as T
from . import _updates as U
from . import _windows as WK
from ._jit import PARALLEL_MIN
from .routing import NUMPY_SMALL, PACKED_SMALL, SPLIT_CHUNK, all_packed, route, rows

__all__ = ["NumbaBackend"]

_I64 = np.int64
_RED = {"sum": R.SUM, "prod": R.PROD, "max": R.MAX, "min": R.MIN}
_COMBINE = {R.SUM: np.sum, R.PROD: np.prod, R.MAX: np.max, R.MIN: np.min}  # partial results
_CHUNKS = 64  # row chunks of the cross-entropy kernel: scratch per chunk, enough to balance threads
#: multiply-adds from which BLAS calls on numba's threads (one block of rows each) beat one BLAS
#: call from numpy, measured with 2 threads: 64x256 @ 256x256 (4.2M) at parity, 64x784 @ 784x256
#: 0.75x, 64x256 @ 256x10 2.2x slower (the thread pool's ~6 us). With one thread numpy's single
#: call was always faster (1.1-2.1x on an MLP's matmuls), so it then takes every product.
_THREADED_GEMM_MIN = 1 << 22


def _mat(v):
    """A 2-D view as kernel arguments ``(storage, offset, row stride, column stride)``; outputs,
    contiguous by contract, pass only the first three."""
    return v.storage, v.offset, v.strides[0], v.strides[1]


def _arr(t):
    return np.array(t, dtype=_I64)


ROW_LAYOUTS_MAX = 256
"""How many row layouts (shape, strides, dim) :meth:`NumbaBackend._rows` keeps: a training step
meets the same few at every call (a layer norm's walk over (16, 9, 16) took 6.8 µs to derive
again, as long as the kernel's own work); a program of ever new shapes starts the table over."""
_ROW_LAYOUTS: dict = {}


def _run(v, n):
    """The view's n elements as a slice of its storage (it is contiguous)."""
    return v.storage[v.offset : v.offset + n]


def _packed(dim, *views):
    """Whether ``views`` (of one shape) are all C-contiguous with ``dim`` their last: row ``r``
    of each then starts at its offset + ``r`` times the row length, what the ``*_packed`` kernels
    take instead of a row layout (:meth:`NumbaBackend._rows`)."""
    if dim != len(views[0].shape) - 1:
        return False
    for v in views:
        if not v.is_contiguous():  # (first a cached lookup of the packed strides)
            return False
    return True


def _acc(x):
    return np.float64 if x.dtype.kind == "f" else np.int64


# --- launchers: (backend, op, views, out, plan) -> None, one per kernel routing.TABLE names ----
def _copyto(bk, op, v, out, plan):
    np.copyto(as_array(out), as_array(v[0]), casting="unsafe")


def _numpy(bk, op, v, out, plan):
    if len(v) == 1:
        bk._np.map(op, v[0], out)
    else:
        bk._np.zip(op, v[0], v[1], out)


def _numpy_reduce(bk, op, v, out, dims):
    bk._np.reduce(op, v[0], dims, out)


def _map32(bk, op, v, out, code):
    n = out.size
    L.map32.pick(n)(code, _run(v[0], n), _run(out, n), n)


def _zip32(bk, op, v, out, plan):
    (code, mode), (a, b), n = plan, v, out.size
    L.zip32.pick(n)(
        code, mode, _run(a, 1 if mode == 2 else n), _run(b, 1 if mode == 1 else n), _run(out, n), n
    )


def _zip_tiles(bk, op, v, out, plan):
    code, (rowlen, ((ta, astep), (tb, bstep))) = plan
    n = out.size
    T.zip_tiles.pick(n)(code, ta, astep, tb, bstep, _run(out, n), rowlen, n)


def _where_tiles(bk, op, v, out, plan):
    rowlen, ((tc, cstep), (ta, astep), (tb, bstep)) = plan
    n = out.size
    T.where_tiles.pick(n)(tc, cstep, ta, astep, tb, bstep, _run(out, n), rowlen, n)


def _map_packed(bk, op, v, out, code):
    x, n = v[0], out.size
    P.map_kernel(op, code).pick(n)(x.storage, x.offset, out.storage, out.offset, n)


def _zip_packed(bk, op, v, out, code):
    (a, b), n = v, out.size
    P.zip_kernel(op, code).pick(n)(
        a.storage, a.offset, b.storage, b.offset, out.storage, out.offset, n
    )


def _sum_packed(bk, op, v, out, d0):
    a = v[0]
    L = prod(a.shape[d0:])  # the row: dims d0.. (at least PACKED_SUM_MIN values in all)
    P.sum_packed(a.storage, a.offset, out.storage, out.offset, a.size // L, L)


def _flat_kernel(kern):
    def launch(bk, op, v, out, plan):
        n = out.size
        if len(v) == 1:
            kern.pick(n)(plan[0], _run(v[0], n), _run(out, n))
        else:
            kern.pick(n)(plan[0], _run(v[0], n), _run(v[1], n), _run(out, n))

    return launch


def _strided_kernel(kern):
    """Every strided kernel takes three inputs (c, a, b): a map's input fills all three, a zip's
    first fills c (see ``_elementwise``)."""

    def launch(bk, op, v, out, plan):
        code, shape, strides = plan
        if len(v) == 3:
            (c, a, b), (cs, as_, bs) = v, (_arr(strides[0]), _arr(strides[1]), _arr(strides[2]))
        elif len(v) == 2:
            c = a = v[0]
            b = v[1]
            cs = as_ = _arr(strides[0])
            bs = _arr(strides[1])
        else:
            c = a = b = v[0]
            cs = as_ = bs = _arr(strides[0])
        n = out.size
        kern.pick(n)(
            code,
            c.storage,
            cs,
            c.offset,
            a.storage,
            as_,
            a.offset,
            b.storage,
            bs,
            b.offset,
            out.storage,
            _arr(strides[-1]),
            out.offset,
            _arr(shape),
            n,
        )

    return launch


def _reduce_arg(bk, op, v, out, g):
    a, (d,) = v[0], g.dims
    R.arg_kernel.pick(a.size)(
        op == "argmax",
        a.storage,
        a.offset,
        _arr(g.oshape),
        _arr(g.oxs),
        out.storage,
        _arr(g.oos),
        out.offset,
        a.shape[d],
        a.strides[d],
        out.size,
    )


def _reduce_split(bk, op, v, out, g):
    a, code = v[0], _RED[op]
    partial = np.empty((out.size, (g.nred + SPLIT_CHUNK - 1) // SPLIT_CHUNK), dtype=_acc(a.storage))
    R.reduce_split.par(
        code,
        a.storage,
        a.offset,
        _arr(g.oshape),
        _arr(g.oxs),
        partial,
        g.nred,
        g.rxs[0],
        SPLIT_CHUNK,
    )
    as_array(out)[...] = _COMBINE[code](partial, axis=1).reshape(out.shape)


def _reduce_cols(bk, op, v, out, g):
    # partial results per chunk of rows (the chunk count depends on the row count only),
    # combined in chunk order
    a, code = v[0], _RED[op]
    nchunks = max(1, min(R.COL_CHUNKS, g.nred // R.COL_CHUNK_ROWS))
    partial = np.empty((nchunks, g.oshape[0]), _acc(a.storage))
    R.reduce_cols.pick(a.size)(code, a.storage, a.offset, g.nred, g.rxs[0], g.oshape[0], partial)
    res = partial[0] if nchunks == 1 else _COMBINE[code](partial, axis=0)
    as_array(out)[...] = res.reshape(out.shape)


def _reduce_any(bk, op, v, out, g):
    a = v[0]
    R.reduce_kernel.pick(a.size)(
        _RED[op],
        a.storage,
        a.offset,
        _arr(g.oshape),
        _arr(g.oxs),
        out.storage,
        _arr(g.oos),
        out.offset,
        _arr(g.rshape),
        _arr(g.rxs),
        out.size,
        g.nred,
    )


_LAUNCH = {
    "np.copyto": _copyto,
    "numpy": _numpy,
    "numpy.reduce": _numpy_reduce,
    "_flat32.map32": _map32,
    "_flat32.zip32": _zip32,
    "_tiled.zip_tiles": _zip_tiles,
    "_tiled.where_tiles": _where_tiles,
    "_packed.map": _map_packed,
    "_packed.zip": _zip_packed,
    "_packed.sum": _sum_packed,
    "_elementwise.map_flat": _flat_kernel(E.map_flat),
    "_elementwise.zip_flat": _flat_kernel(E.zip_flat),
    "_elementwise.cmp_flat": _flat_kernel(E.cmp_flat),
    "_elementwise.map_strided": _strided_kernel(E.map_strided),
    "_elementwise.zip_strided": _strided_kernel(E.zip_strided),
    "_elementwise.cmp_strided": _strided_kernel(E.cmp_strided),
    "_elementwise.where_strided": _strided_kernel(E.where_strided),
    "_reduce.arg_kernel": _reduce_arg,
    "_reduce.reduce_split": _reduce_split,
    "_reduce.reduce_cols": _reduce_cols,
    "_reduce.reduce_kernel": _reduce_any,
}


def _rank_error(op, *views):
    """The index kernels walk every operand with the iteration shape's strides: operands of the
    wrong rank (a core bug, not a user's) would be read past their stride arrays."""
    raise BackendError(
        f"numba backend: {op} got operands of shapes {[v.shape for v in views]}, "
        "outside the contract (protocol.py)"
    )


class NumbaBackend:
    """numba implementation of the backend contract (see ``torchlight.tensor.backend.protocol``)."""

    name = "numba"
    device = "numba"
    API_VERSION = API_VERSION
    capabilities = frozenset(
        {
            "softmax",
            "logsumexp",
            "layernorm",
            "cross_entropy",
            "nll",
            "adam",
            "adagrad",
            "sgd",
            "broadcast",
            "host_memory",
            "compile",
            "gru_cell",
            "lstm_cell",
            "cell_sequence",
            "join",
            "windows",
            "random",
            "empty_handle",
            "new_result",
            "fill",
            "threads",
        }
    )
    new_result_ops = NumpyBackend.new_result_ops
    """Capability ``new_result``: the numpy backend's (the ops it answers for small tensors)."""

    def __init__(self, numpy_ufuncs=None):
        if numpy_ufuncs is None:
            numpy_ufuncs = os.environ.get("TORCHLIGHT_NUMBA_UFUNCS", "1") != "0"
        #: route elementwise ops that numpy does faster to the numpy backend (routing.TABLE)
        self.numpy_ufuncs = numpy_ufuncs
        self._np = NumpyBackend()
        B.one_blas_thread()  # numba's pool is the process's only one (_blas)

    def set_num_threads(self, n):
        """Capability ``threads``: the parallel kernels use at most ``n`` threads of numba's
        pool from now on (on the calling thread: numba's setting is per thread), no more than
        the pool has (``NUMBA_NUM_THREADS``, fixed when numba starts: the cores unless the
        variable says otherwise). BLAS stays at one thread: the products split across the
        pool themselves (``_blas``).

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))

    # --- storage -------------------------------------------------------------------------------
    def empty(self, n, dtype):
        """Allocate uninitialised storage for ``n`` elements of ``dtype``, with numba-compiled CPU kernels.

        The contract is :meth:`Backend.empty <torchlight.tensor.backend.protocol.Backend.empty>`.
        """
        return np.empty(n, dtype=dtype.np)

    def empty_handle(self, shape, dtype):
        """Capability ``empty_handle``: :meth:`empty` storage for a contiguous view of ``shape``
        and that view's ndarray, as the numpy backend's (the kernels read the same handles).

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        return self._np.empty_handle(shape, dtype)

    def map_new(self, op, a, dtype):
        """Capability ``new_result``: the numpy backend's :meth:`map_new` for the sizes the
        routing table gives numpy (:meth:`map`'s own test); ``None`` for the others, which the
        core allocates for a kernel to write.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if self.numpy_ufuncs and a.size < NUMPY_SMALL.get(
            ("map", op, a.storage.dtype, dtype.np), 0
        ):
            return self._np.map_new(op, a, dtype)
        return None

    def zip_new(self, op, a, b, dtype):
        """Capability ``new_result``: the numpy backend's :meth:`zip_new` for the sizes the
        routing table gives numpy (:meth:`zip`'s own test, on the larger operand: a result
        broadcast from both sides is larger still, and numpy broadcasts without a copy);
        ``None`` for the others, which the core allocates for a kernel to write.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        dt = a.storage.dtype
        n = a.size if a.size >= b.size else b.size
        if (
            self.numpy_ufuncs
            and n < NUMPY_SMALL.get(("zip", op, dt, dtype.np), 0)
            and dt == b.storage.dtype
        ):
            return self._np.zip_new(op, a, b, dtype)
        return None

    def from_numpy(self, array):
        """Storage holding the data of the C-contiguous ndarray ``array`` (shared where the device allows), with numba-compiled CPU kernels.

        The contract is :meth:`Backend.from_numpy <torchlight.tensor.backend.protocol.Backend.from_numpy>`.
        """
        return np.ascontiguousarray(array).reshape(-1)

    def to_numpy(self, view):
        """The elements of the strided ``view`` as an ndarray of its shape (may share memory), with numba-compiled CPU kernels.

        The contract is :meth:`Backend.to_numpy <torchlight.tensor.backend.protocol.Backend.to_numpy>`.
        """
        return as_array(view)

    # --- the "compile" capability: fused elementwise chains (torchlight.jit) ------------------
    def compile_elementwise(self, chain):
        """One generated kernel for an elementwise chain (``_fusion.py``), or None to decline."""
        from ._fusion import compile_elementwise

        return compile_elementwise(chain)

    # --- elementwise and reductions: routing.TABLE decides, _LAUNCH runs -------------------------
    def _launch(self, family, op, views, out, dims=()):
        kernel, plan = route(family, op, views, out, self.numpy_ufuncs, dims)
        _LAUNCH[kernel](self, op, views, out, plan)

    def map(self, op, a, out):
        """Unary elementwise ``out = op(a)``, ``op`` one of ``MAP_OPS`` (same shapes), on the kernel
        :func:`~torchlight.backends.numba.routing.route` picks (``explain()`` names it).

        The contract is :meth:`Backend.map <torchlight.tensor.backend.protocol.Backend.map>`.
        """
        n = out.size
        if n:
            # (NUMPY_SMALL and PACKED_SMALL are shared: an instance built with
            # numpy_ufuncs=False never reads them)
            if self.numpy_ufuncs:
                key = ("map", op, a.storage.dtype, out.storage.dtype)
                if n < NUMPY_SMALL.get(key, 0):
                    return self._np.map(op, a, out)  # route's remembered answer, asked directly
                fast = PACKED_SMALL.get(key)  # (an op with a packed row)
                if fast is not None:
                    if fast[0] <= n < fast[1] and all_packed((a,), out, n):
                        if fast[3] is not None and n < PARALLEL_MIN:
                            return fast[3](a.storage, a.offset, out.storage, out.offset, n)
                    elif n < fast[4]:
                        return self._np.map(op, a, out)
            self._launch("map", op, (a,), out)

    def zip(self, op, a, b, out):
        """Binary elementwise ``out = op(a, b)``, ``op`` one of ``ZIP_OPS``, on the kernel the
        routing table picks; ``a`` and ``b`` of ``out``'s shape or broadcasting to it (capability
        ``broadcast``: numpy's ufuncs take them as they are, a kernel gets them expanded).

        The contract is :meth:`Backend.zip <torchlight.tensor.backend.protocol.Backend.zip>`.
        """
        n = out.size
        if n:
            dt = a.storage.dtype
            if self.numpy_ufuncs and dt == b.storage.dtype:
                key = ("zip", op, dt, out.storage.dtype)
                if n < NUMPY_SMALL.get(key, 0):
                    return self._np.zip(op, a, b, out)  # route's remembered answer, asked directly
                fast = PACKED_SMALL.get(key)  # (an op with a packed row)
                if fast is not None:
                    if fast[0] <= n < fast[1] and all_packed((a, b), out, n):
                        if fast[3] is not None and n < PARALLEL_MIN:
                            return fast[3](
                                a.storage, a.offset, b.storage, b.offset, out.storage, out.offset, n
                            )
                    elif n < fast[4]:
                        return self._np.zip(op, a, b, out)
            shape = out.shape  # capability "broadcast": the kernels take operands of out's shape
            self._launch("zip", op, (a.expand(shape), b.expand(shape)), out)

    def where(self, cond, a, b, out):
        """``out = a`` where ``cond`` is true, else ``b`` (one shape), on the kernel the routing
        table picks.

        The contract is :meth:`Backend.where <torchlight.tensor.backend.protocol.Backend.where>`.
        """
        if out.size:
            self._launch("where", "where", (cond, a, b), out)

    def reduce(self, op, a, dims, out):
        """Reduce ``a`` over ``dims`` into ``out`` (size 1 in those dims), ``op`` one of
        ``REDUCE_OPS``, on the kernel the routing table picks.

        The contract is :meth:`Backend.reduce <torchlight.tensor.backend.protocol.Backend.reduce>`.
        """
        if not out.size:
            return
        dims = tuple(dims)
        if self.numpy_ufuncs:
            key = ("reduce", op, a.storage.dtype, out.storage.dtype, dims)
            if a.size < NUMPY_SMALL.get(key, 0):
                return self._np.reduce(op, a, dims, out)  # route's answer, asked directly
            fast = PACKED_SMALL.get(key)  # (an op with a packed row)
            if fast is not None:
                n = a.size
                if fast[0] <= n < fast[1] and rows(dims, len(a.shape)) and all_packed((a,), out, n):
                    if fast[3] is not None:
                        return _sum_packed(self, op, (a,), out, fast[2])
                elif n < fast[4]:
                    return self._np.reduce(op, a, dims, out)
        self._launch("reduce", op, (a,), out, dims)

    # --- matmul --------------------------------------------------------------------------------
    def matmul(self, a, b, out):
        """Batched matrix product ``out = a @ b`` of ``(..., n, k)`` and ``(..., k, m)`` views (batch dims already equal), with numba-compiled CPU kernels.

        The contract is :meth:`Backend.matmul <torchlight.tensor.backend.protocol.Backend.matmul>`.
        """
        if out.size == 0:
            return
        n, k = a.shape[-2:]
        m = b.shape[-1]
        batch = out.shape[:-2]
        nbatch = prod(batch)
        dtype = out.storage.dtype
        # floats go to BLAS at every size: np.matmul beat the JIT loop (with its launch, strides
        # converted to arrays) on products of 1x60 @ 60x60, 8x8 @ 8x8 and batches of 4x8 @ 8x4
        # alike (4.4-7.9 against 7.2-13.9 us); the loop serves integers and mixed dtypes
        if dtype.kind == "f" and k and a.storage.dtype == dtype == b.storage.dtype:
            work = nbatch * n * k * m
            if (
                work >= _THREADED_GEMM_MIN
                and B.gemm_for(dtype) is not None
                and numba.get_num_threads() > 1
            ):
                B.gemm(a, b, out, nbatch, n, k, m)  # BLAS from numba's threads
            else:
                self._np.matmul(a, b, out)
            return
        bshape, (abs_, bbs, obs) = coalesce(
            batch, (a.strides[:-2], b.strides[:-2], out.strides[:-2])
        )
        M.matmul_kernel.pick(nbatch * n * k * m)(
            a.storage,
            _arr(abs_),
            a.offset,
            a.strides[-2],
            a.strides[-1],
            b.storage,
            _arr(bbs),
            b.offset,
            b.strides[-2],
            b.strides[-1],
            out.storage,
            _arr(obs),
            out.offset,
            out.strides[-2],
            out.strides[-1],
            _arr(bshape),
            nbatch,
            n,
            k,
            m,
        )

    # --- indexing ------------------------------------------------------------------------------
    # The index kernels never follow an index outside [0, size): they record it in a flag that is
    # checked right after the launch (torchlight.tensor.backend.bounds).
    def _gather(self, op, a, dim, index_strides, index, out):
        shape = out.shape
        nrows = out.size // shape[-1] if shape[-1] else 0
        if out.size == 0:
            return
        flag = new_flag()
        X.gather_kernel.pick(out.size)(
            a.storage,
            _arr(a.strides),
            a.offset,
            dim,
            a.shape[dim],
            index.storage,
            _arr(index_strides),
            index.offset,
            out.storage,
            _arr(out.strides),
            out.offset,
            _arr(shape),
            nrows,
            flag,
        )
        raise_if_flagged(flag, op)

    def take(self, a, dim, index, out):
        """``out = a.index_select(dim, index)`` for an ``int64`` index view, with numba-compiled CPU kernels.

        The contract is :meth:`Backend.take <torchlight.tensor.backend.protocol.Backend.take>`.
        """
        if len(index.shape) != 1 or len(out.shape) != len(a.shape):
            _rank_error("take", a, index, out)
        strides = [0] * len(out.shape)
        strides[dim] = index.strides[0]
        self._gather("take", a, dim, strides, index, out)

    def gather(self, a, dim, index, out):
        """``out = a.gather(dim, index)`` (PyTorch semantics), with numba-compiled CPU kernels.

        The contract is :meth:`Backend.gather <torchlight.tensor.backend.protocol.Backend.gather>`.
        """
        if not len(a.shape) == len(index.shape) == len(out.shape):
            _rank_error("gather", a, index, out)
        self._gather("gather", a, dim, index.strides, index, out)

    def _scatter_add(self, op, out, dim, shape, index_strides, index, src):
        if 0 in shape:
            return
        nd = len(shape)
        order = [d for d in range(nd) if d != dim] + [dim]
        pshape = tuple(shape[d] for d in order)
        nrows = 1
        for s in pshape[:-1]:
            nrows *= s
        flag = new_flag()
        X.scatter_add_kernel.pick(nrows * pshape[-1])(
            out.storage,
            _arr([out.strides[d] for d in order]),
            out.offset,
            out.shape[dim],
            index.storage,
            _arr([index_strides[d] for d in order]),
            index.offset,
            src.storage,
            _arr([src.strides[d] for d in order]),
            src.offset,
            _arr(pshape),
            nrows,
            flag,
        )
        raise_if_flagged(flag, op)

    def put_add(self, out, dim, index, src):
        """``out.index_add_(dim, index, src)`` in place: rows of ``src`` added at ``index`` (repeats add up), with numba-compiled CPU kernels.

        The contract is :meth:`Backend.put_add <torchlight.tensor.backend.protocol.Backend.put_add>`.
        """
        if len(index.shape) != 1 or len(out.shape) != len(src.shape):
            _rank_error("put_add", out, index, src)
        strides = [0] * len(src.shape)
        strides[dim] = index.strides[0]
        self._scatter_add("put_add", out, dim, src.shape, strides, index, src)

    def scatter_add(self, out, dim, index, src):
        """``out.scatter_add_(dim, index, src)`` in place (PyTorch semantics; repeats add up), with numba-compiled CPU kernels.

        The contract is :meth:`Backend.scatter_add <torchlight.tensor.backend.protocol.Backend.scatter_add>`.
        """
        if not len(out.shape) == len(index.shape) == len(src.shape):
            _rank_error("scatter_add", out, index, src)
        self._scatter_add("scatter_add", out, dim, index.shape, index.strides, index, src)

    # --- fused capabilities ----------------------------------------------------------------------
    @staticmethod
    def _rows(views, dim):
        """:func:`~torchlight.tensor.indexing.row_layout` with the shapes and strides as the
        int64 arrays the kernels take, remembered per layout (see :data:`ROW_LAYOUTS_MAX`)."""
        key = (dim, views[0].shape, *[v.strides for v in views])
        known = _ROW_LAYOUTS.get(key)
        if known is None:
            outer, nrows, length, per = row_layout(views, dim)
            known = (_arr(outer), nrows, length, [(_arr(st), step) for st, _, step in per])
            if len(_ROW_LAYOUTS) >= ROW_LAYOUTS_MAX:
                _ROW_LAYOUTS.clear()
            _ROW_LAYOUTS[key] = known
        outer, nrows, length, per = known
        return outer, nrows, length, [(st, v.offset, step) for (st, step), v in zip(per, views)]

    def fill(self, out, value):
        """Capability ``fill``: ``out[...] = value``, with numpy's one call on the same host storage.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        self._np.fill(out, value)

    def join(self, srcs, dim, out, new_dim):
        """Capability ``join``: ``out = cat(srcs, dim)``, or ``stack`` with ``new_dim``, with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        Pure data movement on host memory: numpy's one call does it (a kernel launch per input
        was what made ``cat`` slow).
        """
        self._np.join(srcs, dim, out, new_dim)

    def window_add(self, g, kernel, stride, dilation, out):
        """Capability ``windows``: col2im, every window's gradient ``g[..., *outs, *kernel]``
        added into ``out`` (zeros) at its positions, in one numba-compiled loop nest.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        return WK.window_add(g, kernel, stride, dilation, out)

    def window_max_backward(self, g, x, y, kernel, stride, dilation, out):
        """Capability ``windows``: a max pool's input gradient, ``g`` added into ``out`` (zeros)
        at each window's winner in ``x`` (``y``: the maxima), in one numba-compiled loop nest.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        return WK.window_max_backward(g, x, y, kernel, stride, dilation, out)

    def logsumexp(self, a, dim, out):
        """Capability ``logsumexp``: ``out = m + log Σ exp(a - m)`` along ``dim``, ``m`` the max or 0
        where that is ±inf, with the numpy backend's calls on the same host storage.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        No kernel of its own: the numpy backend's five ufunc calls on the same host storage.
        """
        self._np.logsumexp(a, dim, out)

    def softmax(self, a, dim, out, log=False):
        """Capability ``softmax``: ``out = softmax(a, dim)`` (``log_softmax`` with ``log=True``), max-shifted, with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if out.size == 0:
            return
        if _packed(dim, a, out):
            L = a.shape[-1]
            F.softmax_packed.pick(out.size)(
                a.storage, a.offset, out.storage, out.offset, out.size // L, L, log
            )
            return
        shape, nrows, L, ((xs, xo, xl), (os_, oo, ol)) = self._rows((a, out), dim)
        F.softmax_rows.pick(out.size)(
            a.storage, xs, xo, xl, out.storage, os_, oo, ol, shape, nrows, L, log
        )

    def softmax_backward(self, y, g, dim, out, log=False):
        """Capability ``softmax``: the input gradient ``out`` of softmax (or log-softmax) from its output ``y`` and gradient ``g``, with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if out.size == 0:
            return
        if _packed(dim, y, g, out):
            L = y.shape[-1]
            F.softmax_backward_packed.pick(out.size)(
                y.storage,
                y.offset,
                g.storage,
                g.offset,
                out.storage,
                out.offset,
                out.size // L,
                L,
                log,
            )
            return
        shape, nrows, L, ((ys, yo, yl), (gs, go, gl), (os_, oo, ol)) = self._rows((y, g, out), dim)
        F.softmax_backward_rows.pick(out.size)(
            y.storage,
            ys,
            yo,
            yl,
            g.storage,
            gs,
            go,
            gl,
            out.storage,
            os_,
            oo,
            ol,
            shape,
            nrows,
            L,
            log,
        )

    def layernorm(self, x, w, b, eps, out, mean, rstd):
        """Capability ``layernorm``: normalise each row of ``x`` into ``out``, saving its ``mean`` and ``rstd`` = 1/σ, with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if out.size == 0:
            return
        dim = len(x.shape) - 1
        shape, nrows, L, ((xs, xo, xl), (os_, oo, ol), (ms, mo, _), (rs, ro, _)) = self._rows(
            (x, out, mean, rstd), dim
        )
        dummy = x.storage[:1]
        wv = (w.storage, w.offset, w.strides[0]) if w is not None else (dummy, 0, 0)
        bv = (b.storage, b.offset, b.strides[0]) if b is not None else (dummy, 0, 0)
        F.layernorm_rows.pick(out.size)(
            x.storage,
            xs,
            xo,
            xl,
            wv[0],
            wv[1],
            wv[2],
            w is not None,
            bv[0],
            bv[1],
            bv[2],
            b is not None,
            float(eps),
            out.storage,
            os_,
            oo,
            ol,
            mean.storage,
            ms,
            mo,
            rstd.storage,
            rs,
            ro,
            shape,
            nrows,
            L,
        )

    def layernorm_backward(self, g, x, w, mean, rstd, dx, dw, db):
        """Capability ``layernorm``: ``dx`` (and ``dw``, ``db`` when given) from ``g`` and the saved ``mean``/``rstd``, with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if dx.size == 0:
            return
        dim = len(x.shape) - 1
        shape, nrows, L, ((gs, go, gl), (xs, xo, xl), (ms, mo, _), (rs, ro, _), (ds, do, dl)) = (
            self._rows((g, x, mean, rstd, dx), dim)
        )
        need = dw is not None or db is not None
        nchunks = max(1, min(nrows, 16)) if need else 1
        pw = np.zeros((nchunks, L if need else 1), np.float64)
        pb = np.zeros_like(pw)
        wv = (w.storage, w.offset, w.strides[0]) if w is not None else (x.storage[:1], 0, 0)
        F.layernorm_backward_rows.pick(dx.size)(
            g.storage,
            gs,
            go,
            gl,
            x.storage,
            xs,
            xo,
            xl,
            wv[0],
            wv[1],
            wv[2],
            w is not None,
            mean.storage,
            ms,
            mo,
            rstd.storage,
            rs,
            ro,
            dx.storage,
            ds,
            do,
            dl,
            shape,
            nrows,
            L,
            pw,
            pb,
            need,
        )
        if dw is not None:
            as_array(dw)[...] = pw.sum(axis=0)
        if db is not None:
            as_array(db)[...] = pb.sum(axis=0)

    def cross_entropy(self, x, target, weight, loss, logs):
        """Capability ``cross_entropy``: per-row losses of logits ``x`` (N, C),
        ``loss = weight·((m - x[i, target]) + logs)`` with ``m = max(x, 1)`` and
        ``logs = log Σ exp(x - m)`` (saved for the backward), with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n, c = x.shape
        if n == 0:
            return
        flag = new_flag()
        CE.cross_entropy_rows.pick(n * c)(
            x.storage,
            x.offset,
            x.strides[0],
            x.strides[1],
            target.storage,
            target.offset,
            target.strides[0],
            weight.storage,
            weight.offset,
            weight.strides[0],
            loss.storage,
            loss.offset,
            loss.strides[0],
            logs.storage,
            logs.offset,
            logs.strides[0],
            n,
            c,
            min(n, _CHUNKS),
            flag,
        )
        raise_if_flagged(flag, "cross_entropy")

    def nll(self, x, target, out, divisor):
        """Capability ``nll``: ``out = (Σ_i x[i, target_i]) / divisor``, an unweighted
        ``nll_loss``'s forward, with numpy on the host memory numba's kernels share.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        One read per row and one sum, so no kernel of its own: with this call ``F.nll_loss``
        costs about half the instructions of numba's gather, sum and division (1×18: 169k →
        87k; 512×65: 218k → 116k; performance.md, stop 35).
        """
        self._np.nll(x, target, out, divisor)

    def cross_entropy_backward(self, x, target, weight, logs, g, dx):
        """Capability ``cross_entropy``: ``dx = g·weight·(exp((x - m) - logs) - onehot(target))``
        (the softmax from the saved ``logs``), zero on rows of weight 0, with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n, c = x.shape
        if n == 0:
            return
        flag = new_flag()
        CE.cross_entropy_backward_rows.pick(n * c)(
            x.storage,
            x.offset,
            x.strides[0],
            x.strides[1],
            target.storage,
            target.offset,
            target.strides[0],
            weight.storage,
            weight.offset,
            weight.strides[0],
            logs.storage,
            logs.offset,
            logs.strides[0],
            g.storage,
            g.offset,
            g.strides[0],
            dx.storage,
            dx.offset,
            dx.strides[0],
            dx.strides[1],
            n,
            c,
            flag,
        )
        raise_if_flagged(flag, "cross_entropy_backward")

    # --- fused optimizer update ------------------------------------------------------------------
    def adam_step(
        self,
        p,
        g,
        m,
        v,
        *,
        beta1,
        beta2,
        eps,
        decay,
        l2,
        maximize,
        step_size,
        bias_correction2_sqrt,
    ):
        """Capability ``adam``: one Adam/AdamW update of ``p``, ``m``, ``v`` in place (formula in ``torchlight/tensor/functions/updates.py``), with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n = p.size
        if n == 0:
            return
        U.adam_kernel.pick(n)(
            *_storages_and_offsets(p, g, m, v),
            n,
            -1.0 if maximize else 1.0,
            decay,
            l2,
            1.0 - beta1,
            beta2,
            eps,
            step_size,
            bias_correction2_sqrt,
        )

    def adagrad_step(self, p, g, s, *, clr, l2, eps):
        """Capability ``adagrad``: one Adagrad update of ``p`` and ``s`` in place (formula in ``torchlight/tensor/functions/updates.py``), with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n = p.size
        if n == 0:
            return
        U.adagrad_kernel.pick(n)(*_storages_and_offsets(p, g, s), n, clr, l2, eps)

    def sgd_step(self, p, g, buf, *, lr, momentum, dampening, l2, nesterov, maximize, first):
        """Capability ``sgd``: one SGD update of ``p`` and the momentum buffer ``buf`` (None
        without momentum) in place (formula in ``torchlight/tensor/functions/updates.py``), with
        numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n = p.size
        if n == 0:
            return
        U.sgd_kernel.pick(n)(
            *_storages_and_offsets(p, g, p if buf is None else buf),
            n,
            -1.0 if maximize else 1.0,
            float(l2),
            0.0 if buf is None else float(momentum),
            1.0 - float(dampening),
            bool(first),
            bool(nesterov),
            -float(lr),
        )

    def random_(self, out, kind, seed, k):
        """Capability ``random``: fill the contiguous float view ``out`` with ``kind`` ("uniform" in
        [0, 1), or "normal") draws of fill ``k`` after seeding with ``seed``, counter-based
        SplitMix64 numbers (``_random.py``), with numba-compiled CPU kernels.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n = out.size
        if not out.is_contiguous() or out.storage.dtype.kind != "f":
            raise BackendError("numba backend: random_ needs a contiguous float view")
        if kind not in ("uniform", "normal"):
            raise BackendError(
                f"numba backend: random_ kind must be 'uniform' or 'normal', got {kind!r}"
            )
        if n == 0:
            return
        base = np.uint64(stream_base(seed, k))
        if kind == "uniform":
            bits = 24 if out.storage.dtype.itemsize == 4 else 53
            RND.uniform_kernel.pick(n)(out.storage, out.offset, n, base, bits)
        else:
            RND.normal_kernel.pick(n)(out.storage, out.offset, n, base)

    # --- fused recurrent cells (_recurrent.py) ----------------------------------------------------
    def gru_cell(self, gi, gh, h, out, ws):
        """The ``gru_cell`` capability in one pass over the gates: ``gi``, ``gh`` (N, 3H) are the
        input and hidden pre-activations (blocks r, z, n), ``h`` (N, H) the previous state.
        Writes :math:`h' = (1 - z) n + z h` with :math:`n = \\tanh(gi_n + r \\cdot gh_n)` into
        ``out`` (N, H), and r, z, n, gh_n into the workspace ``ws`` (N, 4H) for the backward."""
        n, hid = h.shape
        if n * hid == 0:
            return
        RNN.gru_forward.pick(3 * n * hid)(
            *_mat(gi), *_mat(gh), *_mat(h), *_mat(out)[:3], *_mat(ws)[:3], n, hid
        )

    def gru_cell_backward(self, g, h, ws, dgi, dgh, dh):
        """Backward of ``gru_cell`` in one pass: from ``g`` = dL/dh' (N, H), ``h`` and the saved
        ``ws``, writes dL/dgi and dL/dgh (N, 3H) into ``dgi`` and ``dgh`` and dL/dh into ``dh``."""
        n, hid = h.shape
        if n * hid == 0:
            return
        RNN.gru_backward.pick(3 * n * hid)(
            *_mat(g)[:3],
            *_mat(h),
            *_mat(ws)[:3],
            *_mat(dgi)[:3],
            *_mat(dgh)[:3],
            *_mat(dh)[:3],
            n,
            hid,
        )

    def lstm_cell(self, gi, gh, c, out, ws):
        """The ``lstm_cell`` capability in one pass over the gates: ``gi``, ``gh`` (N, 4H) are the
        input and hidden pre-activations (blocks i, f, g, o), ``c`` (N, H) the previous cell.
        Writes ``[h'; c']`` into ``out`` (2, N, H), with :math:`c' = f c + i g` and :math:`h' = o
        \\tanh c'`, and i, f, g, o, tanh c' into ``ws`` (N, 5H) for the backward."""
        n, hid = c.shape
        if n * hid == 0:
            return
        RNN.lstm_forward.pick(4 * n * hid)(
            *_mat(gi),
            *_mat(gh),
            *_mat(c),
            out.storage,
            out.offset,
            out.strides[1],
            out.strides[0],
            *_mat(ws)[:3],
            n,
            hid,
        )

    def lstm_cell_backward(self, g, c, ws, dgates, dc):
        """Backward of ``lstm_cell`` in one pass: from ``g`` = dL/d[h'; c'] (2, N, H), ``c`` and the
        saved ``ws``, writes dL/dgates (N, 4H), the gradient of both pre-activation blocks, into
        ``dgates`` and dL/dc into ``dc``."""
        n, hid = c.shape
        if n * hid == 0:
            return
        RNN.lstm_backward.pick(4 * n * hid)(
            g.storage,
            g.offset,
            g.strides[1],
            g.strides[0],
            *_mat(c),
            *_mat(ws)[:3],
            *_mat(dgates)[:3],
            *_mat(dc)[:3],
            n,
            hid,
        )

    def cell_sequence(self, kind, gi, w_hh, b_hh, states, ws, reverse):
        """The ``cell_sequence`` capability: every step of a GRU or LSTM layer in one compiled
        call (``_recurrent.gru_sequence`` / ``lstm_sequence``); declines (returns False) when a
        step's product ``h W_hhᵀ`` exceeds ``SEQUENCE_MAX_WORK`` multiply-adds, where the core's
        loop of BLAS products and cell kernels is faster.

        The contract is in :mod:`torchlight.tensor.backend.protocol`."""
        steps, n, width = gi.shape
        hid = states.shape[-1]
        if not RNN.takes_layer(n, width, hid):
            return False
        if b_hh is None:  # the kernel always adds a bias
            b, bo, bs = np.zeros(width, states.storage.dtype), 0, 1
        else:
            b, bo, bs = b_hh.storage, b_hh.offset, b_hh.strides[0]
        run = RNN.gru_sequence if kind == "gru" else RNN.lstm_sequence
        run(
            gi.storage, gi.offset, *_mat(w_hh), b, bo, bs, states.storage, states.offset,
            ws.storage, ws.offset, steps, n, hid, reverse,
        )  # fmt: skip
        return True

    def cell_sequence_backward(self, kind, g, states, w_hh, ws, dgi, dgh, carry, reverse):
        """Backward of ``cell_sequence`` in one compiled call (the steps in reverse); declines
        the sizes the forward declines."""
        steps, _, n, hid = states.shape
        steps -= 1
        if not RNN.takes_layer(n, dgi.shape[-1], hid):
            return False
        head = (g.storage, g.offset, states.storage, states.offset, *_mat(w_hh))
        tail = (carry.storage, carry.offset, steps, n, hid, reverse)
        if kind == "gru":
            RNN.gru_sequence_backward(
                *head, ws.storage, ws.offset, dgi.storage, dgi.offset, dgh.storage, dgh.offset,
                *tail,
            )  # fmt: skip
        else:
            RNN.lstm_sequence_backward(*head, ws.storage, ws.offset, dgi.storage, dgi.offset, *tail)
        return True


def _storages_and_offsets(*views):
    """``storage, offset`` of each contiguous view in turn: the fused updates' kernel arguments."""
    return [x for v in views for x in (v.storage, v.offset)]
