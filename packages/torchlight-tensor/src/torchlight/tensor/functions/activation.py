"""Softmax, log-softmax, layer norm and leaky ReLU: fused backend kernels when offered,
composites otherwise.

Softmax along ``dim``: ``y_i = exp(x_i - m) / sum_j exp(x_j - m)`` with ``m = max_j x_j``; shifting
by the max changes nothing mathematically and keeps ``exp`` from overflowing, so rows of 1e4 and
-1e4 give exact answers. Its backward is ``dx = y ⊙ (g - sum(g ⊙ y))``; for log-softmax
``dx = g - softmax(x) · sum(g)``.

Layer norm over the last dim with ``μ = mean(x)``, ``r = 1/sqrt(var(x) + eps)``, ``x̂ = (x-μ) r``,
``y = x̂ w + b``. Backward (D = row length, ĝ = g w):
``dx = r (ĝ - mean(ĝ) - x̂ mean(ĝ x̂))``, ``dw = Σ_rows g x̂``, ``db = Σ_rows g``.

Cross-entropy of rows of logits ``x`` (N, C) against class indices ``t`` with per-row weights
``w``: ``ℓ_i = w_i (lse_i - x[i, t_i])``, ``lse_i = log Σ_c exp(x[i, c])``; its gradient is
``∂ℓ_i/∂x[i, c] = w_i (softmax(x_i)_c - [c = t_i])``. Fused, it is two passes over the logits
forward (max, then the sum of exponentials) and one backward, with nothing of size N×C saved
but ``x`` itself; the composite (log-softmax, gather) keeps the N×C log-probabilities.

Leaky ReLU ``y = x`` where ``x > 0``, else ``a·x``, has the gradient ``g`` where ``x > 0``, else
``a·g``: one node that keeps the mask ``x > 0`` for backward.
"""

import numpy as np

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from .. import dtypes
from ..creation import from_numpy_on
from ..dispatch import (
    alloc,
    first_outside,
    normalize_dim,
    ones_cached,
    same_backend,
    scalar_like,
    where_op,
    zip_op,
)
from ..errors import ShapeError, TensorIndexError
from .pointwise import float_operand, gradient_op, where_in_backward
from .reductions import check_reduction, reduce_rows, rows_gradient

__all__ = [
    "Softmax",
    "LayerNorm",
    "LeakyReLU",
    "CrossEntropyRows",
    "softmax",
    "log_softmax",
    "leaky_relu",
    "layer_norm",
    "normalized",
    "cross_entropy_rows",
    "check_targets",
]


class Softmax(Function):
    r"""Autograd function of :func:`softmax` / :func:`log_softmax` on a backend with a fused kernel;
    backward is :math:`s \odot (g - \sum g \odot s)` (softmax) or :math:`g - e^{y}\sum g` (log).
    """

    direct_forward = True

    @staticmethod
    def forward(ctx, x, dim, log):
        out = alloc(x.shape, x.dtype, x.backend, x)
        x.backend.softmax(x._td, dim, out._td, log)
        ctx.save_for_backward(out)
        ctx.dim, ctx.log = dim, log
        return out

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if GradMode.enabled:  # create_graph: the same formulas as recorded ops
            if ctx.log:
                return g - y.exp() * g.sum(ctx.dim, keepdim=True), None, None
            return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None, None
        out = alloc(y.shape, y.dtype, y.backend, y)
        y.backend.softmax_backward(y._td, g._td, ctx.dim, out._td, ctx.log)
        return out, None, None


def _softmax(x, dim, log):
    x = float_operand(x)
    if x.ndim == 0:
        x1 = x.reshape(1)
        return _softmax(x1, 0, log).reshape(())
    dim = normalize_dim(dim, x.ndim)
    if "softmax" in x.backend.capabilities:
        return Softmax.apply(x, dim, log)
    shifted = x - x.detach().amax(dim, keepdim=True)  # composite fallback
    if log:
        return shifted - shifted.exp().sum(dim, keepdim=True).log()
    e = shifted.exp()
    return e / e.sum(dim, keepdim=True)


