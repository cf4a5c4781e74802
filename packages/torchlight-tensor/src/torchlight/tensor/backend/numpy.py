"""The ``cpu`` backend: every primitive is one or a few numpy calls on strided views.

A ``TensorData`` becomes an ``ndarray`` *view* of the flat storage (``np.ndarray(shape, dtype,
buffer=storage, offset, strides)``), never a copy, so writing to ``out`` writes the tensor's
storage and matmul reaches BLAS through ``np.matmul``. There is no Python loop over elements.

Floating-point results that IEEE 754 defines (``0/0 = nan``, ``1/0 = inf``, ``log 0 = -inf``,
overflow to ``inf``) are answers here, as in PyTorch, not events: numpy's ``RuntimeWarning`` for
them is ignored for calls made from this backend's modules (one entry in ``warnings``' filter
list, set at import; ``np.errstate`` around every call would cost more than many of the calls).
A user's own numpy code keeps numpy's settings.
"""

import warnings

import numpy as np

from ..indexing import contiguous_strides
from . import numpy_rnn
from .bounds import check_host
from .numpy_ops import ALLOCATING, MAP, REDUCE, ZIP
from .numpy_rows import lse_shift, ones_vector, row_maxes, row_sums
from .protocol import API_VERSION, BackendSpec

__all__ = ["NumpyBackend", "SPEC", "as_array", "blas_operands"]

# (module: a regex matched at the start of the warning's module, so numpy_ops and numpy_rnn too)
warnings.filterwarnings(
    "ignore", category=RuntimeWarning, module=r"torchlight\.tensor\.backend\.numpy"
)


def as_array(v) -> np.ndarray:
    """The ndarray view of a TensorData (cached on the view: building one costs ~1 µs)."""
    a = v.cache
    if a is None:
        st = v.storage
        if v.size == 0:
            a = np.empty(v.shape, st.dtype)
        elif (
            v.offset == 0
            and v.size == st.size
            and v.strides == contiguous_strides(v.shape)
            and (len(v.shape) == 1 or st.flags.c_contiguous)  # else reshape would copy
        ):
            # the whole storage in C order: the (1-D) storage itself, or a reshape of it (4x
            # cheaper than np.ndarray(...))
            a = st if len(v.shape) == 1 else st.reshape(v.shape)
        else:
            item = st.itemsize
            key = (v.strides, item)
            steps = _BYTE_STRIDES.get(key)
            if steps is None:
                steps = tuple([s * item for s in v.strides])
                if len(_BYTE_STRIDES) < BYTE_STRIDES_MAX:
                    _BYTE_STRIDES[key] = steps
            a = np.ndarray(v.shape, st.dtype, st, v.offset * item, steps)
        v.cache = a
    return a


_BYTE_STRIDES: dict = {}
BYTE_STRIDES_MAX = 1024
"""How many layouts' byte strides :func:`as_array` keeps: a program's strided views (a row of a
batch, a transpose) come in a few layouts, each met at every step."""


def _blasable(a) -> bool:
    """Whether ``np.matmul`` hands the matrices of ``a`` (its last two dims) to BLAS as they are
    (row-major) or with BLAS's transpose flag (column-major): numpy's own test
    (``is_blasable2d``), one stride the item size and the other spanning a whole row (or
    column). A matrix it refuses goes through numpy's generic loop, several times slower (a
    stepped slice, an expanded axis)."""
    item = a.itemsize
    s_rows, s_cols = a.strides[-2:]
    if s_cols == item:
        return s_rows % item == 0 and s_rows >= a.shape[-1] * item
    return s_rows == item and s_cols % item == 0 and s_cols >= a.shape[-2] * item


