"""``CudaBackend``: the backend contract on numba-cuda kernels, storage in GPU memory.

A tensor's storage is a 1-D numba device array for its whole life; a view is
``(device array, shape, strides, offset)`` exactly as on the CPU backends. Data crosses the bus
only in ``from_numpy`` (``tl.tensor``, factories, ``.to("cuda")``) and ``to_numpy``
(``.numpy()``, ``.item()``, printing, ``.to("cpu")``), both counted in :mod:`.transfers`.

Each primitive does a little Python — drop size-1 dims and coalesce contiguous dims across
operands, pick the flat kernel when every operand is contiguous, turn the op name into a code,
size the grid from the problem — then launches one kernel (``_elementwise``, ``_reduce``,
``_matmul``, ``_index``, ``_fused``, ``_cross_entropy``). Kernels are built per (op family,
dtype, ndim) on first use and cached; numba compiles each for the argument types it meets.
"""

import warnings

import numpy as np
from numba import cuda

from torchlight.tensor.backend.bounds import FLAG_LEN, OPS, raise_if_flagged
from torchlight.tensor.backend.protocol import API_VERSION
from torchlight.tensor.errors import BackendError
from torchlight.tensor.indexing import prod, row_layout

from . import _cross_entropy as CE
from . import _elementwise as E
from . import _fused as F
from . import _index as X
from . import _launch, transfers
from . import _matmul as M
from . import _random as RND
from . import _recurrent as RNN
from . import _reduce as R
from . import _scalar as S
from . import _updates as U
from . import dlpack as _dlpack
from ._launch import (
    MAX_BLOCKS,
    MULTIPROCESSORS,
    ROW_BLOCK,
    SIMULATOR,
    cached,
    coalesce,
    grid_1d,
    grid_rows,
    launch,
)

__all__ = ["CudaBackend"]

_INT_MAP = {"copy", "neg", "abs", "sign", "square", "relu"}
_BOOL_MAP = {"copy", "logical_not"}
_INT_ZIP = {"add", "sub", "mul", "pow", "maximum", "minimum"}
_BOOL_AS_CMP = {
    "add": "logical_or",
    "mul": "logical_and",
    "maximum": "logical_or",
    "minimum": "logical_and",
}
_RED = {"sum": R.SUM, "prod": R.PROD, "max": R.MAX, "min": R.MIN}
_UNARY = {"f": S.unary_float, "i": S.unary_int, "b": S.unary_bool}
_BINARY = {"f": S.binary_float, "i": S.binary_int}
# tiled matmul shape: (BM, BN, BK, TM, TN)
MATMUL_TILE = (16, 16, 8, 4, 4) if SIMULATOR else (64, 64, 16, 4, 4)
# a matmul with fewer blocks than this splits its k loop (``_matmul.split_k``): a few blocks per
# multiprocessor keep it busy while others wait on memory
SPLIT_K_BLOCKS = 4 * MULTIPROCESSORS


def _kind(dtype):
    k = dtype.kind
    return "b" if k == "b" else ("f" if k == "f" else "i")


def _acc(dtype):
    """numba accumulator type for an output dtype: float32/float64, else int64."""
    return R.ACC_TYPES.get(np.dtype(dtype).name, R.ACC_TYPES["int64"])


def _flat(*views):
    return all(v.is_contiguous() for v in views)


def _mat(v):
    """A 2-D view as kernel arguments ``(storage, offset, row stride, column stride)``; outputs,
    contiguous by contract, pass only the first three."""
    return v.storage, v.offset, v.strides[0], v.strides[1]


def _rank_error(op, *views):
    """The index kernels walk every operand with the iteration shape's strides: operands of the
    wrong rank (a core bug, not a user's) would be read past their stride arrays."""
    raise BackendError(
        f"cuda backend: {op} got operands of shapes {[v.shape for v in views]}, "
        "outside the contract (protocol.py)"
    )