def softmax(x, dim=-1):
    r"""Softmax along ``dim``: :math:`\operatorname{softmax}(x)_i = e^{x_i}/\sum_j e^{x_j}`, each slice
    summing to 1. Computed as :math:`e^{x_i - m}/\sum_j e^{x_j - m}` with :math:`m = \max_j x_j`, so
    large inputs do not overflow.

    >>> tl.softmax(tl.tensor([1.0, 2.0, 3.0]), dim=0)
    tensor([0.09  , 0.2447, 0.6652])
    >>> tl.softmax(tl.tensor([1000.0, 1000.0]), dim=0)
    tensor([0.5, 0.5])
    """
    return _softmax(x, dim, False)


def log_softmax(x, dim=-1):
    r"""Logarithm of :func:`softmax` along ``dim``, computed directly as
    :math:`x_i - \log\sum_j e^{x_j}` (stable, and more accurate than ``softmax(x).log()``). The input
    of :func:`torchlight.nn.functional.nll_loss`.

    >>> tl.log_softmax(tl.tensor([0.0, 0.0]), dim=0)
    tensor([-0.6931, -0.6931])
    """
    return _softmax(x, dim, True)


class LeakyReLU(Function):
    r"""Autograd function of :func:`leaky_relu`: :math:`y = x` where :math:`x > 0`, else
    :math:`a x`; :math:`\partial L/\partial x = g` where :math:`x > 0`, else :math:`a g`.

    One node that keeps the 1-byte mask :math:`x > 0`: the composite ``x.where(x > 0, a * x)``
    recorded two (a product and a select), and its backward took two selects, a product and a
    sum of the two paths."""

    direct_forward = True

    @staticmethod
    def forward(ctx, x, slope):
        mask = zip_op("gt", x, scalar_like(0, x), dtypes.bool_)
        ctx.save_for_backward(mask)
        ctx.slope = slope
        return where_op(mask, x, zip_op("mul", x, scalar_like(slope, x)))

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        scaled = gradient_op("mul", g, scalar_like(ctx.slope, g))
        return where_in_backward(mask, g, scaled), None


def leaky_relu(x, negative_slope=0.01):
    r""":math:`x` where :math:`x > 0`, else :math:`\text{negative\_slope} \cdot x` (NaN stays NaN);
    an integer ``x`` gives a float result.

    >>> tl.tensor([-2.0, 0.0, 3.0]).leaky_relu(0.1)
    tensor([-0.2,  0. ,  3. ])
    """
    return LeakyReLU.apply_unary(float_operand(x), float(negative_slope))


