"""Float matmul: single-threaded BLAS calls, one slice of the product per numba thread.

On a 2-core machine OpenBLAS's own threads and numba's ``prange`` workers cannot both run two
threads: OpenBLAS workers spin for a while after each call, and a numba parallel region started
in that window waits for a worker that is not scheduled (measured on the GPT step: 403 ms with
both pools at two threads, 144 ms with BLAS at one; ``docs/developer/performance.md``). So the
backend gives BLAS one thread (``OPENBLAS_NUM_THREADS=1``) and parallelises the product itself:
it is cut into as many slices as numba has threads — along the leading batch dim when it has at
least that many entries (attention's ``(B, H, T, T)`` products), else along the rows of the
output (a linear layer's ``(B·T, C) @ (C, 4C)``) — and each slice is one ``np.matmul`` on its
own Python thread. numpy releases the GIL inside BLAS, so the slices run in parallel, and
between calls the workers sleep on a queue instead of spinning.

Products below ``SPLIT_MIN`` multiply-adds (env ``TORCHLIGHT_NUMBA_MATMUL_SPLIT_MIN``, default
2^20) stay one call: a thread hand-off costs tens of microseconds.
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from numba import get_num_threads
from torchlight.tensor.backend.numpy import blas_operands

__all__ = ["SPLIT_MIN", "matmul"]

SPLIT_MIN = int(os.environ.get("TORCHLIGHT_NUMBA_MATMUL_SPLIT_MIN", str(1 << 20)))
_pools = {}


def _pool(workers):
    if workers not in _pools:
        _pools[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="torchlight-blas")
    return _pools[workers]


def _bounds(n, parts):
    step = -(-n // parts)
    return [(i, min(i + step, n)) for i in range(0, n, step)]


def matmul(x, y, o):
    """``o[...] = x @ y`` for numpy arrays whose batch dims are already equal."""
    x, y = blas_operands(x, y)
    threads = get_num_threads()
    if threads < 2 or o.size * x.shape[-1] < SPLIT_MIN:
        np.matmul(x, y, out=o)
        return
    if o.ndim > 2 and o.shape[0] >= threads:
        slices = [(x[a:b], y[a:b], o[a:b]) for a, b in _bounds(o.shape[0], threads)]
    elif o.shape[-2] >= threads:
        rows = _bounds(o.shape[-2], threads)
        slices = [(x[..., a:b, :], y, o[..., a:b, :]) for a, b in rows]
    else:
        np.matmul(x, y, out=o)
        return
    futures = [_pool(threads - 1).submit(np.matmul, xs, ys, out=os_) for xs, ys, os_ in slices[1:]]
    np.matmul(*slices[0][:2], out=slices[0][2])  # the calling thread takes the first slice
    for f in futures:
        f.result()
