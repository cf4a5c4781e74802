"""Reductions and their gradients.

``y = sum_{i in dims} x_i``: every reduced element gets the same gradient, ``dL/dx = dL/dy`` broadcast
back over the reduced dims — done with ``expand`` (stride 0), so no copy is made. ``max``/``min``
send the gradient to the winning element; ``amax``/``amin`` split it evenly among ties.
"""

import builtins
from collections import namedtuple

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from .. import dtypes
from ..base import TensorBase
from ..creation import filled
from ..dispatch import (
    alloc,
    filled_cached,
    map_op,
    normalize_dim,
    normalize_dims,
    reduce_op,
    scalar_like,
    view_of,
    where_op,
    zip_into,
    zip_op,
)
from ..errors import ShapeError
from ..storage import TensorData
from .pointwise import NonDifferentiable, float_operand

__all__ = [
    "Sum",
    "AMax",
    "MaxDim",
    "Prod",
    "LogSumExp",
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "prod",
    "argmax",
    "argmin",
    "var",
    "std",
    "logsumexp",
    "all",
    "any",
    "MinMax",
    "ROW_REDUCTIONS",
    "check_reduction",
    "reduce_rows",
    "rows_gradient",
]

MinMax = namedtuple("MinMax", ["values", "indices"])


def _dims(dim, ndim):
    """``normalize_dims`` plus PyTorch's rule that a 0-d tensor accepts dim 0 / -1 (a no-op)."""
    dims = normalize_dims(dim, ndim)
    return () if ndim == 0 else dims


def _kept_shape(shape, dims):
    return tuple(1 if d in dims else s for d, s in enumerate(shape))


def _unreduce(g, shape, dims):
    """Broadcast a reduced gradient back to the input shape (a stride-0 view)."""
    return g.reshape(_kept_shape(shape, dims)).expand(shape)


