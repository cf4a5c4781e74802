"""Gathering along one dim, and its adjoint: ``index_select``, ``gather``, ``scatter_add``,
``scatter``, ``embedding``, and the negative log-likelihood of rows, ``nll_rows``.

Each takes an int64 index tensor whose values must lie in ``[0, size)`` (checked in ``forward``,
so a ``tl.jit`` replay checks them too). The gradient of a gather *adds* the incoming gradient
back at the gathered positions (:class:`AddAtIndex`): a position gathered twice receives both
gradients, which is why an embedding's repeated tokens accumulate.
"""

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from .. import dtypes
from ..backend.protocol import NLL
from ..base import TensorBase
from ..creation import filled
from ..dispatch import (
    alloc,
    first_outside,
    map_op,
    normalize_dim,
    reduce_op,
    same_backend,
    scalar_like,
    view_of,
    zip_into,
    zip_op,
)
from ..errors import DTypeError, ShapeError, TensorIndexError
from .reductions import check_reduction, reduce_rows, rows_gradient
from .weight_gradients import RowsGradient

__all__ = [
    "check_index",
    "AddAtIndex",
    "add_at_index",
    "IndexSelect",
    "Gather",
    "Embedding",
    "NLLRows",
    "ScatterAdd",
    "index_select",
    "gather",
    "nll_rows",
    "scatter_add",
    "scatter",
    "embedding",
]


def check_index(index, size, what="index"):
    """Integer index tensor of ``index_select``/``gather``/``scatter_add``: int64, values within
    ``[0, size)``. As in PyTorch these take no negative indices (``x[idx]`` does: it wraps them
    itself); a negative one would otherwise read from the end without a word."""
    if index.dtype is not dtypes.int64:
        raise DTypeError(
            f"{what}: indices must be an int64 tensor, got {index.dtype} "
            "(use .long() to convert; boolean masks index with x[mask])"
        )
    if index.numel():
        bad = first_outside(index, size)  # no device read when the bounds are on record
        if bad is not None:
            hint = " (negative indices are not accepted here: add the size to count from the end)"
            raise TensorIndexError(
                f"{what}: index {bad} is out of range for a dimension of size {size}"
                + (hint if bad < 0 else "")
            )
    return index


class AddAtIndex(Function):
    """The adjoint of a gathering op: ``g`` added into zeros of ``shape`` at ``index`` along
    ``dim`` by the backend primitive ``put`` (``"put_add"``, the adjoint of ``index_select``;
    ``"scatter_add"``, of ``gather``). A Function of its own so that a gradient taken with
    ``create_graph=True`` stays differentiable: its backward gathers again."""

    @staticmethod
    def forward(ctx, g, shape, dim, index, put):
        ctx.dim, ctx.put = dim, put
        ctx.save_for_backward(index)
        return _added_into_zeros(g, shape, dim, index, put)

    @staticmethod
    def backward(ctx, gg):
        (index,) = ctx.saved_tensors
        gather = IndexSelect if ctx.put == "put_add" else Gather
        return gather.apply(gg, ctx.dim, index), None, None, None, None


def _added_into_zeros(g, shape, dim, index, put):
    out = filled(shape, 0, g.dtype, g.backend, like=g)
    getattr(g.backend, put)(out._td, dim, index._td, g._td)
    return out


def add_at_index(g, shape, dim, index, put):
    """:class:`AddAtIndex` as a gathering op's backward calls it: a recorded node under
    ``create_graph``; otherwise ``apply`` runs its forward alone (nothing records it)."""
    return AddAtIndex.apply(g, shape, dim, index, put)


class _Gathering(Function):
    """A gathering op along ``dim``: the index is validated in ``forward`` (which eager calls
    and ``tl.jit`` replays both run), the backend's ``primitive`` reads, and backward adds the
    gradient back with its ``adjoint`` (see :func:`add_at_index`)."""

    name = primitive = adjoint = ""

    @staticmethod
    def out_shape(x, dim, index):
        """The result's shape, after checking ``index``'s shape against ``x``."""
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, x, dim, index):
        shape = cls.out_shape(x, dim, index)
        same_backend(x, index)
        index = check_index(index, x.shape[dim], cls.name)
        ctx.shape, ctx.dim = x.shape, dim
        ctx.save_for_backward(index)
        out = alloc(shape, x.dtype, x.backend, x)
        getattr(x.backend, cls.primitive)(x._td, dim, index._td, out._td)
        return out

    @classmethod
    def backward(cls, ctx, g):
        (index,) = ctx.saved_tensors
        return add_at_index(g, ctx.shape, ctx.dim, index, cls.adjoint), None, None


