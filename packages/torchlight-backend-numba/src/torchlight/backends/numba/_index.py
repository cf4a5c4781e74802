"""Indexing kernels: one *gather* kernel (``take``, ``gather``) and one *scatter-add* kernel
(``put_add``, ``scatter_add``).

Both iterate over an iteration shape ``S`` with three strided operands. ``take`` is ``gather``
whose index view has stride 0 everywhere except along ``dim`` (``backend.py`` builds that view),
and ``put_add`` is ``scatter_add`` likewise, so each pair shares its kernel.

gather: ``out[i] = a[i with i[dim] := index[i]]``. ``prange`` runs over rows (all dims but the
last), each row a strided loop.

scatter-add: ``out[i with i[dim] := index[i]] += src[i]``. Two elements can hit the same output
only if they differ in ``dim`` alone, so ``backend.py`` moves ``dim`` last and ``prange`` runs
over rows: each output row is owned by one thread and repeated indices accumulate without races.
"""

import numpy as np

from numba import prange

from ._jit import helper, kernel

__all__ = ["gather_kernel", "scatter_add_kernel"]


@helper
def _row3(r, shape, dim, s1, o1, s2, o2, s3, o3):
    """Positions of row ``r`` (C order over ``shape[:-1]``) in three operands; operand 1
    (the indexed one) gets no contribution from ``dim``."""
    p1 = o1
    p2 = o2
    p3 = o3
    r = np.int64(r)
    for d in range(shape.size - 2, -1, -1):
        i = r % shape[d]
        r //= shape[d]
        if d != dim:
            p1 += i * s1[d]
        p2 += i * s2[d]
        p3 += i * s3[d]
    return p1, p2, p3


@kernel
def gather_kernel(a, as_, ao, dim, idx, is_, io, out, os, oo, shape, nrows):
    last = shape.size - 1
    L = shape[last]
    sa_last = as_[last] if last != dim else 0
    sa_dim = as_[dim]
    si = is_[last]
    so = os[last]
    for r in prange(nrows):
        pa, pi, po = _row3(r, shape, dim, as_, ao, is_, io, os, oo)
        for j in range(L):
            out[po + j * so] = a[pa + j * sa_last + idx[pi + j * si] * sa_dim]


@kernel
def scatter_add_kernel(out, os, oo, idx, is_, io, src, ss, so, shape, nrows):
    """``dim`` is the last dim of ``shape`` (moved there by the caller)."""
    last = shape.size - 1
    L = shape[last]
    s_out_dim = os[last]
    si = is_[last]
    ssrc = ss[last]
    for r in prange(nrows):
        po, pi, ps = _row3(r, shape, last, os, oo, is_, io, ss, so)
        for j in range(L):
            out[po + idx[pi + j * si] * s_out_dim] += src[ps + j * ssrc]
