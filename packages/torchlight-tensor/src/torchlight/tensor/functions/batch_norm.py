r"""Batch normalisation in training as one autograd node (PyTorch's ``native_batch_norm``).

For an input ``(N, C, *)`` each channel :math:`c` is normalised over its :math:`m` values (the
batch and every position) with the batch's statistics, then scaled and shifted:

.. math::

    \mu = \frac{1}{m}\sum x, \quad \sigma^2 = \frac{1}{m}\sum (x - \mu)^2, \quad
    r = \frac{1}{\sqrt{\sigma^2 + \epsilon}}, \quad \hat x = (x - \mu)\,r, \quad
    y = \hat x\,\gamma + \beta

and its gradient, :math:`\mu` and :math:`\sigma^2` depending on :math:`x` too, with
:math:`\hat g = g\,\gamma` and means over the channel's values:

.. math::

    \frac{\partial L}{\partial x} = r\left(\hat g - \overline{\hat g}
        - \hat x\,\overline{\hat g\,\hat x}\right), \quad
    \frac{\partial L}{\partial \gamma} = \sum g\,\hat x, \quad
    \frac{\partial L}{\partial \beta} = \sum g

As a dozen recorded ops (the expression written with tensor methods) the forward and backward
of a small layer cost several times the arithmetic; here each is one node whose steps call the
backend directly. ``torchlight.nn.functional.batch_norm`` checks the shapes and calls
:func:`batch_norm_training` in training; eval mode uses the running statistics, plain ops.
"""

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from ..dispatch import cast, map_op, reduce_op, same_backend, scalar_like, view_of, zip_into, zip_op
from .activation import normalized

__all__ = ["BatchNormTraining", "batch_norm_training"]


class BatchNormTraining(Function):
    """Autograd function of :func:`batch_norm_training` (the module docstring's formulas)."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, momentum, eps):
        c = x.shape[1]
        dims = (0,) + tuple(range(2, x.ndim))
        m = x.numel() // c
        count = scalar_like(m, x)
        mean = zip_into("div", reduce_op("sum", x, dims, keepdim=True), count)
        xhat = zip_op("sub", x, mean)
        var = zip_into("div", reduce_op("sum", zip_op("mul", xhat, xhat), dims, True), count)
        r = map_op("rsqrt", zip_op("add", var, scalar_like(eps, x)))
        zip_into("mul", xhat, r)
        if running_mean is not None:  # r ← (1 - momentum)·r + momentum·stat, in place
            _move(running_mean, mean, momentum, momentum)
            _move(running_var, var, momentum, momentum * m / (m - 1))  # unbiased
        if weight is not None:
            zip_into("mul", xhat, _per_channel(weight, mean.shape))
        if bias is not None:
            zip_into("add", xhat, _per_channel(bias, mean.shape))
        ctx.save_for_backward(x, weight, mean, r)
        ctx.dims, ctx.eps, ctx.has_bias = dims, eps, bias is not None
        return xhat

    @staticmethod
    def backward(ctx, g):
        x, weight, mean, r = ctx.saved_tensors
        dims = ctx.dims
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if GradMode.enabled:  # create_graph: x̂ and r as recorded ops of x
            xhat, r = normalized(x, ctx.eps, dims)
            gh = g if weight is None else g * weight.reshape(r.shape)
            dx = None
            if need_x:
                dx = r * (
                    gh - gh.mean(dims, keepdim=True) - xhat * (gh * xhat).mean(dims, keepdim=True)
                )
            dw = (g * xhat).sum(dims) if need_w else None
            db = g.sum(dims) if need_b and ctx.has_bias else None
            return dx, dw, db, None, None, None, None
        xhat = zip_into("mul", zip_op("sub", x, mean), r)
        gx = zip_op("mul", g, xhat) if need_w or need_x else None
        dw = reduce_op("sum", gx, dims) if need_w else None
        db = reduce_op("sum", g, dims) if need_b and ctx.has_bias else None
        dx = None
        if need_x:
            count = scalar_like(x.numel() // x.shape[1], x)
            if weight is None:
                gh, ghx = g, gx
            else:
                w = _per_channel(weight, r.shape)
                gh = zip_op("mul", g, w)
                ghx = zip_into("mul", gx, w)  # g·x̂ is not needed again (dw is summed)
            mean_gh = zip_into("div", reduce_op("sum", gh, dims, True), count)
            mean_ghx = zip_into("div", reduce_op("sum", ghx, dims, True), count)
            # ĝ - mean(ĝ) - x̂·mean(ĝ x̂), then times r (x̂ is this backward's own: overwritten)
            t = zip_into("add", zip_into("mul", xhat, mean_ghx), mean_gh)
            dx = zip_into("mul", zip_op("sub", gh, t), r)
        return dx, dw, db, None, None, None, None


def _per_channel(t, shape):
    """The ``(C,)`` tensor ``t`` seen with ``shape`` (1, C, 1, ...), broadcasting over a batch."""
    td = t._td.reshaped(shape)
    return t.reshape(shape) if td is None else view_of(t, td)


def _move(running, stat, momentum, weight):
    """``running ← (1 - momentum)·running + weight·stat`` in place (a ``(C,)`` buffer; ``stat``
    the contiguous ``(1, C, 1, ...)`` statistic), counted as a write like ``mul_``/``add_``."""
    flat = view_of(stat, stat._td.reshaped(running._td.shape))
    step = cast(zip_op("mul", flat, scalar_like(weight, flat)), running.dtype)
    zip_into("mul", running, scalar_like(1.0 - momentum, running))
    zip_into("add", running, step)
    running._version[0] += 1


def batch_norm_training(x, weight, bias, running_mean, running_var, momentum, eps):
    r"""Batch norm of ``x`` ``(N, C, *)`` over the batch's statistics, as one autograd node;
    ``weight``/``bias`` ``(C,)`` or ``None``. When ``running_mean``/``running_var`` ``(C,)`` are
    given they move towards the batch's mean and unbiased variance in place (``momentum`` the
    weight of the new value). The caller checks shapes; ``x`` is floating point and ``weight``,
    ``bias`` have its dtype.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.batch_norm import batch_norm_training
    >>> batch_norm_training(tl.tensor([[1.0, 10.0], [3.0, 30.0]]), None, None, None, None, 0.1, 1e-5)
    tensor([[-1., -1.],
            [ 1.,  1.]])
    """
    for t in (weight, bias, running_mean, running_var):
        if t is not None:
            same_backend(x, t)  # the steps call the backend directly: a mix would not be caught
    return BatchNormTraining.apply(x, weight, bias, running_mean, running_var, momentum, eps)
