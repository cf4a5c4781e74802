"""Float matmul: BLAS's ``sgemm`` / ``dgemm`` called from inside numba's parallel loop.

``prange`` runs over (batch entry, block of output rows or columns) pairs and each iteration is one
single-threaded BLAS call on its block, so numba's thread pool is the only one that runs — the
threads that just finished an elementwise kernel pick up the matmul. Why not BLAS's own threads:
OpenBLAS's workers and numba's (OpenMP's, here) both spin for a while after each parallel call,
and on a 2-core machine whichever pool is spinning takes the core the other one needs (measured
on the GPT step: 403 ms with both at 2 threads; 144 ms with BLAS at 1 thread and the product
sliced over a Python thread pool, which still waited for numba's spinning workers —
``tests-integration/benchmarks/bench_numba_kernels.py``: (2048, 128) @ (128, 512) 1.17 ms alone,
2.20 ms right after a ``prange`` kernel, 1.15 ms from inside ``prange``).

BLAS itself comes from ``scipy.linalg.cython_blas``, the function pointers numba documents for
calling compiled code (``numba.extending.get_cython_function_address``); the pointer is a kernel
*argument*, so numba's on-disk cache stays valid across processes. The BLAS libraries of the
process run one thread each from the moment the backend loads (:func:`one_blas_thread`): the
parallelism is numba's, and the small products that still go through ``np.matmul`` must not
wake a second pool either.

BLAS is column-major, our rows are row-major: a row-major ``C = A·B`` is the column-major
``Cᵀ = Bᵀ·Aᵀ``, and a row-major matrix *is* its transpose in column-major order with the row
stride as leading dimension. So each call is ``gemm(opB, opA, m, rows, k, 1, B, ldb, A, lda, 0,
C, ldc)``, with ``op = "N"`` for an operand whose columns are unit-stride and ``"T"`` for one
whose rows are (a transposed view), and no operand is ever copied for its layout.
"""

import ctypes
import os
import warnings
from typing import Any

import numpy as np

from numba import get_num_threads, prange
from torchlight.tensor.backend.numpy import as_array
from torchlight.tensor.indexing import coalesce

from ._jit import kernel
from ._matmul import _batch3

__all__ = ["SPLIT_MIN", "blas_strides", "gemm", "gemm_for", "gemm_kernel", "one_blas_thread"]

# Products below SPLIT_MIN multiply-adds run one BLAS call on the calling thread (a parallel
# region costs microseconds to open); above it each output is cut into one block per thread.
SPLIT_MIN = int(os.environ.get("TORCHLIGHT_NUMBA_MATMUL_SPLIT_MIN", str(1 << 18)))
_N, _T = 78, 84  # ord("N"), ord("T"): Fortran's trans arguments
# dtype -> ctypes function pointer; {None: None} once loading failed
_GEMM: dict[np.dtype | None, Any] = {}


def one_blas_thread():
    """Cap every BLAS library loaded in the process at one thread (``threadpoolctl``).

    Called when the backend loads and again once scipy's BLAS is loaded (:func:`gemm_for`): a
    library loaded after a cap keeps its own thread count. Why one thread, even for the small
    products ``np.matmul`` takes: OpenBLAS's workers spin after each call, and on two cores they
    hold the core a numba parallel loop needs next. A LeNet step (batch 16, every product small)
    took 11.9 ms at two threads with BLAS uncapped, 2.9 ms capped, 3.4 ms at one thread
    (``docs/developer/performance.md``, stop 40).
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


def _load():
    """scipy's ``sgemm``/``dgemm`` as ctypes function pointers; caps BLAS at one thread."""
    import scipy.linalg.cython_blas  # noqa: F401  (loads the BLAS library before the cap)

    from numba.extending import get_cython_function_address

    one_blas_thread()
    sig = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 13)  # Fortran: every argument by pointer
    return {
        np.dtype(dt): sig(get_cython_function_address("scipy.linalg.cython_blas", name))
        for dt, name in ((np.float32, "sgemm"), (np.float64, "dgemm"))
    }


def gemm_for(dtype):
    """The ``?gemm`` of scipy's BLAS for ``dtype`` (None for other dtypes, or when scipy or
    threadpoolctl is missing: the backend then multiplies through ``np.matmul``, with a warning
    once). The first call caps scipy's BLAS library at one thread, as the backend's load capped
    numpy's."""
    if not _GEMM:
        try:
            _GEMM.update(_load())
        except ImportError as exc:
            _GEMM[None] = None
            warnings.warn(
                f"torchlight numba backend: {exc}; float matmuls fall back to np.matmul, "
                "which competes with numba's threads for the cores "
                "(pip install scipy threadpoolctl)",
                RuntimeWarning,
                stacklevel=3,
            )
    return _GEMM.get(dtype)


def blas_strides(rows, cols, rs, cs):
    """Strides of a ``rows × cols`` matrix as BLAS can take them, or None when it cannot.

    BLAS wants one unit stride and the other at least the matching extent (its leading
    dimension). A size-1 dim's stride is meaningless (often 0 after a broadcast), so it is
    replaced by a valid one; broadcast (0) or negative strides on real dims give None.
    """
    if rows == 1:
        rs = cols if cs == 1 else 1  # one row: row-major (ld = cols) or column-major (ld = cs)
    if cols == 1:
        cs = 1 if rs != 1 else rows
    if cs == 1 and rs >= max(cols, 1):
        return rs, 1
    if rs == 1 and cs >= max(rows, 1):
        return 1, cs
    return None