class Sum(Function):
    r"""Autograd function of :func:`sum`: backward broadcasts the gradient back over the reduced
    dimensions (:math:`\partial/\partial x_i \sum_j x_j = 1`).
    """

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims = x.shape, dims
        return reduce_op("sum", x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _unreduce(g, ctx.shape, ctx.dims), None, None


def sum(x, dim=None, keepdim=False, dtype=None):
    """Sum of ``x`` over ``dim`` (all dimensions when ``None``); the implementation behind
    :func:`torchlight.sum` and :meth:`Tensor.sum`.
    """
    if dtype is not None:
        x = x.to(dtype)
    elif x.dtype is dtypes.bool_:
        x = x.to(dtypes.int64)  # like PyTorch: summing booleans counts them
    dims = _dims(dim, x.ndim)
    if not dims and x.ndim:
        return x if keepdim else x.clone()
    return Sum.apply(x, dims, keepdim)


class Mean(Function):
    """``sum(x, dims) / (n - correction)`` with ``n`` counted from the input's shape inside forward
    (so a traced tape divides by the replayed count, not the traced one). var uses correction."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, correction):
        n = 1
        for d in dims:
            n *= x.shape[d]
        ctx.shape, ctx.dims = x.shape, dims
        ctx.divisor = None if (n == 0 and correction == 0) else builtins.max(n - correction, 0)
        return _over_count(reduce_op("sum", x, dims, keepdim), ctx.divisor)

    @staticmethod
    def backward(ctx, g):
        g = g * float("nan") if ctx.divisor is None else g / ctx.divisor
        return _unreduce(g, ctx.shape, ctx.dims), None, None, None


def _over_count(s, n):
    """The sum ``s`` divided in place by the count ``n``; ``None`` for no elements gives NaN (the
    mean of nothing, as PyTorch) without dividing by zero."""
    if n is None:
        return zip_op("mul", s, scalar_like(float("nan"), s))
    return zip_into("div", s, filled_cached((), n, s.dtype, s.backend, s))


ROW_REDUCTIONS = ("none", "sum", "mean")
"""What a per-row loss node (``cross_entropy_rows``, ``nll_rows``) may reduce its rows to."""


def check_reduction(name, reduction):
    """Raise unless ``reduction`` is one of :data:`ROW_REDUCTIONS` (``name``: the caller's)."""
    if reduction not in ROW_REDUCTIONS:
        raise ValueError(f"{name}: reduction must be one of {ROW_REDUCTIONS}, got {reduction!r}")


def reduce_rows(loss, reduction, weight=None):
    r"""A loss node's own reduction of its per-row losses ``loss`` (N,), run inside its forward
    (so the reduction is no node of its own, forward or backward).

    ``"none"`` keeps the rows; ``"sum"`` is :math:`\sum_i \ell_i`; ``"mean"`` is PyTorch's
    weighted mean :math:`\sum_i \ell_i / \sum_i w_i` for the rows' weights ``weight`` (``None``:
    weights of 1, so :math:`\sum_i \ell_i / N`; NaN for no rows, or a total weight of 0).
    Returns ``(value, total)``, ``total`` being the divisor (``None``, an int or a 0-d tensor)
    that :func:`rows_gradient` takes.
    """
    if reduction == "none":
        return loss, None
    s = reduce_op("sum", loss, (0,))
    if reduction == "sum":
        return s, None
    if weight is not None:
        total = reduce_op("sum", weight, (0,))
        return zip_into("div", s, total), total
    n = loss.shape[0] or None
    return _over_count(s, n), float("nan") if n is None else n


def rows_gradient(g, n, reduction, total, zeroes_dropped=False):
    """The gradient of the ``n`` rows of a loss that :func:`reduce_rows` reduced, from ``g``, the
    gradient of its result: ``g`` itself for ``"none"``, else ``g`` (``"sum"``) or ``g / total``
    (``"mean"``) broadcast to ``(n,)`` as a stride-0 view. Recorded under ``create_graph``.

    A total weight of 0 means every row was dropped (weight 0): their gradient is 0, as in
    PyTorch, so the divisor becomes 1 there rather than giving ``0 · ∞ = NaN`` — unless
    ``zeroes_dropped``: the caller's kernel writes exactly 0 on dropped rows whatever ``g``
    (cross-entropy's backward capability), and the two ops of that guard are saved."""
    if reduction == "none":
        return g
    if reduction == "mean":
        if isinstance(total, TensorBase) and not zeroes_dropped:
            total = total.where(total != 0, 1.0)
        g = g / total
    return g.expand(n)


class ReduceNoGrad(NonDifferentiable):
    """A reduction without a gradient: argmax/argmin (int64), all/any."""

    @staticmethod
    def forward(ctx, x, op, dims, keepdim, dtype):
        return reduce_op(op, x, dims, keepdim, dtype)


def mean(x, dim=None, keepdim=False):
    """Mean of ``x`` over ``dim``: ``sum / n``; the implementation behind :func:`torchlight.mean`."""
    x = float_operand(x)
    dims = _dims(dim, x.ndim)
    return Mean.apply(x, dims, keepdim, 0)


class AMax(Function):
    """max over dims; ties share the gradient equally."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, op):
        y = reduce_op(op, x, dims, True)
        ctx.save_for_backward(x, y)
        ctx.dims = dims
        return y if keepdim else y.reshape(tuple(s for d, s in enumerate(x.shape) if d not in dims))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        mask = (x == y).to(g.dtype)
        share = mask / mask.sum(ctx.dims, keepdim=True)
        return _unreduce(g, x.shape, ctx.dims) * share, None, None, None


def amax(x, dim=None, keepdim=False):
    """Largest value over ``dim`` (ties share the gradient); behind :func:`torchlight.amax`."""
    return AMax.apply(x, _dims(dim, x.ndim), keepdim, "max")


def amin(x, dim=None, keepdim=False):
    """Smallest value over ``dim`` (ties share the gradient); behind :func:`torchlight.amin`."""
    return AMax.apply(x, _dims(dim, x.ndim), keepdim, "min")


class MaxDim(Function):
    """Values of max/min along one dim (``op``); the gradient goes to the index that won."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, indices, op):
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        ctx.save_for_backward(indices)
        return reduce_op(op, x, (dim,), keepdim)

    @staticmethod
    def backward(ctx, g):
        (indices,) = ctx.saved_tensors
        if not ctx.keepdim:
            g, indices = g.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
        out = filled(ctx.shape, 0, g.dtype, g.backend, like=g)
        return out.scatter_add(ctx.dim, indices, g), None, None, None, None


def _maxmin(x, dim, keepdim, op):
    if dim is None:
        return AMax.apply(x, _dims(None, x.ndim), False, op)
    d = normalize_dim(dim, x.ndim) if x.ndim else 0
    if x.ndim == 0:
        return MinMax(x.clone(), _zeros_index(x))
    indices = ReduceNoGrad.apply(x, "arg" + op, (d,), keepdim, dtypes.int64)
    return MinMax(MaxDim.apply(x, d, keepdim, indices, op), indices)


def _zeros_index(x):
    return filled((), 0, dtypes.int64, x.backend, like=x)


def max(x, dim=None, keepdim=False):
    """``x.max()`` → the largest value; ``x.max(dim)`` → ``(values, indices)`` like PyTorch."""
    return _maxmin(x, dim, keepdim, "max")


def min(x, dim=None, keepdim=False):
    """Smallest element, or ``(values, indices)`` along ``dim``; behind :func:`torchlight.min`."""
    return _maxmin(x, dim, keepdim, "min")


def _arg(x, dim, keepdim, op):
    if dim is None:
        flat = x.reshape(-1)
        if flat.shape[0] == 0:
            raise ShapeError(f"{op}: cannot take the {op} of an empty tensor")
        r = ReduceNoGrad.apply(flat, op, (0,), False, dtypes.int64)
        return r.reshape((1,) * x.ndim) if keepdim else r
    return ReduceNoGrad.apply(x, op, (normalize_dim(dim, x.ndim),), keepdim, dtypes.int64)


def argmax(x, dim=None, keepdim=False):
    """Index of the largest element (flattened, or along ``dim``); behind :func:`torchlight.argmax`."""
    return _arg(x, dim, keepdim, "argmax")


def argmin(x, dim=None, keepdim=False):
    """Index of the smallest element (flattened, or along ``dim``); behind :func:`torchlight.argmin`."""
    return _arg(x, dim, keepdim, "argmin")


class Prod(Function):
    """Product; d/dx_i = prod_{j != i} x_j, computed without dividing by zero."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        y = reduce_op("prod", x, dims, True)
        ctx.save_for_backward(x, y)
        ctx.dims = dims
        return y if keepdim else y.reshape(tuple(s for d, s in enumerate(x.shape) if d not in dims))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        dims = ctx.dims
        if GradMode.enabled:  # create_graph: y as a recorded op of x (the saved one is a constant)
            y = Prod.apply(x, dims, True)
        is_zero = x == 0
        nonzero = x.masked_fill(is_zero, 1.0)
        prod_nonzero = nonzero.prod(dims, keepdim=True)
        zeros = is_zero.sum(dims, keepdim=True)
        # no zero in the slice: y / x ; exactly one zero: the product of the others at that zero
        others = y / nonzero
        grad = others.where(zeros == 0, prod_nonzero.where(is_zero & (zeros == 1), 0.0))
        return _unreduce(g, x.shape, dims) * grad, None, None


def prod(x, dim=None, keepdim=False):
    """Product over ``dim``; behind :func:`torchlight.prod`."""
    return Prod.apply(
        float_operand(x) if x.dtype is dtypes.bool_ else x, _dims(dim, x.ndim), keepdim
    )


def var(x, dim=None, unbiased=True, keepdim=False, correction=None):
    """Variance with Bessel's correction by default: sum((x - mean)^2) / (n - correction)."""
    x = float_operand(x)
    dims = _dims(dim, x.ndim)
    c = (1 if unbiased else 0) if correction is None else correction
    diff = x - mean(x, dims, keepdim=True)
    return Mean.apply(diff * diff, dims, keepdim, c)


def std(x, dim=None, unbiased=True, keepdim=False, correction=None):
    r""":math:`\sqrt{\operatorname{var}}` over ``dim``; behind :func:`torchlight.std`."""
    return var(x, dim, unbiased, keepdim, correction).sqrt()


class LogSumExp(Function):
    r"""Autograd function of :func:`logsumexp`:
    :math:`y = m + \log\sum_i e^{x_i - m}` over the reduced dims, with :math:`m = \max_i x_i`
    (so no exponential overflows) or 0 where that max is ±inf (a slice of -inf gives -inf, one
    holding +inf gives +inf, as in PyTorch, where ``inf - inf`` would give NaN). One dim on a
    backend with the ``logsumexp`` capability is one call; otherwise the composite of max, exp,
    sum and log. Backward: :math:`\partial y/\partial x_i = e^{x_i - y}`, the softmax over the
    reduced dims; under ``create_graph`` it is written with tensor ops on the saved output, so a
    second derivative follows it.
    """

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.dims, ctx.keepdim = dims, keepdim
        if len(dims) == 1 and "logsumexp" in x.backend.capabilities and x.shape[dims[0]]:
            y = alloc(_kept_shape(x.shape, dims), x.dtype, x.backend, x)
            x.backend.logsumexp(x._td, dims[0], y._td)
        else:
            m = reduce_op("max", x, dims, True)
            inf, zero = (filled_cached((), v, m.dtype, m.backend, m) for v in (float("inf"), 0.0))
            m = where_op(zip_op("eq", map_op("abs", m), inf, dtypes.bool_), zero, m)
            s = reduce_op("sum", map_op("exp", zip_op("sub", x, m)), dims, True)
            y = zip_into("add", map_op("log", s), m)
        if not keepdim:
            y._td = TensorData(
                y._td.storage, tuple(n for d, n in enumerate(x.shape) if d not in dims)
            )
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if GradMode.enabled or len(ctx.dims) != 1:
            kept = _kept_shape(x.shape, ctx.dims)
            return g.reshape(kept) * (x - y.reshape(kept)).exp(), None, None
        if not ctx.keepdim:  # nothing to record: three backend calls on the kept-dim views
            d = ctx.dims[0]
            g, y = view_of(g, g._td.unsqueeze(d)), view_of(y, y._td.unsqueeze(d))
        e = zip_op("sub", x, y)
        e.backend.map("exp", e._td, e._td)  # in place: nothing else holds e
        return zip_into("mul", e, g), None, None


def logsumexp(x, dim=None, keepdim=False):
    """log(sum(exp(x))) over ``dim``, computed as m + log(sum(exp(x - m))) with m = max(x)."""
    x = float_operand(x)
    return LogSumExp.apply(x, _dims(dim, x.ndim), keepdim)


def _truth(x, dim, keepdim, op, empty):
    """``all`` (``op`` "min") or ``any`` ("max") of ``x`` as bools over ``dim``; ``empty`` is the
    answer over no elements (True for all, False for any: their identities, as PyTorch)."""
    b = x.to(dtypes.bool_)
    dims = _dims(dim, x.ndim)
    if 0 in [x.shape[d] for d in dims]:
        shape = (
            _kept_shape(x.shape, dims)
            if keepdim
            else tuple(s for d, s in enumerate(x.shape) if d not in dims)
        )
        return filled(shape, empty, dtypes.bool_, b.backend, like=b)
    return ReduceNoGrad.apply(b, op, dims, keepdim, None)


def all(x, dim=None, keepdim=False):
    """``True`` where every element over ``dim`` is non-zero (a ``bool`` tensor, no gradient;
    ``True`` over no elements)."""
    return _truth(x, dim, keepdim, "min", True)


def any(x, dim=None, keepdim=False):
    """``True`` where some element over ``dim`` is non-zero (a ``bool`` tensor, no gradient;
    ``False`` over no elements)."""
    return _truth(x, dim, keepdim, "max", False)