class LayerNorm(Function):
    r"""Autograd function of :func:`layer_norm` on a backend with a fused kernel (forward saves the
    normalised input and :math:`1/\sigma` for backward).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        stat_shape = x.shape[:-1] + (1,)
        out = alloc(x.shape, x.dtype, x.backend, x)
        mean = alloc(stat_shape, x.dtype, x.backend, x)
        rstd = alloc(stat_shape, x.dtype, x.backend, x)
        w = None if weight is None else weight._td
        b = None if bias is None else bias._td
        x.backend.layernorm(x._td, w, b, eps, out._td, mean._td, rstd._td)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.has_bias, ctx.eps = bias is not None, eps
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, mean, rstd = ctx.saved_tensors
        if GradMode.enabled:  # create_graph: the same gradients as recorded ops
            xhat, r = normalized(x, ctx.eps)
            gh = g if weight is None else g * weight
            mean_gh = gh.mean(-1, keepdim=True)
            dx = r * (gh - mean_gh - xhat * (gh * xhat).mean(-1, keepdim=True))
            rows = tuple(range(x.ndim - 1))
            dw = None if weight is None else (g * xhat).sum(rows)
            return dx, dw, g.sum(rows) if ctx.has_bias else None, None
        dx = alloc(x.shape, x.dtype, x.backend, x)
        dw = None if weight is None else alloc(weight.shape, x.dtype, x.backend, x)
        db = (
            alloc(weight.shape if weight is not None else (x.shape[-1],), x.dtype, x.backend, x)
            if ctx.has_bias
            else None
        )
        g = g.contiguous()
        x.backend.layernorm_backward(
            g._td,
            x._td,
            None if weight is None else weight._td,
            mean._td,
            rstd._td,
            dx._td,
            None if dw is None else dw._td,
            None if db is None else db._td,
        )
        return dx, dw, db, None


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    r"""Layer normalisation over the trailing ``normalized_shape`` dimensions:

    .. math:: y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot w + b

    with mean and (biased) variance taken over the last ``len(normalized_shape)`` dimensions of
    each sample; ``weight`` :math:`w` and ``bias`` :math:`b` (shape ``normalized_shape``) are
    optional. Input ``(*, *normalized_shape)``, output the same shape. The function behind
    :class:`torchlight.nn.LayerNorm`.

    >>> y = tl.layer_norm(tl.tensor([[1.0, 2.0, 3.0]]), (3,))
    >>> y
    tensor([[-1.2247,  0.    ,  1.2247]])
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if x.shape[x.ndim - k :] != normalized_shape:
        raise ShapeError(
            f"layer_norm: input shape {x.shape} does not end with normalized_shape {normalized_shape}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            same_backend(x, p)
        if p is not None and p.shape != normalized_shape:
            raise ShapeError(f"layer_norm: {name} has shape {p.shape}, expected {normalized_shape}")
    x = float_operand(x)
    d = 1
    for s in normalized_shape:
        d *= s
    if k == 1:  # the usual case: rows of d already, nothing to fold (four reshapes saved)
        x2, w2, b2 = x, weight, bias
    else:
        x2 = x.reshape(x.shape[: x.ndim - k] + (d,))
        w2 = None if weight is None else weight.reshape(d)
        b2 = None if bias is None else bias.reshape(d)
    if "layernorm" in x.backend.capabilities:
        y = LayerNorm.apply(x2, w2, b2, eps)
    else:  # composite fallback
        y, _ = normalized(x2, eps)
        if w2 is not None:
            y = y * w2
        if b2 is not None:
            y = y + b2
    return y if k == 1 else y.reshape(x.shape)


def normalized(x, eps, dims=-1):
    r"""``(x̂, r)`` over ``dims`` (the last dim by default) as recorded ops:
    :math:`r = 1/\sqrt{\mathrm{Var}[x] + \epsilon}`, :math:`\hat x = (x - \mathrm{E}[x])\,r`
    (the composite layer norm, and the layer and batch norms' backwards under ``create_graph``)."""
    xc = x - x.mean(dims, keepdim=True)
    r = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    return xc * r, r


def check_targets(target, classes, what="cross_entropy"):
    """Raise unless every class index in the int64 ``target`` lies in ``[0, classes)``.

    Runs inside ``CrossEntropyRows.forward``, so a ``tl.jit`` replay checks its targets as an
    eager call does (the wrapper's ignore_index handling is not on the tape)."""
    if target.numel() == 0:
        return
    bad = first_outside(target, classes)
    if bad is not None:
        raise TensorIndexError(
            f"{what}: Target {bad} is out of bounds for {classes} classes "
            f"(class indices must lie in [0, {classes - 1}] or equal ignore_index)"
        )


class CrossEntropyRows(Function):
    r"""Autograd function of :func:`cross_entropy_rows` on a backend with a fused kernel; the
    gradient with respect to the logits is :math:`w_i(\operatorname{softmax}(x_i) - \text{onehot}(t_i))`.
    """

    @staticmethod
    def forward(ctx, x, target, weight, reduction):
        check_targets(target, x.shape[1])
        n = x.shape[0]
        rows_weight = weight if weight is not None else ones_cached((n,), x.dtype, x.backend, x)
        loss = alloc((n,), x.dtype, x.backend, x)
        logs = alloc((n,), x.dtype, x.backend, x)
        x.backend.cross_entropy(x._td, target._td, rows_weight._td, loss._td, logs._td)
        ctx.save_for_backward(x, logs)
        # not differentiated: no version check needed
        ctx.target, ctx.weight, ctx.reduction = target, rows_weight, reduction
        out, ctx.total = reduce_rows(loss, reduction, weight)
        return out

    @staticmethod
    def backward(ctx, g):
        x, logs = ctx.saved_tensors
        # the kernel's rows of weight 0 are exactly 0 (the contract); the recorded formula's are not
        g = rows_gradient(g, x.shape[0], ctx.reduction, ctx.total, not GradMode.enabled)
        if GradMode.enabled:  # create_graph: w_i (softmax(x_i) - onehot(t_i)) as recorded ops
            classes = from_numpy_on(np.arange(x.shape[1]), x.backend, like=x)
            onehot = (classes.unsqueeze(0) == ctx.target.unsqueeze(1)).to(x.dtype)
            return (
                (_softmax(x, 1, False) - onehot) * (g * ctx.weight).unsqueeze(1),
                None,
                None,
                None,
            )
        dx = alloc(x.shape, x.dtype, x.backend, x)
        x.backend.cross_entropy_backward(
            x._td, ctx.target._td, ctx.weight._td, logs._td, g._td, dx._td
        )
        return dx, None, None, None


def cross_entropy_rows(x, target, weight=None, reduction="none"):
    """Cross-entropy of the rows of logits ``x`` (N, C): ``w_i (logsumexp(x_i) - x[i, t_i])`` per
    row, reduced by ``reduction`` inside the same node.

    ``target`` (N,) int64 must already lie in ``[0, C)`` and ``weight`` (N,) is detached (0
    drops a row: its loss and gradient are exactly 0), or ``None`` for weights of 1.
    ``reduction``: ``"none"`` (the N losses), ``"sum"``, or ``"mean"`` (PyTorch's weighted mean
    ``Σ ℓ_i / Σ w_i``, see :func:`~torchlight.tensor.functions.reductions.reduce_rows`). This is
    the kernel under ``torchlight.nn.functional.cross_entropy``, which validates targets.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.activation import cross_entropy_rows
    >>> x = tl.tensor([[2.0, 0.0], [0.0, 2.0]])
    >>> cross_entropy_rows(x, tl.tensor([0, 0])).tolist()
    [0.12692804634571075, 2.1269280910491943]
    >>> cross_entropy_rows(x, tl.tensor([0, 0]), reduction="mean")
    tensor(1.1269)
    """
    if (
        x.ndim != 2
        or target.shape != (x.shape[0],)
        or (weight is not None and weight.shape != (x.shape[0],))
    ):
        raise ShapeError(
            "cross_entropy_rows: need x (N, C), target (N,), weight (N,) or None; got "
            f"{x.shape}, {target.shape}, {None if weight is None else weight.shape}"
        )
    check_reduction("cross_entropy_rows", reduction)
    same_backend(x, target)
    x = float_operand(x)
    if weight is not None:
        same_backend(x, weight)
        if weight.requires_grad or weight.dtype is not x.dtype:
            weight = weight.detach().to(x.dtype)
    if "cross_entropy" in x.backend.capabilities:
        return CrossEntropyRows.apply(x, target, weight, reduction)
    picked = _softmax(x, 1, True).gather(1, target.unsqueeze(1)).squeeze(1)  # composite fallback
    if weight is None:
        loss = -picked
    else:
        loss = (-picked * weight).where(weight != 0, 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if weight is None else loss.sum() / weight.sum()
