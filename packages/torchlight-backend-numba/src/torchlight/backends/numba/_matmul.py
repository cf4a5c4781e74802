"""Batched matmul kernel over strided views: ``out[b, i, :] = Σ_t a[b, i, t] · b[b, t, :]``.

``prange`` runs over (batch, row) pairs; each row accumulates ``a[i, t] · b[t, :]`` into the
output row (the i-t-j order streams through ``b``'s rows). Batch dims are flattened by the
caller when possible and otherwise decomposed per row; stride-0 batch dims broadcast.

Float matmuls go to BLAS through ``np.matmul`` instead, at every size (see ``backend.py``: BLAS
is 10-50× faster than this loop at 512², and its call costs less than this kernel's launch on
tiny products too); this kernel serves integer dtypes and operands of mixed dtypes.
"""

import numpy as np

from numba import prange

from ._jit import helper, kernel

__all__ = ["matmul_kernel"]


@helper
def _batch3(q, bshape, s1, s2, s3):
    p1 = 0
    p2 = 0
    p3 = 0
    q = np.int64(q)
    for d in range(bshape.size - 1, -1, -1):
        i = q % bshape[d]
        q //= bshape[d]
        p1 += i * s1[d]
        p2 += i * s2[d]
        p3 += i * s3[d]
    return p1, p2, p3


@kernel
def matmul_kernel(
    a, abs_, ao, ars, acs, b, bbs, bo, brs, bcs, out, obs, oo, ors, ocs, bshape, nbatch, n, k, m
):
    for t in prange(nbatch * n):
        q = np.int64(t) // n
        i = t - q * n
        pa, pb, po = _batch3(q, bshape, abs_, bbs, obs)
        row_a = ao + pa + i * ars
        row_o = oo + po + i * ors
        for j in range(m):
            out[row_o + j * ocs] = 0
        for kk in range(k):
            av = a[row_a + kk * acs]
            row_b = bo + pb + kk * brs
            for j in range(m):
                out[row_o + j * ocs] += av * b[row_b + j * bcs]
