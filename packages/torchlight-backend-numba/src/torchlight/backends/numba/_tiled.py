"""Elementwise ops over *tiles*: ``where`` and float32 arithmetic zips whose operands repeat.

Broadcasting usually repeats one contiguous block along the leading dims: a bias vector of C
values added to every row of an (N, C) matrix, a (T, T) causal mask broadcast over (batch, heads)
in ``masked_fill``. The strided kernels (``_elementwise``) walk such views element by element
with an odometer — ~0.9 ns per element for ``where``, a scalar loop. Here the output (contiguous)
is cut into rows of ``L`` elements and every operand is one of

    full:    its own contiguous copy of the output's layout, row r at r·L      (step = L)
    tile:    one contiguous block of L elements repeated along leading dims    (step = 0)
    scalar:  one value; ``backend.py`` turns it into a tile of L copies         (step = 0)

so row ``r`` of an operand is the slice ``[r·step, r·step + L)`` and each row is a unit-stride
loop over plain slices, which LLVM turns into SIMD code. The row length is the repeated block's
length when an operand repeats (every repeated operand must have the same one), else ``TILE``;
the last row may be shorter. ``prange`` runs over blocks of whole rows.

    where:  out = c ? a : b             (any dtype; c bool)
    zip:    out = a op b, op in + - × ÷ (float32; one float32 operation, as numpy rounds)
"""

import numpy as np

from numba import prange

from ._jit import helper, kernel

__all__ = ["TILE", "TILE_ZIP", "plan", "where_tiles", "zip_tiles"]

TILE = 4096  # row length when no operand repeats (only full operands and scalars)
BLOCK = 32768  # elements per prange step (whole rows)
TILE_ZIP = {"add": 0, "sub": 1, "mul": 2, "div": 3}


def _period(v):
    """``p`` when the view is one contiguous run of ``p`` elements repeated along its leading dims
    (stride 0 there): its size when contiguous, 1 for a broadcast scalar, 0 for anything else."""
    dims = [(sz, st) for sz, st in zip(v.shape, v.strides) if sz != 1]
    p = 1
    i = len(dims)
    while i and dims[i - 1][1] == p:
        p *= dims[i - 1][0]
        i -= 1
    return p if all(st == 0 for _, st in dims[:i]) else 0


def plan(views, n, need_repeat):
    """Row length and per view ``(array, step)`` for ``_tiled``'s kernels, or None when a
    view is neither full, a repeated tile nor a scalar, when two repeat with different lengths,
    when rows would be shorter than 16 (per-row overhead), or (``need_repeat``) when none repeats."""
    periods = [_period(v) for v in views]
    if not all(periods):
        return None
    repeats = {p for p in periods if 1 < p < n}
    if len(repeats) > 1 or (need_repeat and not repeats):
        return None
    rowlen = repeats.pop() if repeats else min(n, TILE)
    if rowlen < 16:
        return None
    out = []
    for v, p in zip(views, periods):
        st = v.storage
        if p == n:
            out.append((st[v.offset : v.offset + n], rowlen))
        elif p == 1:  # a scalar: a tile of rowlen copies (one small allocation)
            out.append((np.full(rowlen, st[v.offset], dtype=st.dtype), 0))
        else:
            out.append((st[v.offset : v.offset + rowlen], 0))
    return rowlen, out


@helper
def _where_rows(c, cstep, a, astep, b, bstep, out, r0, r1, L, n):
    for r in range(r0, r1):
        m = min(L, n - r * L)
        cr = c[r * cstep : r * cstep + m]
        ar = a[r * astep : r * astep + m]
        br = b[r * bstep : r * bstep + m]
        orow = out[r * L : r * L + m]
        for j in range(m):
            # both loads before the select: ``ar[j] if cr[j] else br[j]`` loads conditionally,
            # which LLVM may not speculate, so the loop kept its branch (4× slower, measured)
            x = ar[j]
            y = br[j]
            orow[j] = x if cr[j] else y


@kernel
def where_tiles(c, cstep, a, astep, b, bstep, out, L, n):
    """out[r·L + j] = a[r·astep + j] if c[r·cstep + j] else b[r·bstep + j]; steps are 0 or L."""
    nrows = (n + L - 1) // L
    per = max(1, BLOCK // L)
    for k in prange((nrows + per - 1) // per):
        _where_rows(c, cstep, a, astep, b, bstep, out, k * per, min(nrows, (k + 1) * per), L, n)


@helper
def _zip_rows(op, a, astep, b, bstep, out, r0, r1, L, n):
    for r in range(r0, r1):
        m = min(L, n - r * L)
        ar = a[r * astep : r * astep + m]
        br = b[r * bstep : r * bstep + m]
        orow = out[r * L : r * L + m]
        # one loop per op: the branch is taken once per row, and each loop is branch-free SIMD
        if op == 0:
            for j in range(m):
                orow[j] = ar[j] + br[j]
        elif op == 1:
            for j in range(m):
                orow[j] = ar[j] - br[j]
        elif op == 2:
            for j in range(m):
                orow[j] = ar[j] * br[j]
        else:
            for j in range(m):
                orow[j] = ar[j] / br[j]


@kernel
def zip_tiles(op, a, astep, b, bstep, out, L, n):
    """out[r·L + j] = a[r·astep + j] op b[r·bstep + j]; steps are 0 or L."""
    nrows = (n + L - 1) // L
    per = max(1, BLOCK // L)
    for k in prange((nrows + per - 1) // per):
        _zip_rows(op, a, astep, b, bstep, out, k * per, min(nrows, (k + 1) * per), L, n)
