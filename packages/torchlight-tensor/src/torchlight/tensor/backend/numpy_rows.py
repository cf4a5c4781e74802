"""Sums and maxima over an array's last axis (its rows), in the numpy form fastest for its shape.

numpy reduces over the last axis one row at a time, with a call to its inner loop per row:
~50 ns a row for a maximum, ~25 for a sum, whatever the row's length. A softmax over attention
scores (rows of 9), a cross-entropy over a small vocabulary (rows of 15) or a layer norm over
16 features pays that on every row. Two forms avoid it:

- a **sum** is a product with a vector of ones, one BLAS call (gemv) for all rows;
- a **maximum** over **narrow** rows is a reduction over the first axis of the transposed copy,
  where numpy's inner loop runs along a whole column of values at once.

Both give what ``np.add.reduce`` / ``np.maximum.reduce`` give: the maximum exactly, the sum to
within the rounding of a float sum (the two add in different orders). Measured on one thread
(``timeit``, float32, µs, numpy's reduction / the other form, both forms at every shape):

=============  ==============  ==============
shape          sum             max
=============  ==============  ==============
(16, 27)       1.3 / 1.0       1.8 / 2.6
(144, 15)      4.2 / 1.3       8.0 / 3.1
(2304, 9)      44 / 5.7        99 / 11
(512, 65)      15 / 3.2        24 / 17
(64, 2048)     22 / 7.2        11 / 426
=============  ==============  ==============

The thresholds below choose between the two forms from such measurements.
"""

from functools import lru_cache

import numpy as np

__all__ = [
    "ROW_SUMS_BLAS",
    "NARROW_ROW",
    "MANY_ROWS",
    "ones_vector",
    "row_sums",
    "row_maxes",
    "lse_shift",
]

ROW_SUMS_BLAS = 512
"""From this many elements on, a float32/float64 array's sums over its last axis are a product
with ones: below it the product costs more to call than numpy's reduction takes."""

NARROW_ROW = 32
"""A maximum over the last axis takes the transposed copy when its rows hold at most this many
values (and there are :data:`MANY_ROWS` of them): wider, the copy costs more than it saves
((144, 64): 9.4 against 7.0 µs; (144, 128): 10.7 against 17.6)."""

MANY_ROWS = 64
"""... and when there are at least this many rows: with fewer, numpy's reduction costs as much
((16, 16): 1.7 µs either way)."""


@lru_cache(maxsize=64)
def ones_vector(n, dtype):
    """A read-only vector of ``n`` ones of ``dtype``, shared between calls: the right operand
    that turns a sum over rows (or, on the left, over columns) into one BLAS product."""
    ones = np.ones(n, dtype)
    ones.flags.writeable = False  # shared by every call
    return ones


def _last(x, axis):
    return axis == -1 or axis == x.ndim - 1


def row_sums(x, axis):
    """``np.add.reduce(x, axis, keepdims=True)``; over a float array's last axis from
    :data:`ROW_SUMS_BLAS` elements on, a product with ones."""
    if x.size >= ROW_SUMS_BLAS and _last(x, axis) and x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        return np.matmul(x, ones_vector(x.shape[-1], x.dtype))[..., None]
    return np.add.reduce(x, axis=axis, keepdims=True)


def row_maxes(x, axis):
    """``np.maximum.reduce(x, axis, keepdims=True)``; over the last axis of many narrow rows
    (:data:`NARROW_ROW`, :data:`MANY_ROWS`), a reduction of the transposed copy."""
    width = x.shape[-1] if x.ndim else 0
    if _last(x, axis) and 0 < width <= NARROW_ROW and x.size >= MANY_ROWS * width:
        columns = np.ascontiguousarray(x.reshape(-1, width).T)
        return np.maximum.reduce(columns, axis=0).reshape(x.shape[:-1] + (1,))
    return np.maximum.reduce(x, axis=axis, keepdims=True)


def lse_shift(x, axis=-1):
    """Each row's maximum along ``axis`` (kept, size 1), or 0 where that is ±inf (as PyTorch's
    logsumexp): the shift of ``logsumexp`` and of cross-entropy's rows."""
    m = row_maxes(x, axis)
    if not np.isfinite(m).all():
        m = np.where(np.isinf(m), 0, m).astype(x.dtype)
    return m