def blas_operands(x, y):
    """``x``, ``y`` as ``np.matmul`` hands them to BLAS: a matrix shared by the batch as one 2-D
    operand, and only matrices BLAS cannot take as they are (:func:`_blasable`) packed. A
    transposed view goes in with BLAS's transpose flag. Packing it (what every non-contiguous
    batched operand got before) copied LeNet's first convolution's ``colsᵀ``, 784 × 25 per image,
    for a product BLAS runs on the view at once (157 -> 41 µs). OpenBLAS's transposed-B kernels
    are slower on some small products (attention's ``q @ kᵀ``: up to 1.4×), but packing a
    transposed right operand was up to 11× slower on others (a short or power-of-two row): no
    rule on the shapes picked the faster way reliably, so BLAS gets every view it can take
    (performance.md, stop 32)."""
    if x.ndim > 2:
        # A matrix broadcast over the batch (a convolution's weight) goes in as one 2-D matrix:
        # numpy's matmul broadcasts it itself, where packing would copy it once per batch entry.
        # (Not both: the product must keep the batch dims of ``out``.)
        x_shared, y_shared = not any(x.strides[:-2]), not any(y.strides[:-2])
        if x_shared and not y_shared:
            x = x[(0,) * (x.ndim - 2)]
        elif y_shared and not x_shared:
            y = y[(0,) * (y.ndim - 2)]
    if not x.flags.c_contiguous and not _blasable(x):
        x = np.ascontiguousarray(x)
    if not y.flags.c_contiguous and not _blasable(y):
        y = np.ascontiguousarray(y)
    return x, y


ONEHOT_MAX = 1 << 18
"""``put_add`` along dim 0 of a float ``out`` with at most this many (rows × indices) adds with
one product by a one-hot matrix (BLAS) instead of ``np.add.at``, which is slow per index: an
embedding's backward, 512 indices into 28 rows of 16, took 125 µs with ``add.at`` and 20 µs as a
product; at 5000 rows × 2048 indices the product is 10× slower than ``add.at``."""


def _row_picks(columns, width):
    """The flat positions of ``a[i, columns[i]]`` for the first ``len(columns)`` rows of a
    C-contiguous ``a`` of rows of ``width``: a loss's picked class per row, read or written
    with one flat index (half the cost of a row grid)."""
    if columns.shape[0] == 1:
        return columns
    return columns + np.arange(0, columns.shape[0] * width, width)


