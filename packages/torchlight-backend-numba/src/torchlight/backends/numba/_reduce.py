"""Reductions: ``sum``/``prod``/``max``/``min`` over any set of dims, ``argmax``/``argmin`` over one.

``backend.py`` splits the input's dims into *kept* dims (one output element each) and *reduced*
dims, coalescing each group, so the kernel sees ``(outer shape, outer strides)`` and
``(reduced shape, reduced strides)``. ``prange`` runs over output elements; each walks its
reduced elements row by row (a plain strided loop over the last reduced dim, carrying into the
others). When there are fewer outputs than threads — a full reduction, say — ``reduce_split``
cuts a 1-D reduction into chunks reduced in parallel into float64/int64 partials, and
``reduce_cols`` (a reduction over the rows of a matrix with contiguous columns, like a bias
gradient ``g.sum(dim=0)``) cuts the rows into chunks, each reduced with SIMD loops over the columns.

A contiguous reduced row is summed by ``_sum_contig`` (``_jit.sum_helper``: SIMD partial sums,
~4× the four scalar lanes used for strided rows). Floats accumulate ``sum``/``prod`` in float64
(a float32 sum of 10⁶ terms stays accurate); ``max``/``min`` propagate NaN like numpy;
``argmax``/``argmin`` return the first extreme.
"""

import numpy as np

from numba import njit, prange, types
from numba.extending import overload

from ._jit import JIT_OPTIONS, helper, kernel, sum_helper

__all__ = [
    "SUM",
    "PROD",
    "MAX",
    "MIN",
    "reduce_kernel",
    "reduce_split",
    "reduce_cols",
    "arg_kernel",
]

COL_CHUNK_ROWS = 128  # rows per partial result of reduce_cols (enough work per prange step)
COL_CHUNKS = 16  # at most this many partials: enough to balance threads, few to combine

SUM, PROD, MAX, MIN = 0, 1, 2, 3


def to_acc(v):
    """The accumulator type of an element: float64 for floats, int64 for ints and bools."""
    if isinstance(v, (float, np.floating)):
        return np.float64(v)
    return np.int64(v)


@overload(to_acc, jit_options=JIT_OPTIONS)
def _to_acc_ov(v):
    if isinstance(v, types.Float):
        return lambda v: np.float64(v)
    return lambda v: np.int64(v)


@helper
def _base(q, shape, s1, o1, s2, o2):
    """Positions in two operands of the ``q``-th element (C order) of ``shape``."""
    p1 = o1
    p2 = o2
    r = np.int64(q)
    for d in range(shape.size - 1, -1, -1):
        i = r % shape[d]
        r //= shape[d]
        p1 += i * s1[d]
        p2 += i * s2[d]
    return p1, p2


@sum_helper
def _sum_contig(x, p, n, acc):
    """acc + Σ x[p:p + n], accumulated in acc's type (float64 or int64) with SIMD partial sums."""
    v = x[p : p + n]
    for j in range(n):
        acc += v[j]
    return acc


@njit(inline="always", **JIT_OPTIONS)
def _next_row(idx, p, rshape, rxs):
    """The position of the next row: advance the odometer ``idx`` over the dims before the last
    (inlined: it runs once per row, and a call costs as much as a short row)."""
    d = rshape.size - 2
    while d >= 0:
        idx[d] += 1
        p += rxs[d]
        if idx[d] < rshape[d]:
            break
        p -= rshape[d] * rxs[d]
        idx[d] = 0
        d -= 1
    return p