@kernel
def gemm_kernel(
    gemm,
    a,
    abs_,
    ao,
    ars,
    acs,
    b,
    bbs,
    bo,
    brs,
    bcs,
    out,
    obs,
    oo,
    ors,
    bshape,
    nbatch,
    n,
    k,
    m,
    rparts,
    cparts,
):
    """``out[q, i, j] = Σ_t a[q, i, t] · b[q, t, j]``, one BLAS call per (batch entry, block).

    ``a``, ``b``, ``out`` are flat storages; each matrix has one unit stride (``blas_strides``),
    ``out``'s columns are unit-stride. Each batch entry's output is cut into ``rparts`` row
    blocks × ``cparts`` column blocks: a block of rows reads its rows of ``a`` and all of ``b``,
    a block of columns all of ``a`` and its columns of ``b``.
    """
    rstep = (n + rparts - 1) // rparts
    cstep = (m + cparts - 1) // cparts
    parts = rparts * cparts
    for t in prange(nbatch * parts):
        q = t // parts
        r = t - q * parts
        rlo = (r // cparts) * rstep
        clo = (r - (r // cparts) * cparts) * cstep
        rows = min(rstep, n - rlo)
        cols = min(cstep, m - clo)
        if rows <= 0 or cols <= 0:
            continue
        pa, pb, po = _batch3(q, bshape, abs_, bbs, obs)
        dims = np.empty(6, np.int32)  # Fortran takes every scalar by reference
        scal = np.empty(2, out.dtype)
        ops = np.empty(2, np.uint8)
        scal[0] = 1.0
        scal[1] = 0.0
        # Bᵀ (m × k, column-major): B's rows are its columns when B's columns are unit-stride
        ops[0] = _N if bcs == 1 else _T
        dims[3] = brs if bcs == 1 else bcs
        ops[1] = _N if acs == 1 else _T
        dims[4] = ars if acs == 1 else acs
        dims[0] = cols
        dims[1] = rows
        dims[2] = k
        dims[5] = ors
        gemm(
            ops[0:].ctypes,
            ops[1:].ctypes,
            dims[0:].ctypes,
            dims[1:].ctypes,
            dims[2:].ctypes,
            scal[0:].ctypes,
            b[bo + pb + clo * bcs :].ctypes,
            dims[3:].ctypes,
            a[ao + pa + rlo * ars :].ctypes,
            dims[4:].ctypes,
            scal[1:].ctypes,
            out[oo + po + rlo * ors + clo :].ctypes,
            dims[5:].ctypes,
        )


def _i64(t):
    return np.array(t, dtype=np.int64)


def _packed(array):
    """``(storage, offset, batch strides, matrix strides)`` of a C-contiguous numpy array."""
    st = tuple(s // array.itemsize for s in array.strides)
    return array.reshape(-1), 0, st[:-2], st[-2:]


def _operand(v, rows, cols):
    """A matmul operand as ``gemm_kernel`` takes it: the view's own storage when BLAS can read
    its matrices in place (``blas_strides``), else a packed copy."""
    st = blas_strides(rows, cols, *v.strides[-2:])
    if st is None:
        return _packed(np.ascontiguousarray(as_array(v)))
    return v.storage, v.offset, v.strides[:-2], st


def gemm(a, b, out, nbatch, n, k, m):
    """``out = a @ b`` for views with equal batch dims (``nbatch`` entries of ``n×k @ k×m``).

    One call per batch entry when there are at least as many entries as threads, else each
    entry's output is cut into blocks of rows or of columns; ``out`` needs unit-stride columns,
    else the product goes through a contiguous temporary."""
    (sa, oa, ba, (ars, acs)), (sb, ob, bb, (brs, bcs)) = _operand(a, n, k), _operand(b, k, m)
    st = blas_strides(n, m, *out.strides[-2:])
    tmp = None if st is not None and st[1] == 1 else np.empty(out.shape, out.storage.dtype)
    so, oo, bo, (ors, _) = (
        (out.storage, out.offset, out.strides[:-2], st) if tmp is None else _packed(tmp)
    )
    bshape, (abs_, bbs, obs) = coalesce(out.shape[:-2], (ba, bb, bo))
    run = gemm_kernel.pick(nbatch * n * k * m, SPLIT_MIN)
    rparts = cparts = 1
    if run is gemm_kernel.par:
        # blocks per batch entry, for one per thread, along the output's longer side (measured on
        # the GPT's and the MLP's products: the better of the two in all nine shapes, 5-10% apart)
        need = -(-get_num_threads() // nbatch)
        rparts, cparts = (min(n, need), 1) if n >= m else (1, min(m, need))
    run(
        gemm_for(out.storage.dtype),
        sa,
        _i64(abs_),
        oa,
        ars,
        acs,
        sb,
        _i64(bbs),
        ob,
        brs,
        bcs,
        so,
        _i64(obs),
        oo,
        ors,
        _i64(bshape),
        nbatch,
        n,
        k,
        m,
        rparts,
        cparts,
    )
    if tmp is not None:
        as_array(out)[...] = tmp