class IndexSelect(_Gathering):
    """``x.index_select(dim, index)``: whole slices along ``dim`` (backend ``take``; backward
    ``put_add``)."""

    name, primitive, adjoint = "index_select", "take", "put_add"

    @staticmethod
    def out_shape(x, dim, index):
        if index.ndim != 1:
            raise ShapeError(f"index_select: index must be 1-D, got shape {index.shape}")
        return x.shape[:dim] + (index.shape[0],) + x.shape[dim + 1 :]


def index_select(x, dim, index):
    """The slices of ``x`` at ``index`` along ``dim``; behind :func:`torchlight.index_select`."""
    return IndexSelect.apply(x, normalize_dim(dim, x.ndim), index)


class Gather(_Gathering):
    """Autograd function of :func:`gather`: one element per index position (backend
    ``gather``; backward ``scatter_add``)."""

    name, primitive, adjoint = "gather", "gather", "scatter_add"

    @staticmethod
    def out_shape(x, dim, index):
        _check_gather_shapes("gather", x, dim, index)
        return index.shape


def _check_gather_shapes(name, x, dim, index):
    if index.ndim != x.ndim:
        raise ShapeError(
            f"{name}: index must have as many dims as the input ({x.ndim}), got shape {index.shape}"
        )
    for d in range(x.ndim):
        if d != dim and index.shape[d] > x.shape[d]:
            raise ShapeError(
                f"{name}: index shape {index.shape} exceeds input shape {x.shape} at dim {d}"
            )


def gather(x, dim, index):
    """``out[i][j] = x[i][index[i][j]]`` (for dim=1): PyTorch's gather."""
    return Gather.apply(x, normalize_dim(dim, x.ndim), index)


class NLLRows(Function):
    r"""Autograd function of :func:`nll_rows`: ``ℓ_i = -w_i x[i, t_i]``. Its gradient is
    :math:`\partial \ell_i / \partial x_{i c} = -w_i [c = t_i]`: ``-g_i w_i`` added at ``(i, t_i)``
    into zeros (:func:`add_at_index`, so it stays differentiable under ``create_graph``).

    Without weights a ``"sum"`` or ``"mean"`` is :math:`-(\sum_i x_{i t_i}) / N`: one negation
    of the sum instead of one per row, the same numbers (a negation is exact, and a sum of
    negated terms is the negated sum), and every row's gradient is the one value
    :math:`-g/N`. A backend with the ``nll`` capability computes that forward in one call
    (the pick, the sum and the division by ``-N`` or ``-1``); otherwise it is a gather, a sum
    and a division."""

    @staticmethod
    def forward(ctx, x, target, weight, reduction):
        n, c = x.shape
        check_index(target, c, "nll_loss")
        be = x.backend
        ctx.shape, ctx.reduction = x.shape, reduction
        ctx.save_for_backward(target)
        ctx.weight = weight  # detached, or None for weights of 1
        one_value = _one_value_per_row(ctx)
        ctx.total = n if one_value and reduction == "mean" else None
        if one_value and NLL in be.capabilities:  # the sum and its division in one call
            out = alloc((), x.dtype, be, x)
            be.nll(x._td, target._td, out._td, -1.0 if ctx.total is None else -float(n))
            return out
        picked = alloc((n,), x.dtype, be, x)
        be.gather(x._td, 1, target._td.reshaped((n, 1)), picked._td.reshaped((n, 1)))
        if one_value:
            out = reduce_op("sum", picked, (0,))
            if reduction == "mean":
                return zip_into("div", out, scalar_like(-n, out))
            be.map("neg", out._td, out._td)
            return out
        be.map("neg", picked._td, picked._td)  # in place: nothing else has seen it
        if weight is not None:
            zip_into("mul", picked, weight)
        out, ctx.total = reduce_rows(picked, reduction, weight)
        return out

    @staticmethod
    def backward(ctx, g):
        (target,) = ctx.saved_tensors
        column = target._td.reshaped((ctx.shape[0], 1))  # (N, 1): the class of each row
        if not GradMode.enabled and not isinstance(ctx.total, TensorBase):
            return _nll_gradient(g, ctx, column), None, None, None
        index = view_of(target, column)
        g = rows_gradient(g, ctx.shape[0], ctx.reduction, ctx.total)
        src = -g if ctx.weight is None else -(g * ctx.weight)
        grad = add_at_index(src.unsqueeze(1), ctx.shape, 1, index, "scatter_add")
        return grad, None, None, None


