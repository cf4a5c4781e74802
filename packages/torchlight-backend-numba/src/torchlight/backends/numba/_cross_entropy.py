"""Fused cross-entropy over the rows of an ``(N, C)`` logit matrix, forward and backward.

The forward runs ``prange`` over chunks of rows (so the scratch lanes of ``row_sumexp`` are
allocated once per chunk), the backward over rows. With ``m = max_c x[i,c]`` (NaN if the row has one)::

    logs[i] = log Σ_c e^(x[i,c] - m)                         (Σ accumulated in float64)
    loss[i] = w[i] ((m - x[i, t[i]]) + logs[i])              (0 exactly where w[i] == 0)
    dx[i,c] = g[i] w[i] (e^((x[i,c] - m) - logs[i]) - [c == t[i]])   (0 exactly where w[i] == 0)

Subtracting ``m`` (0 when it is infinite: ``_shift``) keeps every exponent ≤ 0, so rows of ±1e4 neither overflow nor lose the
log. The forward saves ``logs``, not ``lse = m + logs``: near the float32 limit (logits ~3e38)
``lse`` rounds to ``m`` and both the loss and the softmax in the backward would lose ``logs``
entirely (loss 0 instead of log C); the backward recomputes ``m``, one cheap max pass. float32
exponentials use the vectorisable ``exp_nonpos``. The one-hot term is applied to
the target element after the row loop, so the loop itself is branch-free (SIMD). Compared with
``nll_loss(log_softmax(x))`` this reads the logits once per pass and never materialises the
``(N, C)`` log-probabilities in the forward.

A target outside ``[0, C)`` on a row of nonzero weight is never followed: the row's loss is NaN, its
gradient row holds the softmax without the one-hot term, and ``flag`` records the target
(``_index.flag_index``) for the backend to raise after the launch.

Arguments are storages plus element strides/offsets: ``x`` has a row stride ``xr`` and a column
stride ``xc`` (transposed, sliced, offset), the ``(N,)`` operands one
stride each.
"""

import math

import numpy as np

from numba import prange

from ._fastexp import exp_nonpos
from ._index import flag_index
from ._jit import helper, kernel
from ._rowops import LANES, row_max, row_max_strided, row_sumexp

__all__ = ["cross_entropy_rows", "cross_entropy_backward_rows"]


@helper
def _shift(m):
    """The row's shift: its max, or 0 when that is ±inf (as PyTorch's logsumexp), so a row holding
    +inf has lse = +inf (its loss inf, or NaN at the inf target, as in PyTorch) and a row of -inf
    has lse = -inf. A float32 zero keeps a float32 row's arithmetic in float32."""
    if math.isinf(m):
        m = np.float32(0.0)
    return m


@helper
def _ce_row(x, p, xc, target, wi, C, acc, flag):
    """(logs, loss) of the row at x[p::xc]."""
    m = row_max(x, p, C) if xc == 1 else row_max_strided(x, p, xc, C)
    if math.isinf(m):  # lse is ±inf itself; with shift 0 the loss is inf or NaN, as in PyTorch
        logs = np.float64(m)
        m = _shift(m)
    else:
        if xc == 1:
            total = row_sumexp(x, p, m, C, acc)
        else:
            total = 0.0
            for j in range(C):
                total += exp_nonpos(x[p + j * xc] - m)
        logs = math.log(total)
    if wi == 0:
        return logs, 0.0
    if target < 0 or target >= C:
        flag_index(flag, target, C)
        return logs, math.nan
    # float64 in plain Python too (float32 + float stays float32)
    return logs, wi * (np.float64(m - x[p + target * xc]) + logs)


@kernel
def cross_entropy_rows(
    x, xo, xr, xc, t, to, ts, w, wo, ws, loss, lo, ls, logs, eo, es, n, C, nchunks, flag
):
    per = (n + nchunks - 1) // nchunks
    for c in prange(nchunks):
        acc = np.empty(LANES)  # row_sumexp's lanes: one allocation per chunk of rows, not per row
        for i in range(c * per, min(n, (c + 1) * per)):
            le, li = _ce_row(x, xo + i * xr, xc, t[to + i * ts], w[wo + i * ws], C, acc, flag)
            logs[eo + i * es] = le
            loss[lo + i * ls] = li


@kernel
def cross_entropy_backward_rows(
    x, xo, xr, xc, t, to, ts, w, wo, ws, logs, eo, es, g, go, gs, dx, do, dr, dc, n, C, flag
):
    for i in prange(n):
        p = xo + i * xr
        q = do + i * dr
        wi = w[wo + i * ws]
        if wi == 0:
            for j in range(C):
                dx[q + j * dc] = 0.0
            continue
        s = g[go + i * gs] * wi
        le = logs[eo + i * es]
        if xc == 1 and dc == 1:
            m = _shift(row_max(x, p, C))
            row = x[p : p + C]
            out = dx[q : q + C]
            for j in range(C):
                out[j] = s * exp_nonpos((row[j] - m) - le)
        else:
            m = _shift(row_max_strided(x, p, xc, C))
            for j in range(C):
                dx[q + j * dc] = s * exp_nonpos((x[p + j * xc] - m) - le)
        k = t[to + i * ts]
        if k < 0 or k >= C:
            flag_index(flag, k, C)
        else:
            dx[q + k * dc] = s * (exp_nonpos((x[p + k * xc] - m) - le) - 1.0)