@helper
def _reduce_one(op, x, p0, rshape, rxs, nred):
    nd = rshape.size
    last = nd - 1
    L = rshape[last]
    s = rxs[last]
    if op == SUM and nd == 1 and s == 1:  # one contiguous row: no odometer (its idx allocation
        return _sum_contig(x, p0 + 1, L - 1, to_acc(x[p0]))  # costs as much as a short row)
    idx = np.zeros(nd, np.int64)
    p = p0
    acc = to_acc(x[p0])
    j0 = 1
    for _row in range(nred // L):
        if op == SUM and s == 1:
            acc = _sum_contig(x, p + j0, L - j0, acc)
        elif op == SUM:  # four independent partial sums: no serial add-latency chain
            a1 = 0
            a2 = 0
            a3 = 0
            j = j0
            while j + 4 <= L:
                acc += x[p + j * s]
                a1 += x[p + (j + 1) * s]
                a2 += x[p + (j + 2) * s]
                a3 += x[p + (j + 3) * s]
                j += 4
            for jj in range(j, L):
                acc += x[p + jj * s]
            acc += (a1 + a2) + a3
        elif op == PROD:
            for j in range(j0, L):
                acc *= x[p + j * s]
        elif op == MAX:
            for j in range(j0, L):
                v = x[p + j * s]
                if v > acc or v != v:
                    acc = v
        else:
            for j in range(j0, L):
                v = x[p + j * s]
                if v < acc or v != v:
                    acc = v
        j0 = 0
        p = _next_row(idx, p, rshape, rxs)
    return acc


@kernel
def reduce_kernel(op, x, xo, oshape, oxs, out, oos, oo, rshape, rxs, nout, nred):
    for q in prange(nout):
        px, po = _base(q, oshape, oxs, xo, oos, oo)
        if nred == 0:
            out[po] = 1 if op == PROD else 0
        else:
            out[po] = _reduce_one(op, x, px, rshape, rxs, nred)


@kernel
def reduce_split(op, x, xo, oshape, oxs, partial, rlen, rstride, chunk):
    """``partial[q, c]`` = reduction of chunk ``c`` of output ``q``'s 1-D reduced range."""
    nout, nchunks = partial.shape
    one = np.ones(1, np.int64)
    zero = np.zeros(1, np.int64)
    for t in prange(nout * nchunks):
        q = np.int64(t) // nchunks
        c = t - q * nchunks
        px, _ = _base(q, oshape, oxs, xo, zero, 0)
        start = c * chunk
        n = min(chunk, rlen - start)
        shape1 = one * n
        stride1 = one * rstride
        partial[q, c] = _reduce_one(op, x, px + start * rstride, shape1, stride1, n)


@helper
def _arg_one(is_max, x, p0, n, s):
    best = x[p0]
    bi = 0
    if best != best:
        return 0
    for j in range(1, n):
        v = x[p0 + j * s]
        if v != v:
            return j
        if (v > best) if is_max else (v < best):
            best = v
            bi = j
    return bi


@kernel
def arg_kernel(is_max, x, xo, oshape, oxs, out, oos, oo, n, s, nout):
    for q in prange(nout):
        px, po = _base(q, oshape, oxs, xo, oos, oo)
        out[po] = _arg_one(is_max, x, px, n, s)


@helper
def _cols_chunk(op, x, xo, rstride, r0, r1, ncols, acc):
    """acc[j] = op over rows r0..r1-1 of column j. Rows are slices and the loops start at 0: with
    ``x[base + j]`` numba cannot prove the index non-negative, and its wraparound check on every
    access kept the loop scalar (~0.6 ns per value; these loops are SIMD)."""
    first = x[xo + r0 * rstride : xo + r0 * rstride + ncols]
    for j in range(ncols):
        acc[j] = to_acc(first[j])
    for r in range(r0 + 1, r1):
        row = x[xo + r * rstride : xo + r * rstride + ncols]
        if op == SUM:
            for j in range(ncols):
                acc[j] += row[j]
        elif op == PROD:
            for j in range(ncols):
                acc[j] *= row[j]
        elif op == MAX:
            for j in range(ncols):
                v = row[j]
                if v > acc[j] or v != v:
                    acc[j] = v
        else:
            for j in range(ncols):
                v = row[j]
                if v < acc[j] or v != v:
                    acc[j] = v


@kernel
def reduce_cols(op, x, xo, nrows, rstride, ncols, partial):
    """Reduce over the rows of a matrix whose columns are contiguous (``sum(dim=0)`` of a C
    array): ``partial[c]`` = reduction of chunk ``c`` of the rows, each row streamed once through
    SIMD loops over the columns. The chunking depends on ``nrows`` only (the caller's choice), so
    combining the partials in chunk order gives the same result for any thread count."""
    nchunks = partial.shape[0]
    per = (nrows + nchunks - 1) // nchunks
    for c in prange(nchunks):
        r0 = c * per
        r1 = min(nrows, r0 + per)
        if r0 < r1:
            _cols_chunk(op, x, xo, rstride, r0, r1, ncols, partial[c])