class NumpyBackend:
    """numpy implementation of the backend contract (see ``protocol.py``)."""

    name = "numpy"
    device = "cpu"
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
            "gru_cell",
            "lstm_cell",
            "cell_sequence",
            "join",
            "empty_handle",
            "new_result",
            "fill",
            "threads",
        }
    )

    new_result_ops = ALLOCATING | {
        op for table in (MAP, ZIP) for op, f in table.items() if type(f) is np.ufunc
    }
    """Capability ``new_result``: the ops :meth:`map_new` and :meth:`zip_new` compute, those
    that are one numpy ufunc (which allocates its own result) and the ``ALLOCATING`` entries
    of ``numpy_ops.MAP`` that allocate theirs alike."""

    def set_num_threads(self, n):
        """Capability ``threads``: matrix products use at most ``n`` BLAS threads from now on
        (the library's own pool, through threadpoolctl; numpy's other kernels run on the calling
        thread). Without threadpoolctl installed the pool cannot be resized while the process
        runs: a warning says so and how to size it at start.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            warnings.warn(
                f"torchlight.set_num_threads({n}): the BLAS library's threads cannot be changed "
                "while Python runs without threadpoolctl (pip install threadpoolctl); start "
                f"Python with OMP_NUM_THREADS={n} instead",
                RuntimeWarning,
                stacklevel=4,
            )
            return
        threadpool_limits(n, user_api="blas")

    # --- storage -----------------------------------------------------------------------------
    def empty(self, n, dtype):
        """Allocate uninitialised storage for ``n`` elements of ``dtype``, with numpy on the host.

        The contract is :meth:`Backend.empty <torchlight.tensor.backend.protocol.Backend.empty>`.
        """
        return np.empty(n, dtype=dtype.np)

    def empty_handle(self, shape, dtype):
        """Capability ``empty_handle``: :meth:`empty` storage for a contiguous view of ``shape``
        and that view's ndarray (what :func:`as_array` would build for it), with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        handle = np.empty(shape, dtype.np)
        return handle.ravel(), handle  # a view (handle is C-contiguous), half reshape's cost

    def fill(self, out, value):
        """Capability ``fill``: ``out[...] = value``, with numpy on the host (one call: a new
        tensor's zeros, ``x[n:] = -1``, without a constant to copy from).

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        as_array(out).fill(value)  # the core checked that the dtype holds it (dtypes.fitting)

    def from_numpy(self, array):
        """Storage holding the data of the C-contiguous ndarray ``array`` (shared where the device allows), with numpy on the host.

        The contract is :meth:`Backend.from_numpy <torchlight.tensor.backend.protocol.Backend.from_numpy>`.
        """
        if array.ndim == 1 and array.flags.c_contiguous:  # already storage (a new tensor's)
            return array
        return np.ascontiguousarray(array).reshape(-1)

    def to_numpy(self, view):
        """The elements of the strided ``view`` as an ndarray of its shape (may share memory), with numpy on the host.

        The contract is :meth:`Backend.to_numpy <torchlight.tensor.backend.protocol.Backend.to_numpy>`.
        """
        return as_array(view)

    # --- primitives --------------------------------------------------------------------------
    def map(self, op, a, out):
        """Unary elementwise ``out = op(a)``, ``op`` one of ``MAP_OPS`` (same shapes), with numpy on the host.

        The contract is :meth:`Backend.map <torchlight.tensor.backend.protocol.Backend.map>`.
        """
        MAP[op](as_array(a), as_array(out))

    def zip(self, op, a, b, out):
        """Binary elementwise ``out = op(a, b)``, ``op`` one of ``ZIP_OPS``, with numpy on the
        host; ``a`` and ``b`` of ``out``'s shape or of shapes that broadcast to it (capability
        ``broadcast``: numpy broadcasts them, in the chain-rule formulas of ``numpy_ops`` too).

        The contract is :meth:`Backend.zip <torchlight.tensor.backend.protocol.Backend.zip>`.
        """
        ZIP[op](as_array(a), as_array(b), out=as_array(out))

    def map_new(self, op, a, dtype):
        """Capability ``new_result``: :meth:`map` of an op of :attr:`new_result_ops` into a new
        C-contiguous array that its ufunc allocates, as ``(storage, handle)``; ``None`` where the
        result is not of ``dtype``.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        r = MAP[op](as_array(a), order="C")
        # the input's dtype (logical_not: bool); another is declined and the core casts
        return (r.ravel(), r) if r.dtype is dtype.np else None

    def zip_new(self, op, a, b, dtype):
        """Capability ``new_result``: :meth:`zip` of an op of :attr:`new_result_ops` into a new
        C-contiguous array that its ufunc allocates, as ``(storage, handle)``; ``None`` where the
        result is not of ``dtype``.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        r = ZIP[op](as_array(a), as_array(b), order="C")
        # the inputs' one dtype (a comparison: bool); another is declined and the core casts
        return (r.ravel(), r) if r.dtype is dtype.np else None

    def reduce(self, op, a, dims, out):
        """Reduce ``a`` over ``dims`` into ``out`` (size 1 in those dims), ``op`` one of ``REDUCE_OPS``, with numpy on the host.

        The contract is :meth:`Backend.reduce <torchlight.tensor.backend.protocol.Backend.reduce>`.
        """
        x, o = as_array(a), as_array(out)
        if op == "argmax":  # the methods: np.argmax's wrapper costs as much again
            x.argmax(dims[0], o, keepdims=True)
        elif op == "argmin":
            x.argmin(dims[0], o, keepdims=True)
        else:
            axis = dims if type(dims) is tuple else tuple(dims)
            REDUCE[op].reduce(x, axis, out=o, keepdims=True)

    def where(self, cond, a, b, out):
        """Elementwise select ``out = a if cond else b`` (``cond`` a bool view; all of one shape), with numpy on the host.

        The contract is :meth:`Backend.where <torchlight.tensor.backend.protocol.Backend.where>`.
        """
        o, x = as_array(out), as_array(a)
        if np.may_share_memory(o, x):  # writing b first would overwrite a before it is read
            np.copyto(o, np.where(as_array(cond), x, as_array(b)))
            return
        # b, then a where cond holds: no temporary of out's size (np.where's result, copied
        # over), half the time on a (16, 4, 32, 32) attention mask
        np.copyto(o, as_array(b))
        np.copyto(o, x, where=as_array(cond))

    def matmul(self, a, b, out):
        """Batched matrix product ``out = a @ b`` of ``(..., n, k)`` and ``(..., k, m)`` views (batch dims already equal), with numpy on the host.

        The contract is :meth:`Backend.matmul <torchlight.tensor.backend.protocol.Backend.matmul>`.
        """
        x, y = as_array(a), as_array(b)
        if x.shape[-1] == 1:  # an outer product: one rounding either way, 3-4x faster than gemm
            np.multiply(x, y, out=as_array(out))
            return
        x, y = blas_operands(x, y)
        np.matmul(x, y, out=as_array(out))

    # Indexing primitives check their index on the host first (bounds.py): numpy would wrap a
    # negative index silently and raise a bare IndexError for a large one.
    def take(self, a, dim, index, out):
        """``out = a.index_select(dim, index)`` for an ``int64`` index view, with numpy on the host.

        The contract is :meth:`Backend.take <torchlight.tensor.backend.protocol.Backend.take>`.
        """
        x, idx = as_array(a), as_array(index)
        check_host("take", idx, x.shape[dim])
        # written straight into out: "clip" does not buffer as "raise" does, and clips nothing
        # here (the indices were just checked)
        np.take(x, idx, axis=dim, out=as_array(out), mode="clip")

    def put_add(self, out, dim, index, src):
        """``out.index_add_(dim, index, src)`` in place: rows of ``src`` added at ``index`` (repeats add up), with numpy on the host.

        The contract is :meth:`Backend.put_add <torchlight.tensor.backend.protocol.Backend.put_add>`.
        """
        o, idx = as_array(out), as_array(index)
        check_host("put_add", idx, o.shape[dim])
        s, n = as_array(src), idx.shape[0]
        if (
            dim == 0
            and o.dtype.kind == "f"
            and 0 < o.shape[0] * n <= ONEHOT_MAX
            and np.isfinite(s).all()  # 0 · inf in the product would smear NaN over other rows
        ):
            onehot = np.zeros((o.shape[0], n), o.dtype)
            onehot[idx, np.arange(n)] = 1
            o += (onehot @ s.reshape(n, -1)).reshape(o.shape)
        else:
            np.add.at(o, (slice(None),) * dim + (idx,), s)

    def gather(self, a, dim, index, out):
        """``out = a.gather(dim, index)`` (PyTorch semantics), with numpy on the host.

        The contract is :meth:`Backend.gather <torchlight.tensor.backend.protocol.Backend.gather>`.
        """
        idx, x = as_array(index), as_array(a)
        check_host("gather", idx, x.shape[dim])
        if idx.shape[:dim] != x.shape[:dim] or idx.shape[dim + 1 :] != x.shape[dim + 1 :]:
            # PyTorch lets index be smaller than the input in the other dims: read that corner
            x = x[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(idx.shape))]
        o = as_array(out)
        if x.ndim == 2 and dim == 1:
            if idx.shape[1] == 1 and x.flags.c_contiguous and o.flags.c_contiguous:
                # one class per row (a loss's picked class): flat positions, one take (a third
                # of the grid's cost for a single row)
                flat = _row_picks(idx.reshape(-1), x.shape[1])
                x.take(flat, out=o.reshape(-1), mode="clip")  # checked above: nothing to clip
                return
            # a column per row (top-k): a third of take_along_axis's cost, which builds a
            # full index grid
            o[...] = x[np.arange(x.shape[0])[:, None], idx]
        else:
            o[...] = np.take_along_axis(x, idx, axis=dim)

    def scatter_add(self, out, dim, index, src):
        """``out.scatter_add_(dim, index, src)`` in place (PyTorch semantics; repeats add up), with numpy on the host.

        The contract is :meth:`Backend.scatter_add <torchlight.tensor.backend.protocol.Backend.scatter_add>`.
        """
        idx, o = as_array(index), as_array(out)
        check_host("scatter_add", idx, o.shape[dim])
        s = as_array(src)[tuple(slice(0, n) for n in idx.shape)]
        if o.ndim == 2 and dim == 1 and idx.shape[1] == 1:  # a loss's picked class per row
            if o.flags.c_contiguous:  # flat positions, as gather's (half the row grid's cost)
                # index rows: the first rows of out
                flat = _row_picks(idx.reshape(-1), o.shape[1])
                o.reshape(-1)[flat] += s.reshape(-1)  # one position per row: no repeats
            else:
                o[np.arange(idx.shape[0])[:, None], idx] += s
            return
        grid = list(np.indices(idx.shape, sparse=True))
        grid[dim] = idx
        if idx.shape[dim] == 1:  # one index per slice along dim: no position repeats, so a
            o[tuple(grid)] += s  # buffered += is exact
        else:
            np.add.at(o, tuple(grid), s)

    # --- fused capabilities ------------------------------------------------------------------
    def join(self, srcs, dim, out, new_dim):
        """Capability ``join``: ``out = cat(srcs, dim)``, or ``stack`` with ``new_dim``, in one numpy call.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        o = as_array(out)
        arrays = list(map(as_array, srcs))  # (a comprehension's frame costs more than two calls)
        if new_dim:
            shape = arrays[0].shape
            if dim < len(shape):
                # stacked along dim is concatenated along dim into out with dims dim and dim + 1
                # merged (a view: out is new and contiguous); np.stack's checks and a new axis
                # indexed into each input cost as much as the copies
                merged = shape[:dim] + (len(arrays) * shape[dim],) + shape[dim + 1 :]
                np.concatenate(arrays, dim, out=o.reshape(merged))
                return
            axis = (slice(None),) * dim + (None,)  # at the end, or 0-d inputs: a new axis each
            arrays = [a[axis] for a in arrays]
        np.concatenate(arrays, dim, out=o)

    def softmax(self, a, dim, out, log=False):
        """Capability ``softmax``: ``out = softmax(a, dim)`` (``log_softmax`` with ``log=True``), max-shifted, with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        x = as_array(a)
        if x.size == 0:  # numpy's max has no identity for an empty row
            return
        o = as_array(out)  # the shifted input, then the result: no temporaries of x's size
        np.subtract(x, row_maxes(x, dim), out=o)
        if log:
            s = row_sums(np.exp(o), dim)
            np.subtract(o, np.log(s, out=s), out=o)
        else:
            np.exp(o, out=o)
            np.divide(o, row_sums(o, dim), out=o)

    def softmax_backward(self, y, g, dim, out, log=False):
        """Capability ``softmax``: the input gradient ``out`` of softmax (or log-softmax) from its output ``y`` and gradient ``g``, with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        yv, gv = as_array(y), as_array(g)
        if yv.size == 0:
            return
        if log:  # dx = g - softmax(x) * sum(g)
            np.subtract(gv, np.exp(yv) * row_sums(gv, dim), out=as_array(out))
        else:  # dx = y * (g - sum(g * y))
            np.multiply(yv, gv - row_sums(gv * yv, dim), out=as_array(out))

    def logsumexp(self, a, dim, out):
        """Capability ``logsumexp``: ``out = m + log Σ exp(a - m)`` along ``dim`` (``out`` keeps
        ``dim`` with size 1), ``m`` the max or 0 where that is ±inf, with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        x = as_array(a)
        if x.size == 0:  # numpy's max has no identity for an empty row (the core refuses those)
            return
        o = as_array(out)
        m = lse_shift(x, dim)  # a slice of -inf gives -inf, one of +inf +inf
        # log 0 = -inf for a slice of -inf: numpy's warning is filtered for this module (above);
        # an errstate block here cost 1.3 us a call
        np.log(row_sums(np.exp(x - m), dim), out=o)
        o += m

    def layernorm(self, x, w, b, eps, out, mean, rstd):
        """Capability ``layernorm``: normalise each row of ``x`` into ``out``, saving its ``mean`` and ``rstd`` = 1/σ, with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        xv = as_array(x)
        d = xv.shape[-1]
        # (row sums and a division, not .mean: the same arithmetic without numpy's Python
        # wrapper, which cost ~5 µs a call, more than the sums on a transformer's rows)
        # the mean in float64: a float32 mean of equal values can miss them by an ulp, which
        # 1/sqrt(eps) then magnifies (a constant row gave 4e-5 instead of 0 at eps = 1e-5)
        mu = as_array(mean)
        np.divide(row_sums(xv.astype(np.float64), -1), d, out=mu, casting="same_kind")
        y = as_array(out)  # x - μ, then the result, in place: no temporaries of x's size
        np.subtract(xv, mu, out=y)
        r = as_array(rstd)  # 1 / sqrt(mean((x - μ)²) + eps)
        np.divide(row_sums(y * y, -1), d, out=r)
        r += eps
        np.sqrt(r, out=r)
        np.divide(1.0, r, out=r)
        y *= r
        if w is not None:
            y *= as_array(w)
        if b is not None:
            y += as_array(b)

    def layernorm_backward(self, g, x, w, mean, rstd, dx, dw, db):
        """Capability ``layernorm``: ``dx`` (and ``dw``, ``db`` when given) from ``g`` and the saved ``mean``/``rstd``, with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        d = as_array(g).shape[-1]
        # rows of d: every sum below is then one BLAS product with ones (gemv), over the rows
        # for dw and db too (np.add.reduce over the leading axes of (16, 9, 16) cost 4 µs each)
        g2, x2 = as_array(g).reshape(-1, d), as_array(x).reshape(-1, d)
        r, mu = as_array(rstd).reshape(-1, 1), as_array(mean).reshape(-1, 1)
        xhat = x2 - mu
        xhat *= r
        gx = g2 * xhat  # dw's terms; times w, those of Σ dx̂·x̂
        if dw is not None:
            np.matmul(ones_vector(len(g2), gx.dtype), gx, out=as_array(dw))
        if db is not None:
            np.matmul(ones_vector(len(g2), g2.dtype), g2, out=as_array(db))
        wv = as_array(w) if w is not None else None
        dxhat = g2 * wv if wv is not None else g2
        # dx = r (dx̂ - (Σ dx̂ + x̂ Σ dx̂·x̂) / d), written into dx in place
        s1 = np.matmul(dxhat, ones_vector(d, dxhat.dtype))[:, None]
        s2 = np.matmul(gx, wv if wv is not None else ones_vector(d, gx.dtype))[:, None]
        dxv = as_array(dx)
        out = dxv.reshape(-1, d) if dxv.flags.c_contiguous else np.empty_like(xhat)
        np.multiply(xhat, s2, out=out)
        out += s1
        out /= -d
        out += dxhat
        out *= r
        if out.base is None:  # dx had no rows view (a strided out): written back once
            dxv[...] = out.reshape(dxv.shape)

    def cross_entropy(self, x, target, weight, loss, logs):
        """Capability ``cross_entropy``: per-row losses of logits ``x`` (N, C),
        ``loss = weight·((m - x[i, target]) + logs)`` with ``m = max(x, 1)`` and
        ``logs = log Σ exp(x - m)`` (saved for the backward), with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        xv, t, w = as_array(x), as_array(target), as_array(weight)
        if xv.shape[0] == 0:
            return
        check_host("cross_entropy", t, xv.shape[1])
        m = lse_shift(xv)[:, 0]
        picked = xv[np.arange(xv.shape[0]), t]  # t is checked: a third the cost of take_along_axis
        # inf - inf = NaN and log 0 = -inf (rows holding ±inf) are PyTorch's answers too (numpy's
        # warnings about them are filtered for this module, see the module docstring)
        e = np.subtract(xv, m[:, None])
        np.exp(e, out=e)
        log_s = np.log(row_sums(e, 1)[:, 0], out=as_array(logs))
        # (m - x_t) + log_s, not lse - x_t: with |x| ~ 1e4 in float32, lse = m + log_s has
        # already lost the low digits of log_s that the loss consists of (near 3e38, all)
        out = as_array(loss)
        np.multiply(w, (m - picked) + log_s, out=out)
        if np.count_nonzero(w) != w.size:  # 0 · inf or NaN would leave NaN in a dropped row
            out[w == 0] = 0

    def cross_entropy_backward(self, x, target, weight, logs, g, dx):
        """Capability ``cross_entropy``: ``dx = g·weight·(exp((x - m) - logs) - onehot(target))``
        (the softmax from the saved ``logs``), zero on rows of weight 0, with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        xv, t, w = as_array(x), as_array(target), as_array(weight)
        if xv.shape[0] == 0:
            return
        check_host("cross_entropy_backward", t, xv.shape[1])
        d = as_array(dx)  # written in place: this is the biggest array of a language model's step
        np.subtract(xv, lse_shift(xv), out=d)
        d -= as_array(logs)[:, None]
        np.exp(d, out=d)
        d[np.arange(xv.shape[0]), t] -= 1
        d *= (as_array(g) * w)[:, None]
        if np.count_nonzero(w) != w.size:  # 0 · inf would leave NaN in a dropped row
            d[w == 0] = 0

    def nll(self, x, target, out, divisor):
        """Capability ``nll``: ``out = (Σ_i x[i, target_i]) / divisor``, an unweighted
        ``nll_loss``'s forward (``divisor`` -N for its mean, -1 for its sum), with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        xv, t = as_array(x), as_array(target)
        check_host("nll", t, xv.shape[1])
        if xv.flags.c_contiguous:  # flat positions and one take, as gather's picked class
            picked = xv.take(_row_picks(t, xv.shape[1]))
        else:
            picked = xv[np.arange(xv.shape[0]), t]
        # the sum reduce("sum") makes of the picked column, divided once in x's dtype (a numpy
        # scalar over a Python float): the number of the core's three calls. fill, not a ufunc
        # with out=, costs a fifth as much on a 0-d out
        as_array(out).fill(np.add.reduce(picked) / divisor)

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
        """Capability ``adam``: one Adam/AdamW update of ``p``, ``m``, ``v`` in place (formula in ``torchlight/tensor/functions/updates.py``), with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        pa, ga, ma, va = as_array(p), as_array(g), as_array(m), as_array(v)
        if maximize:
            ga = -ga
        if decay != 1:
            pa *= decay
        if l2:
            ga = ga + l2 * pa
        w = 1 - beta1  # m.lerp_(g, w), PyTorch's two-sided formula
        if w < 0.5:
            ma += (ga - ma) * w
        else:
            ma[...] = ga - (ga - ma) * (1 - w)
        va *= beta2
        va += ga * ga * (1 - beta2)
        denom = np.sqrt(va) / bias_correction2_sqrt
        denom += eps
        pa += ma / denom * -step_size

    def adagrad_step(self, p, g, s, *, clr, l2, eps):
        """Capability ``adagrad``: one Adagrad update of ``p`` and ``s`` in place (formula in ``torchlight/tensor/functions/updates.py``), with numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        pa, ga, sa = as_array(p), as_array(g), as_array(s)
        if l2:
            ga = ga + l2 * pa
        sa += ga * ga
        denom = np.sqrt(sa)
        denom += eps
        pa += ga / denom * -clr

    def sgd_step(self, p, g, buf, *, lr, momentum, dampening, l2, nesterov, maximize, first):
        """Capability ``sgd``: one SGD update of ``p`` and the momentum buffer ``buf`` (None
        without momentum) in place (formula in ``torchlight/tensor/functions/updates.py``), with
        numpy on the host.

        An optional capability of the contract (:mod:`torchlight.tensor.backend.protocol`), listed in ``capabilities``.
        """
        pa, ga = as_array(p), as_array(g)
        if maximize:
            ga = -ga
        if l2:
            ga = ga + pa * l2
        if buf is not None:
            ba = as_array(buf)
            if first:
                ba[...] = ga
            else:
                ba *= momentum
                ba += ga if dampening == 0 else ga * (1 - dampening)
            ga = ga + ba * momentum if nesterov else ba
        pa += ga * -lr

    # --- fused recurrent cells (numpy_rnn.py) ----------------------------------------------------
    def gru_cell(self, gi, gh, h, out, ws):
        """The ``gru_cell`` capability in one pass over the gates: ``gi``, ``gh`` (N, 3H) are the
        input and hidden pre-activations (blocks r, z, n), ``h`` (N, H) the previous state.
        Writes :math:`h' = (1 - z) n + z h` with :math:`n = \\tanh(gi_n + r \\cdot gh_n)` into
        ``out`` (N, H), and r, z, n, gh_n into the workspace ``ws`` (N, 4H) for the backward."""
        numpy_rnn.gru_cell(as_array(gi), as_array(gh), as_array(h), as_array(out), as_array(ws))

    def gru_cell_backward(self, g, h, ws, dgi, dgh, dh):
        """Backward of ``gru_cell`` in one pass: from ``g`` = dL/dh' (N, H), ``h`` and the saved
        ``ws``, writes dL/dgi and dL/dgh (N, 3H) into ``dgi`` and ``dgh`` and dL/dh into ``dh``."""
        numpy_rnn.gru_cell_backward(
            as_array(g), as_array(h), as_array(ws), as_array(dgi), as_array(dgh), as_array(dh)
        )

    def lstm_cell(self, gi, gh, c, out, ws):
        """The ``lstm_cell`` capability in one pass over the gates: ``gi``, ``gh`` (N, 4H) are the
        input and hidden pre-activations (blocks i, f, g, o), ``c`` (N, H) the previous cell.
        Writes ``[h'; c']`` into ``out`` (2, N, H), with :math:`c' = f c + i g` and :math:`h' = o
        \\tanh c'`, and i, f, g, o, tanh c' into ``ws`` (N, 5H) for the backward."""
        numpy_rnn.lstm_cell(as_array(gi), as_array(gh), as_array(c), as_array(out), as_array(ws))

    def lstm_cell_backward(self, g, c, ws, dgates, dc):
        """Backward of ``lstm_cell`` in one pass: from ``g`` = dL/d[h'; c'] (2, N, H), ``c`` and the
        saved ``ws``, writes dL/dgates (N, 4H), the gradient of both pre-activation blocks, into
        ``dgates`` and dL/dc into ``dc``."""
        numpy_rnn.lstm_cell_backward(
            as_array(g), as_array(c), as_array(ws), as_array(dgates), as_array(dc)
        )

    def cell_sequence(self, kind, gi, w_hh, b_hh, states, ws, reverse):
        """The ``cell_sequence`` capability: every step of a GRU or LSTM layer in one call, the
        same numpy calls as the core's step loop on ndarray views of its buffers; never declines.

        The contract is in :mod:`torchlight.tensor.backend.protocol`.
        """
        b = None if b_hh is None else as_array(b_hh)
        numpy_rnn.sequence(
            kind, as_array(gi), as_array(w_hh), b, as_array(states), as_array(ws), reverse
        )
        return True

    def cell_sequence_backward(self, kind, g, states, w_hh, ws, dgi, dgh, carry, reverse):
        """Backward of ``cell_sequence``: the steps in reverse, writing ``dgi``, ``dgh`` and the
        initial state's gradient from the steps into ``carry``; never declines."""
        numpy_rnn.sequence_backward(
            kind,
            as_array(g),
            as_array(states),
            as_array(w_hh),
            as_array(ws),
            as_array(dgi),
            as_array(dgh),
            as_array(carry),
            reverse,
        )
        return True


def _load():
    return NumpyBackend()


SPEC = BackendSpec("numpy", _load)
