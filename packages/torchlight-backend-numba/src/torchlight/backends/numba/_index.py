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

Bounds: an index outside ``[0, n)`` (``n`` the size of the indexed dimension) is never followed.
The kernel skips that element (gather writes 0 there) and records it in ``flag`` —
``torchlight.tensor.backend.bounds``' layout ``[hit, value, size, op]`` — which the backend
reads after the launch and turns into a ``TensorIndexError``. Racing threads may both record; each
writes a bad value, so whichever write lands names a real offender.
"""

import numpy as np

from numba import prange

from ._jit import helper, kernel

__all__ = ["gather_kernel", "scatter_add_kernel", "flag_index"]


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


@helper
def flag_index(flag, value, n):
    """Record an out-of-range index ``value`` for a dimension of size ``n`` (op code set by the caller)."""
    flag[1] = value
    flag[2] = n
    flag[0] = 1


@kernel
def gather_kernel(a, as_, ao, dim, n, idx, is_, io, out, os, oo, shape, nrows, flag):
    last = shape.size - 1
    L = shape[last]
    sa_last = as_[last] if last != dim else 0
    sa_dim = as_[dim]
    si = is_[last]
    so = os[last]
    for r in prange(nrows):
        pa, pi, po = _row3(r, shape, dim, as_, ao, is_, io, os, oo)
        if si == 0:  # one index for the whole row (take along a leading dim: embeddings)
            k = idx[pi]
            if k < 0 or k >= n:
                flag_index(flag, k, n)
                for j in range(L):
                    out[po + j * so] = 0
            else:  # a branch-free copy loop, as without the check
                src = pa + k * sa_dim
                for j in range(L):
                    out[po + j * so] = a[src + j * sa_last]
            continue
        for j in range(L):
            k = idx[pi + j * si]
            if k < 0 or k >= n:
                flag_index(flag, k, n)
                out[po + j * so] = 0
            else:
                out[po + j * so] = a[pa + j * sa_last + k * sa_dim]


@kernel
def scatter_add_kernel(out, os, oo, n, idx, is_, io, src, ss, so, shape, nrows, flag):
    """``dim`` is the last dim of ``shape`` (moved there by the caller)."""
    last = shape.size - 1
    L = shape[last]
    s_out_dim = os[last]
    si = is_[last]
    ssrc = ss[last]
    for r in prange(nrows):
        po, pi, ps = _row3(r, shape, last, os, oo, is_, io, ss, so)
        for j in range(L):
            k = idx[pi + j * si]
            if k < 0 or k >= n:
                flag_index(flag, k, n)
            else:
                out[po + k * s_out_dim] += src[ps + j * ssrc]