def _one_value_per_row(ctx):
    """Whether every row of an :class:`NLLRows` shares one weight and one gradient: no weights,
    and some rows summed or averaged (no rows take the general path: their mean is NaN and
    their sum +0, where a negated empty sum would be -0)."""
    return ctx.weight is None and ctx.reduction != "none" and ctx.shape[0] > 0


def _nll_gradient(g, ctx, column):
    """:class:`NLLRows`' gradient with nothing to record (no ``create_graph``) and a divisor that
    is a number (no weighted mean): the same arithmetic as the recorded path, in the same order
    (``g / total``, times the weights, negated, scattered into zeros), as backend calls on one
    ``(N, 1)`` buffer instead of five ops; without weights, on the one value ``-g / N`` (or
    ``-g``) that every row receives (``g / -N`` is ``-(g / N)`` exactly)."""
    n, c = ctx.shape
    be = g.backend
    if _one_value_per_row(ctx):
        if ctx.reduction == "mean":
            value = zip_op("div", g, scalar_like(-ctx.total, g))
        else:
            value = map_op("neg", g)
        src = value._td.expand((n, 1))
    else:
        buffer = alloc((n, 1), g.dtype, be, g)
        rows = g._td.reshaped((n, 1)) if ctx.reduction == "none" else g._td.expand((n, 1))
        be.map("copy", rows, buffer._td)
        if ctx.reduction == "mean":
            zip_into("div", buffer, scalar_like(ctx.total, buffer))
        if ctx.weight is not None:
            zip_into("mul", buffer, view_of(ctx.weight, ctx.weight._td.reshaped((n, 1))))
        be.map("neg", buffer._td, buffer._td)
        src = buffer._td
    out = filled(ctx.shape, 0, g.dtype, be, like=g)
    be.scatter_add(out._td, 1, column, src)
    return out


def nll_rows(x, target, weight=None, reduction="none"):
    """Negative log-likelihoods ``-w_i x[i, t_i]`` of the rows of log-probabilities ``x`` (N, C),
    reduced by ``reduction`` inside the same node: the kernel under
    ``torchlight.nn.functional.nll_loss``, which validates targets (``target``: int64 (N,), in
    ``[0, C)``). ``weight``: detached (N,) per-row weights of ``x``'s dtype, or ``None`` for
    weights of 1. ``reduction``: ``"none"`` (the N values), ``"sum"``, or ``"mean"`` (PyTorch's
    weighted mean ``Σ ℓ_i / Σ w_i``, see
    :func:`~torchlight.tensor.functions.reductions.reduce_rows`).

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.gathering import nll_rows
    >>> nll_rows(tl.tensor([[-1.0, -2.0], [-3.0, -4.0]]), tl.tensor([1, 0])).tolist()
    [2.0, 3.0]
    >>> nll_rows(tl.tensor([[-1.0, -2.0], [-3.0, -4.0]]), tl.tensor([1, 0]), reduction="mean").item()
    2.5
    """
    n = target.shape[0] if target.ndim == 1 else -1
    if x.ndim != 2 or n != x.shape[0] or (weight is not None and weight.shape != (n,)):
        raise ShapeError(
            f"nll_rows: need x (N, C), target (N,) and weight (N,) or None; got {x.shape}, "
            f"{target.shape}, {None if weight is None else weight.shape}"
        )
    check_reduction("nll_rows", reduction)
    same_backend(x, target)
    return NLLRows.apply(x, target, weight, reduction)


class ScatterAdd(Function):
    """Autograd function of :func:`scatter_add`: the gradient of ``x`` passes through, that of ``src``
    is gathered at ``index``.
    """

    @staticmethod
    def forward(ctx, x, dim, index, src):
        _check_gather_shapes("scatter_add", x, dim, index)
        if src.ndim != index.ndim or any(i > n for i, n in zip(index.shape, src.shape)):
            raise ShapeError(
                f"scatter_add: src of shape {src.shape} must be at least as large as the "
                f"index {index.shape} in every dim"
            )
        same_backend(x, index)
        same_backend(x, src)
        index = check_index(index, x.shape[dim], "scatter_add")
        ctx.dim = dim
        ctx.save_for_backward(index)
        ctx.src_shape = src.shape
        out = x.clone()
        x.backend.scatter_add(out._td, dim, index._td, src._td)
        return out

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        gsrc = None
        if ctx.needs_input_grad[3]:
            gsrc = g.gather(ctx.dim, index)
            if gsrc.shape != ctx.src_shape:
                full = filled(ctx.src_shape, 0, g.dtype, g.backend, like=g)
                full[tuple(slice(0, n) for n in index.shape)] = gsrc
                gsrc = full
        return g, None, None, gsrc