class CudaBackend:
    """numba-cuda implementation of the backend contract (see ``torchlight.tensor.backend.protocol``)."""

    name = "cuda"
    device = "cuda"
    API_VERSION = API_VERSION
    capabilities = frozenset(
        {
            "softmax",
            "layernorm",
            "cross_entropy",
            "adam",
            "adagrad",
            "sgd",
            "fill",
            "dlpack",
            "gru_cell",
            "lstm_cell",
            "random",
        }
    )

    # --- device queries (optional attributes, read by torchlight.cuda) ---------------------------
    def synchronize(self):
        """Wait until every queued kernel has finished."""
        cuda.synchronize()

    def empty_cache(self):
        """Free the device arrays numba has queued for deallocation now, not at its next flush."""
        deallocations = getattr(cuda.current_context(), "deallocations", None)
        if deallocations is not None:
            deallocations.clear()

    @property
    def device_name(self):
        """The GPU's name as the driver reports it (``"NVIDIA H200"``); numba's simulated
        device has none."""
        name = getattr(cuda.get_current_device(), "name", None)
        if name is None:
            return "numba CUDA simulator" if SIMULATOR else "unknown CUDA device"
        return name.decode() if isinstance(name, bytes) else str(name)

    # --- bounds flag ---------------------------------------------------------------------------
    # Index kernels record an out-of-range index in one host-mapped int64 array (the device
    # writes it over the bus, the host reads it without a copy). Reading it right after each
    # launch would make the host wait for the device at every index op, so it is read where the
    # host waits anyway — every device->host copy — and by check_errors(), like PyTorch's device
    # asserts, which also surface at the next synchronising call.
    _flag = None

    def _bounds_flag(self):
        if CudaBackend._flag is None:
            f = cuda.mapped_array(FLAG_LEN, dtype=np.int64)
            f[:] = 0
            CudaBackend._flag = f
        return CudaBackend._flag

    def check_errors(self):
        """Wait for the device and raise the ``TensorIndexError`` of an index kernel that met an
        index out of range since the last check (``torchlight.tensor.backend.bounds``)."""
        if CudaBackend._flag is not None:
            if not SIMULATOR:
                cuda.synchronize()
            raise_if_flagged(CudaBackend._flag)

    # --- storage -------------------------------------------------------------------------------
    def empty(self, n, dtype):
        """Allocate uninitialised storage for ``n`` elements of ``dtype``, with CUDA kernels on device memory.

        The contract is :meth:`Backend.empty <torchlight.tensor.backend.protocol.Backend.empty>`.
        """
        return cuda.device_array(n, dtype=dtype.np)

    def from_numpy(self, array):
        """Storage holding the data of the C-contiguous ndarray ``array`` (shared where the device allows), with CUDA kernels on device memory.

        The contract is :meth:`Backend.from_numpy <torchlight.tensor.backend.protocol.Backend.from_numpy>`.
        """
        return transfers.to_device(cuda, np.ascontiguousarray(array).reshape(-1))

    def to_numpy(self, view):
        """The elements of the strided ``view`` as an ndarray of its shape (may share memory), with CUDA kernels on device memory.

        The contract is :meth:`Backend.to_numpy <torchlight.tensor.backend.protocol.Backend.to_numpy>`.
        """
        st = view.storage
        if view.size == 0:
            self.check_errors()
            return np.empty(view.shape, dtype=st.dtype)
        if view.is_contiguous():
            packed = st[view.offset : view.offset + view.size]
        else:  # pack on the device first, so exactly the view's bytes cross the bus
            packed = cuda.device_array(view.size, dtype=st.dtype)
            self._copy_into(view, packed)
        host = transfers.to_host(packed).reshape(view.shape)  # waits for the device
        self.check_errors()
        return host

    # --- DLPack (the "dlpack" capability; see .dlpack) -------------------------------------------
    def dlpack_source(self, view):
        """An object whose ``__dlpack__`` exports ``view``'s device memory (no copy)."""
        return _dlpack.dlpack_source(view)

    def from_dlpack(self, obj, copy=None):
        """``(TensorData, dtype)`` on the device memory of a DLPack producer (no copy)."""
        return _dlpack.from_dlpack(self, obj, copy)

    def _copy_into(self, view, flat):
        from torchlight.tensor.storage import TensorData

        self.map("copy", view, TensorData(flat, view.shape))

    def fill(self, out, value):
        """``out[...] = value`` on the device (no transfer): a 1-D or contiguous view."""
        if out.size == 0:
            return
        if out.is_contiguous():
            step = 1
        elif len(out.shape) == 1:
            step = out.strides[0]
        else:
            raise BackendError("cuda backend: fill needs a contiguous or 1-D view")
        k = cached(("fill",), X.fill_kernel)
        dt = out.storage.dtype
        launch(k, *grid_1d(out.size), out.storage, out.offset, step, out.size, dt.type(value))

    # --- elementwise ---------------------------------------------------------------------------
    def map(self, op, a, out):
        """Unary elementwise ``out = op(a)``, ``op`` one of ``MAP_OPS`` (same shapes), with CUDA kernels on device memory.

        The contract is :meth:`Backend.map <torchlight.tensor.backend.protocol.Backend.map>`.
        """
        n = out.size
        if n == 0:
            return
        sa, so = a.storage, out.storage
        if op == "copy":
            fn, key = S.identity, "id"
        else:
            kind = _kind(sa.dtype)
            if (
                (kind == "i" and op not in _INT_MAP)
                or (kind == "b" and op not in _BOOL_MAP)
                or (kind == "f" and op == "logical_not")
                or op not in S.MAP_CODES
            ):
                raise BackendError(
                    f"cuda backend: map op {op!r} is not defined for dtype {sa.dtype}"
                )
            fn, key = _UNARY[kind], kind
        code = S.MAP_CODES[op]
        if _flat(a, out):
            k = cached(("map_flat", key), lambda: E.map_flat(fn))
            launch(k, *grid_1d(n), code, sa, a.offset, so, out.offset, n)
            return
        shape, (xs, os_) = coalesce(a.shape, (a.strides, out.strides))
        k = cached(("map", key, len(shape)), lambda: E.map_strided(fn, len(shape)))
        launch(k, *grid_1d(n), code, sa, xs, a.offset, so, os_, out.offset, shape, n)

    def zip(self, op, a, b, out):
        """Binary elementwise ``out = op(a, b)``, ``op`` one of ``ZIP_OPS`` (inputs already broadcast to ``out``'s shape), with CUDA kernels on device memory.

        The contract is :meth:`Backend.zip <torchlight.tensor.backend.protocol.Backend.zip>`.
        """
        n = out.size
        if n == 0:
            return
        sa, sb, so = a.storage, b.storage, out.storage
        if sa.dtype != sb.dtype:
            raise BackendError(
                f"cuda backend: zip {op!r} got mixed dtypes {sa.dtype} and {sb.dtype}"
            )
        kind = _kind(sa.dtype)
        if kind == "b" and op in _BOOL_AS_CMP:
            op = _BOOL_AS_CMP[op]
        if op in S.CMP_CODES:
            code, fn, key = S.CMP_CODES[op], S.compare, "cmp"
        elif op in S.ZIP_CODES and (kind == "f" or (kind == "i" and op in _INT_ZIP)):
            code, fn, key = S.ZIP_CODES[op], _BINARY[kind], kind
        else:
            raise BackendError(f"cuda backend: zip op {op!r} is not defined for dtype {sa.dtype}")
        if _flat(a, b, out):
            k = cached(("zip_flat", key), lambda: E.zip_flat(fn))
            launch(k, *grid_1d(n), code, sa, a.offset, sb, b.offset, so, out.offset, n)
            return
        shape, (as_, bs, os_) = coalesce(out.shape, (a.strides, b.strides, out.strides))
        k = cached(("zip", key, len(shape)), lambda: E.zip_strided(fn, len(shape)))
        launch(
            k, *grid_1d(n), code, sa, as_, a.offset, sb, bs, b.offset, so, os_, out.offset, shape, n
        )

    def where(self, cond, a, b, out):
        """Elementwise select ``out = a if cond else b`` (``cond`` a bool view; all of one shape), with CUDA kernels on device memory.

        The contract is :meth:`Backend.where <torchlight.tensor.backend.protocol.Backend.where>`.
        """
        n = out.size
        if n == 0:
            return
        shape, (cs, as_, bs, os_) = coalesce(
            out.shape, (cond.strides, a.strides, b.strides, out.strides)
        )
        k = cached(("where", len(shape)), lambda: E.where_strided(len(shape)))
        launch(
            k,
            *grid_1d(n),
            cond.storage,
            cs,
            cond.offset,
            a.storage,
            as_,
            a.offset,
            b.storage,
            bs,
            b.offset,
            out.storage,
            os_,
            out.offset,
            shape,
            n,
        )

    # --- reductions ----------------------------------------------------------------------------
    def reduce(self, op, a, dims, out):
        """Reduce ``a`` over ``dims`` into ``out`` (size 1 in those dims), ``op`` one of ``REDUCE_OPS``, with CUDA kernels on device memory.

        The contract is :meth:`Backend.reduce <torchlight.tensor.backend.protocol.Backend.reduce>`.
        """
        nout = out.size
        if nout == 0:
            return
        dims = tuple(dims)
        keep = [d for d in range(len(a.shape)) if d not in dims]
        oshape, (oxs, oos) = coalesce(
            [a.shape[d] for d in keep],
            ([a.strides[d] for d in keep], [out.strides[d] for d in keep]),
        )
        blocks, threads = grid_rows(nout)
        if op in ("argmax", "argmin"):
            (d,) = dims
            acc = _acc(a.storage.dtype if a.storage.dtype.kind == "f" else np.int64)
            k = cached(("arg", str(acc), len(oshape)), lambda: R.arg_kernel(acc, len(oshape)))
            launch(
                k,
                blocks,
                threads,
                op == "argmax",
                a.storage,
                a.offset,
                oshape,
                oxs,
                out.storage,
                oos,
                out.offset,
                a.shape[d],
                a.strides[d],
                nout,
            )
            return
        if op not in _RED:
            raise BackendError(f"cuda backend: unknown reduce op {op!r}")
        rshape, (rxs,) = coalesce([a.shape[d] for d in dims], ([a.strides[d] for d in dims],))
        nred = 1
        for d in dims:
            nred *= a.shape[d]
        code = _RED[op]
        odt = out.storage.dtype
        acc = _acc(odt)
        ident = (odt.type if odt.kind == "f" else np.int64)(R.identity_of(code, odt.kind))
        k = cached(
            ("reduce", str(acc), len(oshape), len(rshape)),
            lambda: R.reduce_kernel(acc, len(oshape), len(rshape)),
        )
        launch(
            k,
            blocks,
            threads,
            code,
            a.storage,
            a.offset,
            oshape,
            oxs,
            out.storage,
            oos,
            out.offset,
            rshape,
            rxs,
            nout,
            nred,
            ident,
        )

    # --- matmul --------------------------------------------------------------------------------
    def matmul(self, a, b, out):
        """Batched matrix product ``out = a @ b`` of ``(..., n, k)`` and ``(..., k, m)`` views (batch dims already equal), with CUDA kernels on device memory.

        The contract is :meth:`Backend.matmul <torchlight.tensor.backend.protocol.Backend.matmul>`.
        """
        if out.size == 0:
            return
        n, kk = a.shape[-2:]
        m = b.shape[-1]
        batch = out.shape[:-2]
        nbatch = prod(batch)
        BM, BN, BK, _, _ = MATMUL_TILE
        tiles = -(-n // BM) * -(-m // BN) * nbatch
        s = M.split_k(tiles, kk, BK, SPLIT_K_BLOCKS) if nbatch == 1 else 1
        if s > 1:
            self._matmul_split_k(a, b, out, s)
            return
        bshape, (abs_, bbs, obs) = coalesce(
            batch, (a.strides[:-2], b.strides[:-2], out.strides[:-2])
        )
        self._launch_matmul(
            (a.storage, abs_, a.offset, a.strides[-2], a.strides[-1]),
            (b.storage, bbs, b.offset, b.strides[-2], b.strides[-1]),
            (out.storage, obs, out.offset, out.strides[-2], out.strides[-1]),
            bshape,
            nbatch,
            n,
            kk,
            m,
        )

    def _matmul_split_k(self, a, b, out, s):
        """One ``n x k @ k x m`` product as ``s`` slices of ``k`` (see ``_matmul.split_k``): the
        slices are a strided batch of ``a``'s columns and ``b``'s rows, each writes its partial
        product into a scratch ``(s, n, m)``, and a sum over the slices fills ``out``."""
        from torchlight.tensor.storage import TensorData

        n, kk = a.shape[-2:]
        m = b.shape[-1]
        ks = kk // s
        asr, asc = a.strides[-2:]
        bsr, bsc = b.strides[-2:]
        part = cuda.device_array(s * n * m, dtype=out.storage.dtype)
        self._launch_matmul(
            (a.storage, (ks * asc,), a.offset, asr, asc),
            (b.storage, (ks * bsr,), b.offset, bsr, bsc),
            (part, (n * m,), 0, m, 1),
            (s,),
            s,
            n,
            ks,
            m,
        )
        osr, osc = out.strides[-2:]
        self.reduce(
            "sum",
            TensorData(part, (s, n, m)),
            (0,),
            TensorData(out.storage, (1, n, m), (0, osr, osc), out.offset),
        )

    def _launch_matmul(self, a, b, out, bshape, nbatch, n, kk, m, tile=MATMUL_TILE):
        """Launch the tiled kernel; ``a``, ``b``, ``out`` are ``(storage, batch strides, offset,
        row stride, column stride)``, the batch of shape ``bshape`` (``nbatch`` elements).
        ``tile`` is ``(BM, BN, BK, TM, TN)`` (another than ``MATMUL_TILE``: a tile sweep)."""
        acc = _acc(out[0].dtype)
        BM, BN, BK, TM, TN = tile
        k = cached(
            ("matmul", str(acc), len(bshape), tile),
            lambda: M.matmul_kernel(acc, len(bshape), BM, BN, BK, TM, TN),
        )
        grid = ((m + BN - 1) // BN, (n + BM - 1) // BM, min(nbatch, 65535))
        launch(k, grid, (BN // TN, BM // TM), *a, *b, *out, bshape, nbatch, n, kk, m)

    # --- indexing ------------------------------------------------------------------------------
    def _gather(self, a, dim, index_strides, index, out, op):
        if out.size == 0:
            return
        nd = len(out.shape)
        k = cached(("gather", nd), lambda: X.gather_kernel(nd))
        launch(
            k,
            *grid_1d(out.size),
            a.storage,
            tuple(a.strides),
            a.offset,
            a.strides[dim],
            dim,
            a.shape[dim],
            index.storage,
            tuple(index_strides),
            index.offset,
            out.storage,
            tuple(out.strides),
            out.offset,
            tuple(out.shape),
            out.size,
            self._bounds_flag(),
            OPS.index(op),
        )

    def take(self, a, dim, index, out):
        """``out = a.index_select(dim, index)`` for an ``int64`` index view, with CUDA kernels on device memory.

        The contract is :meth:`Backend.take <torchlight.tensor.backend.protocol.Backend.take>`.
        """
        if len(index.shape) != 1 or len(out.shape) != len(a.shape):
            _rank_error("take", a, index, out)
        strides = [0] * len(out.shape)
        strides[dim] = index.strides[0]
        self._gather(a, dim, strides, index, out, "take")

    def gather(self, a, dim, index, out):
        """``out = a.gather(dim, index)`` (PyTorch semantics), with CUDA kernels on device memory.

        The contract is :meth:`Backend.gather <torchlight.tensor.backend.protocol.Backend.gather>`.
        """
        if not len(a.shape) == len(index.shape) == len(out.shape):
            _rank_error("gather", a, index, out)
        self._gather(a, dim, index.strides, index, out, "gather")

    def _scatter_add(self, out, dim, shape, index_strides, index, src, op):
        n = 1
        for s in shape:
            n *= s
        if n == 0:
            return
        nd = len(shape)
        k = cached(("scatter_add", nd), lambda: X.scatter_add_kernel(nd))
        launch(
            k,
            *grid_1d(n),
            out.storage,
            tuple(out.strides),
            out.offset,
            out.strides[dim],
            dim,
            out.shape[dim],
            index.storage,
            tuple(index_strides),
            index.offset,
            src.storage,
            tuple(src.strides),
            src.offset,
            tuple(shape),
            n,
            self._bounds_flag(),
            OPS.index(op),
        )

    def put_add(self, out, dim, index, src):
        """``out.index_add_(dim, index, src)`` in place: rows of ``src`` added at ``index`` (repeats add up), with CUDA kernels on device memory.

        The contract is :meth:`Backend.put_add <torchlight.tensor.backend.protocol.Backend.put_add>`.
        """
        if len(index.shape) != 1 or len(out.shape) != len(src.shape):
            _rank_error("put_add", out, index, src)
        strides = [0] * len(src.shape)
        strides[dim] = index.strides[0]
        self._scatter_add(out, dim, src.shape, strides, index, src, "put_add")

    def scatter_add(self, out, dim, index, src):
        """``out.scatter_add_(dim, index, src)`` in place (PyTorch semantics; repeats add up), with CUDA kernels on device memory.

        The contract is :meth:`Backend.scatter_add <torchlight.tensor.backend.protocol.Backend.scatter_add>`.
        """
        if not len(out.shape) == len(index.shape) == len(src.shape):
            _rank_error("scatter_add", out, index, src)
        self._scatter_add(out, dim, index.shape, index.strides, index, src, "scatter_add")

    # --- fused capabilities ----------------------------------------------------------------------
    def softmax(self, a, dim, out, log=False):
        """Capability ``softmax``: ``out = softmax(a, dim)`` (``log_softmax`` with ``log=True``), max-shifted, with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if out.size == 0:
            return
        oshape, nrows, L, ((xs, xo, xl), (os_, oo, ol)) = row_layout((a, out), dim)
        acc = _acc(out.storage.dtype)
        k = cached(("softmax", str(acc), len(oshape)), lambda: F.softmax_kernel(acc, len(oshape)))
        launch(
            k,
            *grid_rows(nrows),
            a.storage,
            xs,
            xo,
            xl,
            out.storage,
            os_,
            oo,
            ol,
            oshape,
            nrows,
            L,
            bool(log),
        )

    def softmax_backward(self, y, g, dim, out, log=False):
        """Capability ``softmax``: the input gradient ``out`` of softmax (or log-softmax) from its output ``y`` and gradient ``g``, with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if out.size == 0:
            return
        oshape, nrows, L, ((ys, yo, yl), (gs, go, gl), (os_, oo, ol)) = row_layout((y, g, out), dim)
        acc = _acc(out.storage.dtype)
        k = cached(
            ("softmax_bw", str(acc), len(oshape)),
            lambda: F.softmax_backward_kernel(acc, len(oshape)),
        )
        launch(
            k,
            *grid_rows(nrows),
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
            oshape,
            nrows,
            L,
            bool(log),
        )

    def layernorm(self, x, w, b, eps, out, mean, rstd):
        """Capability ``layernorm``: normalise each row of ``x`` into ``out``, saving its ``mean`` and ``rstd`` = 1/σ, with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if out.size == 0:
            return
        dim = len(x.shape) - 1
        oshape, nrows, L, ((xs, xo, xl), (os_, oo, ol), (ms, mo, _), (rs, ro, _)) = row_layout(
            (x, out, mean, rstd), dim
        )
        acc = _acc(out.storage.dtype)
        dummy = x.storage
        wv = (w.storage, w.offset, w.strides[0]) if w is not None else (dummy, 0, 0)
        bv = (b.storage, b.offset, b.strides[0]) if b is not None else (dummy, 0, 0)
        k = cached(
            ("layernorm", str(acc), len(oshape)), lambda: F.layernorm_kernel(acc, len(oshape))
        )
        launch(
            k,
            *grid_rows(nrows),
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
            oshape,
            nrows,
            L,
        )

    def layernorm_backward(self, g, x, w, mean, rstd, dx, dw, db):
        """Capability ``layernorm``: ``dx`` (and ``dw``, ``db`` when given) from ``g`` and the saved ``mean``/``rstd``, with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if dx.size == 0:
            return
        dim = len(x.shape) - 1
        views = (g, x, mean, rstd, dx)
        oshape, nrows, L, ((gs, go, gl), (xs, xo, xl), (ms, mo, _), (rs, ro, _), (ds, do, dl)) = (
            row_layout(views, dim)
        )
        acc = _acc(dx.storage.dtype)
        wv = (w.storage, w.offset, w.strides[0]) if w is not None else (x.storage, 0, 0)
        k = cached(
            ("layernorm_bw", str(acc), len(oshape)),
            lambda: F.layernorm_backward_kernel(acc, len(oshape)),
        )
        launch(
            k,
            *grid_rows(nrows),
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
            oshape,
            nrows,
            L,
        )
        if dw is None and db is None:
            return
        for v in (dw, db):
            if v is not None:
                self.fill(v, 0)
        dwv = (dw.storage, dw.offset, dw.strides[0]) if dw is not None else (dx.storage, 0, 0)
        dbv = (db.storage, db.offset, db.strides[0]) if db is not None else (dx.storage, 0, 0)
        kp = cached(
            ("layernorm_params", str(acc), len(oshape)),
            lambda: F.layernorm_params_kernel(acc, len(oshape)),
        )
        cols = max(1, min((L + ROW_BLOCK - 1) // ROW_BLOCK, MAX_BLOCKS))
        chunks = max(1, min(nrows, 2 if SIMULATOR else 64))
        launch(
            kp,
            (cols, chunks),
            ROW_BLOCK,
            g.storage,
            gs,
            go,
            gl,
            x.storage,
            xs,
            xo,
            xl,
            mean.storage,
            ms,
            mo,
            rstd.storage,
            rs,
            ro,
            dwv[0],
            dwv[1],
            dwv[2],
            dw is not None,
            dbv[0],
            dbv[1],
            dbv[2],
            db is not None,
            oshape,
            nrows,
            L,
        )

    def _ce_rows(self, mats, vectors):
        """Row layout of the (N, C) ``mats`` and the (N,) ``vectors``; the vectors become (N, 1)
        columns so that every operand's rows coalesce alike."""
        return row_layout((*mats, *(v.unsqueeze(1) for v in vectors)), 1)

    def cross_entropy(self, x, target, weight, loss, logs):
        """Capability ``cross_entropy``: per-row losses of logits ``x`` (N, C),
        ``loss = weight·((m - x[i, target]) + logs)`` with ``m = max(x, 1)`` and
        ``logs = log Σ exp(x - m)`` (saved for the backward), with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if x.shape[0] == 0:
            return
        oshape, nrows, C, ((xs, xo, xl), (ts, to, _), (ws, wo, _), (ls, lo, _), (es, eo, _)) = (
            self._ce_rows((x,), (target, weight, loss, logs))
        )
        acc = _acc(x.storage.dtype)
        k = cached(
            ("cross_entropy", str(acc), len(oshape)),
            lambda: CE.cross_entropy_kernel(acc, len(oshape)),
        )
        launch(
            k,
            *grid_rows(nrows),
            x.storage,
            xs,
            xo,
            xl,
            target.storage,
            ts,
            to,
            weight.storage,
            ws,
            wo,
            loss.storage,
            ls,
            lo,
            logs.storage,
            es,
            eo,
            oshape,
            nrows,
            C,
            self._bounds_flag(),
            OPS.index("cross_entropy"),
        )

    def cross_entropy_backward(self, x, target, weight, logs, g, dx):
        """Capability ``cross_entropy``: ``dx = g·weight·(exp((x - m) - logs) - onehot(target))``
        (the softmax from the saved ``logs``), zero on rows of weight 0, with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        if x.shape[0] == 0:
            return
        oshape, nrows, C, per = self._ce_rows((x, dx), (target, weight, logs, g))
        (xs, xo, xl), (ds, do, dl), (ts, to, _), (ws, wo, _), (es, eo, _), (gs, go, _) = per
        acc = _acc(dx.storage.dtype)
        k = cached(
            ("cross_entropy_bw", str(acc), len(oshape)),
            lambda: CE.cross_entropy_backward_kernel(acc, len(oshape)),
        )
        launch(
            k,
            *grid_rows(nrows),
            x.storage,
            xs,
            xo,
            xl,
            target.storage,
            ts,
            to,
            weight.storage,
            ws,
            wo,
            logs.storage,
            es,
            eo,
            g.storage,
            gs,
            go,
            dx.storage,
            ds,
            do,
            dl,
            oshape,
            nrows,
            C,
            self._bounds_flag(),
            OPS.index("cross_entropy_backward"),
        )

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
        """Capability ``adam``: one Adam/AdamW update of ``p``, ``m``, ``v`` in place (formula in ``torchlight/tensor/functions/updates.py``), with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n = p.size
        if n == 0:
            return
        acc = _acc(p.storage.dtype)
        k = cached(("adam", str(acc)), lambda: U.adam_kernel(acc))
        launch(
            k,
            *grid_1d(n),
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
        """Capability ``adagrad``: one Adagrad update of ``p`` and ``s`` in place (formula in ``torchlight/tensor/functions/updates.py``), with CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n = p.size
        if n == 0:
            return
        acc = _acc(p.storage.dtype)
        k = cached(("adagrad", str(acc)), lambda: U.adagrad_kernel(acc))
        launch(k, *grid_1d(n), *_storages_and_offsets(p, g, s), n, clr, l2, eps)

    def sgd_step(self, p, g, buf, *, lr, momentum, dampening, l2, nesterov, maximize, first):
        """Capability ``sgd``: one SGD update of ``p`` and the momentum buffer ``buf`` (None
        without momentum) in place (formula in ``torchlight/tensor/functions/updates.py``), with
        CUDA kernels on device memory.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        n = p.size
        if n == 0:
            return
        acc = _acc(p.storage.dtype)
        k = cached(("sgd", str(acc)), lambda: U.sgd_kernel(acc))
        launch(
            k,
            *grid_1d(n),
            *_storages_and_offsets(p, g, p if buf is None else buf),
            n,
            -1.0 if maximize else 1.0,
            float(l2),
            0.0 if buf is None else float(momentum),
            1.0 - float(dampening),
            int(bool(first)),
            int(bool(nesterov)),
            -float(lr),
        )

    # --- fused recurrent cells (_recurrent.py) ----------------------------------------------------
    def gru_cell(self, gi, gh, h, out, ws):
        """The ``gru_cell`` capability in one pass over the gates: ``gi``, ``gh`` (N, 3H) are the
        input and hidden pre-activations (blocks r, z, n), ``h`` (N, H) the previous state.
        Writes :math:`h' = (1 - z) n + z h` with :math:`n = \\tanh(gi_n + r \\cdot gh_n)` into
        ``out`` (N, H), and r, z, n, gh_n into the workspace ``ws`` (N, 4H) for the backward."""
        n, hid = h.shape
        if n * hid == 0:
            return
        acc = _acc(h.storage.dtype)
        k = cached(("gru_cell", str(acc)), lambda: RNN.gru_forward_kernel(acc))
        launch(
            k,
            *grid_1d(n * hid),
            *_mat(gi),
            *_mat(gh),
            *_mat(h),
            *_mat(out)[:3],
            *_mat(ws)[:3],
            n,
            hid,
        )

    def gru_cell_backward(self, g, h, ws, dgi, dgh, dh):
        """Backward of ``gru_cell`` in one pass: from ``g`` = dL/dh' (N, H), ``h`` and the saved
        ``ws``, writes dL/dgi and dL/dgh (N, 3H) into ``dgi`` and ``dgh`` and dL/dh into ``dh``."""
        n, hid = h.shape
        if n * hid == 0:
            return
        acc = _acc(h.storage.dtype)
        k = cached(("gru_cell_bw", str(acc)), lambda: RNN.gru_backward_kernel(acc))
        launch(
            k,
            *grid_1d(n * hid),
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
        acc = _acc(c.storage.dtype)
        k = cached(("lstm_cell", str(acc)), lambda: RNN.lstm_forward_kernel(acc))
        launch(
            k,
            *grid_1d(n * hid),
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
        acc = _acc(c.storage.dtype)
        k = cached(("lstm_cell_bw", str(acc)), lambda: RNN.lstm_backward_kernel(acc))
        launch(
            k,
            *grid_1d(n * hid),
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

    # --- random fills on the device (_random.py) -------------------------------------------------
    _rng_states = None  # one xoroshiro128+ state per thread of the largest grid, re-seeded per fill

    def random_(self, out, kind, seed, k):
        """Fill the contiguous float view ``out`` with ``kind`` ("uniform" or "normal") draws of
        fill ``k`` after seeding with ``seed`` (see ``_random.py``)."""
        if out.size == 0:
            return
        if not out.is_contiguous() or out.storage.dtype.kind != "f":
            raise BackendError("cuda backend: random_ needs a contiguous float view")
        if kind not in ("uniform", "normal"):
            raise BackendError(
                f"cuda backend: random_ kind must be 'uniform' or 'normal', got {kind!r}"
            )
        if self._rng_states is None:
            from numba.cuda.random import xoroshiro128p_dtype

            self._rng_states = cuda.device_array(
                MAX_BLOCKS * _launch.BLOCK, dtype=xoroshiro128p_dtype
            )
        name = out.storage.dtype.name
        kern = cached(("random", kind, name), lambda: RND.random_kernel(kind, name))
        args = (
            kern,
            *grid_1d(out.size),
            self._rng_states,
            np.uint64(RND.stream_base(seed, k)),
            out.storage,
            out.offset,
            out.size,
        )
        if not SIMULATOR:
            launch(*args)
            return
        with (
            warnings.catch_warnings()
        ):  # simulated threads hash in numpy uint64: the wrap-around is meant
            warnings.simplefilter("ignore", RuntimeWarning)
            launch(*args)


def _storages_and_offsets(*views):
    """``storage, offset`` of each contiguous view in turn: the fused updates' kernel arguments."""
    return [x for v in views for x in (v.storage, v.offset)]