def scatter_add(x, dim, index, src):
    """``x`` with ``src`` added at ``index`` along ``dim``; behind :func:`torchlight.scatter_add`."""
    dim = normalize_dim(dim, x.ndim)
    same_backend(x, src)
    if src.dtype is not x.dtype:
        src = src.to(x.dtype)
    return ScatterAdd.apply(x, dim, index, src)


def scatter(x, dim, index, src):
    """``x`` with ``out[i][index[i][j]] = src[i][j]`` (for dim=1): PyTorch's ``scatter``.

    ``src`` is a tensor (as large as ``index`` in every dim) or a number. Built from
    ``scatter_add``: the written positions are those that receive a count, and the value there is
    the mean of what was scattered to it — exactly ``src``'s value unless an index repeats, where
    PyTorch leaves the winner unspecified. Differentiable in ``x`` (zero where overwritten) and
    ``src``. Integer tensors go through float64, exact up to 2**53.

    >>> import torchlight as tl
    >>> tl.zeros(2, 3).scatter(1, tl.tensor([[2], [0]]), 1.0).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    dim = normalize_dim(dim, x.ndim)
    if not isinstance(src, TensorBase):
        src = scalar_like(src, x).expand(index.shape)
    elif src.shape != index.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]
    counts = filled(
        x.shape, 0, x.dtype if x.dtype.is_floating_point else dtypes.float64, x.backend, like=x
    )
    counts = scatter_add(counts, dim, index, counts.new_ones(index.shape))
    placed = scatter_add(
        x.detach().new_zeros(x.shape, dtype=counts.dtype), dim, index, src.to(counts.dtype)
    )
    written = counts > 0
    value = placed / counts.clamp(min=1.0)
    return value.to(x.dtype).where(written, x)


class Embedding(Function):
    """Autograd function of :func:`embedding`: ``out[s] = weight[indices[s]]`` for every position
    ``s`` of ``indices``, one ``take`` along dim 0. Backward adds each position's gradient row into
    zeros at its index (``put_add``), leaving out the positions that hold ``padding_idx``; the
    rows stay unbuilt until the table's gradient is needed (:class:`~.weight_gradients.RowsGradient`),
    so a table read at every step of a loop gets one scatter over all its uses."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        check_index(indices, weight.shape[0], "embedding")  # before flattening: its bounds record
        n = indices.numel()
        flat = indices._td.reshaped((n,))
        flat = view_of(indices, flat) if flat is not None else indices.contiguous().reshape(n)
        d = weight.shape[1]
        out = alloc(indices.shape + (d,), weight.dtype, weight.backend, weight)
        weight.backend.take(weight._td, 0, flat._td, out._td.reshaped((n, d)))
        ctx.shape, ctx.padding_idx = weight.shape, padding_idx
        ctx.save_for_backward(flat)
        return out

    @staticmethod
    def backward(ctx, g):
        (flat,) = ctx.saved_tensors
        rows = g.reshape(flat.shape[0], ctx.shape[1])
        if ctx.padding_idx is not None:
            rows = rows * (flat != ctx.padding_idx).unsqueeze(1).to(rows.dtype)
        if GradMode.enabled:  # create_graph: a recorded node, differentiable again
            return add_at_index(rows, ctx.shape, 0, flat, "put_add"), None, None
        # unbuilt: a table read at every step gets one scatter over all its uses
        return RowsGradient(rows, flat, ctx.shape), None, None


def embedding(indices, weight, padding_idx=None):
    """Rows of ``weight`` picked by ``indices``; repeated indices accumulate in the gradient.

    With ``padding_idx`` the gradient of that row is zero (the row stays as initialised).
    """
    if not isinstance(indices, TensorBase):
        raise DTypeError(
            f"embedding: indices must be an int64 tensor, got {type(indices).__name__}"
        )
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (rows, dim), got shape {weight.shape}")
    if indices.dtype is not dtypes.int64:
        check_index(indices, weight.shape[0], "embedding")  # raises the dtype error
    same_backend(weight, indices)
    return Embedding.apply(weight, indices, padding_idx)
