"""Elementwise functions and their derivatives.

For ``y = f(x)`` applied elementwise, the chain rule is elementwise too: ``dL/dx = dL/dy * f'(x)``.
Binary ops broadcast their inputs, so their backward first forms the full-shape gradient and then
sums it back to each input's shape (:func:`~torchlight.tensor.dispatch.sum_to`).
"""

import numpy as np

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from .. import dtypes
from ..base import TensorBase
from ..creation import from_data
from ..dispatch import cast, map_op, scalar_like, sum_to, where_op, zip_op
from ..errors import DTypeError
from ..formulas import (
    INV_SQRT_2PI,
    SQRT1_2,
    TWO_OVER_SQRT_PI,
    gelu_tanh_arg,
    gelu_tanh_slope,
)

__all__ = [
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Maximum",
    "Minimum",
    "Cast",
    "Unary",
    "Clamp",
    "Where",
    "where_in_backward",
    "gradient_op",
    "binary",
    "compare",
    "unary",
    "float_operand",
    "Function",
    "NonDifferentiable",
    "Compare",
    "MapNoGrad",
    "CastNoGrad",
    "ndarray_operand",
]


class NonDifferentiable(Function):
    """An op whose output never carries a gradient (comparisons, sign, int casts, argmax...).

    It still goes through ``Function.apply`` so that tracers (``torchlight.jit``) record it; the
    output is never linked into the autograd graph, whatever the inputs' ``requires_grad``.
    """

    @classmethod
    def apply(cls, *args, **kwargs):
        prev = GradMode.enabled
        GradMode.enabled = False
        try:
            return super().apply(*args, **kwargs)
        finally:
            GradMode.enabled = prev

    @staticmethod
    def backward(ctx, g):
        return None


class Compare(NonDifferentiable):
    """``a op b`` → bool for a comparison/logical zip op (``lt``, ``eq``, ``logical_and``...)."""

    @staticmethod
    def forward(ctx, a, b, op):
        return zip_op(op, a, b, dtypes.bool_)


class MapNoGrad(NonDifferentiable):
    """A unary map op without a gradient (``sign``, ``logical_not``)."""

    @staticmethod
    def forward(ctx, x, op):
        return map_op(op, x)


class CastNoGrad(NonDifferentiable):
    """A dtype conversion whose result carries no gradient (to an integer or bool dtype)."""

    @staticmethod
    def forward(ctx, a, dtype):
        return cast(a, dtype)


class Cast(Function):
    """dtype conversion; the gradient is converted back to the input's dtype."""

    direct_forward = True

    @staticmethod
    def forward(ctx, a, dtype):
        ctx.src = a.dtype
        return cast(a, dtype)

    @staticmethod
    def backward(ctx, g):
        if GradMode.enabled:  # create_graph: a recorded cast, so the gradient stays differentiable
            return Cast.apply(g, ctx.src), None
        return cast(g, ctx.src), None


def to_dtype(a, dtype):
    if a.dtype is dtype:
        return a
    if a.requires_grad and not dtype.is_floating_point:
        return CastNoGrad.apply(a, dtype)  # integer results carry no gradient
    return Cast.apply_unary(a, dtype)


def _category(dt):
    return 2 if dt.is_floating_point else (0 if dt is dtypes.bool_ else 1)


def tensor_result_dtype(a, b):
    """PyTorch's result type of two tensors: a 0-d tensor acts like a scalar, so it does not
    widen a dimensioned tensor of the same category (float32 tensor + float64 0-d → float32);
    only a 0-d tensor of a higher category (int tensor + float64 0-d) decides the dtype."""
    a0, b0 = not a._td.shape, not b._td.shape
    if a0 != b0:
        dim, zero = (b, a) if a0 else (a, b)
        return dim.dtype if _category(zero.dtype) <= _category(dim.dtype) else zero.dtype
    return dtypes.promote(a.dtype, b.dtype)


def ndarray_operand(value, like):
    """``value`` as a tensor on ``like``'s backend when it is a numpy array, else unchanged.

    An ndarray operand is treated like a tensor, as PyTorch does: it keeps its dtype where
    torchlight has it (float16 becomes float32, other integers int64) and takes part in dtype
    promotion as a tensor of its number of dimensions (a 0-d array acts like a scalar).
    """
    if isinstance(value, np.ndarray):
        return from_data(value, None, like.backend, like=like)
    return value


def operands(a, b, floating=False):
    """Turn ``(tensor, tensor-or-scalar)`` into two tensors of the promoted dtype (an ndarray on
    either side counts as a tensor)."""
    if isinstance(a, np.ndarray):
        a = ndarray_operand(a, b)
    b = ndarray_operand(b, a)
    if isinstance(b, TensorBase):
        dt = tensor_result_dtype(a, b)
        if floating and not dt.is_floating_point:
            dt = dtypes.get_default_dtype()
        return to_dtype(a, dt), to_dtype(b, dt)
    if not isinstance(b, (int, float, bool)):
        try:
            b = float(b) if not isinstance(b, (int, bool)) else b
        except (TypeError, ValueError):
            raise DTypeError(f"cannot combine a tensor with a {type(b).__name__}") from None
    dt = dtypes.promote_scalar(a.dtype, b)
    if floating and not dt.is_floating_point:
        dt = dtypes.get_default_dtype()
    return to_dtype(a, dt), scalar_like(b, a, dt)


def float_operand(a):
    """Float view of ``a`` for ops like exp/log (ints promote to float32, like PyTorch)."""
    return a if a.dtype.is_floating_point else to_dtype(a, dtypes.get_default_dtype())


class Add(Function):
    """Autograd function of ``a + b``: the gradient passes unchanged to both inputs (summed over
    broadcast dimensions).
    """

    direct_forward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (a._td.shape, b._td.shape)
        return zip_op("add", a, b)

    @staticmethod
    def backward(ctx, g):
        # an operand that needs no gradient (``x + 1.0``'s constant) gets no sum over g
        sa, sb = ctx.shapes
        need_a, need_b = ctx.needs_input_grad
        return sum_to(g, sa) if need_a else None, sum_to(g, sb) if need_b else None


class Sub(Function):
    """Autograd function of ``a - b``: gradients ``g`` and ``-g``."""

    direct_forward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (a._td.shape, b._td.shape)
        return zip_op("sub", a, b)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        need_a, need_b = ctx.needs_input_grad
        return sum_to(g, sa) if need_a else None, sum_to(-g, sb) if need_b else None


def gradient_op(op, g, x):
    """``g op x`` (``op`` a ``ZIP_OPS`` name) in a backward formula: recorded under
    ``create_graph``, else the raw op alone when the dtypes agree (the route through the
    operator, its promotion and an unrecorded ``apply``, costs as much as a small product)."""
    if GradMode.enabled or g.dtype is not x.dtype:
        return binary(op, g, x)
    return zip_op(op, g, x)


class Mul(Function):
    """Autograd function of ``a * b``: gradients ``g * b`` and ``g * a``."""

    direct_forward = True

    @staticmethod
    def forward(ctx, a, b):
        # each gradient needs only the other operand: ``x * 0.5`` keeps no copy of x alive
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        ctx.shapes = (a._td.shape, b._td.shape)
        return zip_op("mul", a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        ga = sum_to(gradient_op("mul", g, b), sa) if ctx.needs_input_grad[0] else None
        gb = sum_to(gradient_op("mul", g, a), sb) if ctx.needs_input_grad[1] else None
        return ga, gb


class Div(Function):
    r"""Autograd function of ``a / b``: gradients :math:`g/b` and :math:`-g\,a/b^2`."""

    direct_forward = True

    @staticmethod
    def forward(ctx, a, b):
        # a is needed only for b's gradient: ``x / 8`` keeps no copy of x alive
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        ctx.shapes = (a._td.shape, b._td.shape)
        return zip_op("div", a, b)

    @staticmethod
    def backward(ctx, g):  # d(a/b)/da = 1/b ; d(a/b)/db = -a/b^2
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        ga = sum_to(gradient_op("div", g, b), sa) if ctx.needs_input_grad[0] else None
        gb = sum_to(-g * a / (b * b), sb) if ctx.needs_input_grad[1] else None
        return ga, gb


class Pow(Function):
    """``a ** b``: d/da = b a^(b-1); d/db = a^b ln a (only where a > 0 contributes sensibly)."""

    direct_forward = True

    @staticmethod
    def forward(ctx, a, b):
        y = zip_op("pow", a, b)
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        ga = sum_to(g * b * a ** (b - 1), a.shape) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            safe = a.masked_fill(a <= 0, 1.0)
            gb = sum_to(g * y * safe.log(), b.shape)
        return ga, gb


class Maximum(Function):
    """Elementwise max; on ties the gradient is split evenly (PyTorch's convention)."""

    direct_forward = True

    op = "maximum"

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        return zip_op(cls.op, a, b)

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        win_a = (a > b) if cls.op == "maximum" else (a < b)
        tie = (a == b).to(g.dtype) * 0.5
        wa = win_a.to(g.dtype) + tie
        ga = sum_to(g * wa, a.shape) if ctx.needs_input_grad[0] else None
        gb = sum_to(g * (1.0 - wa), b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


class Minimum(Maximum):
    """Autograd function of the elementwise minimum (ties split the gradient, as :class:`Maximum`)."""

    op = "minimum"


_BINARY = {
    "add": Add,
    "sub": Sub,
    "mul": Mul,
    "div": Div,
    "pow": Pow,
    "maximum": Maximum,
    "minimum": Minimum,
}


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def binary(op, a, b, reverse=False):
    """``a op b`` (or ``b op a`` when ``reverse``) for a tensor ``a`` and a tensor/scalar ``b``."""
    if (
        isinstance(b, TensorBase)
        and b.dtype is a.dtype
        and (op != "div" or b.dtype.is_floating_point)
    ):
        x, y = a, b  # the common case, two tensors of one dtype: nothing to promote
    elif (type(b) is float or type(b) is int) and a.dtype.is_floating_point:
        x, y = a, scalar_like(b, a)  # x * 0.5: a number takes a float tensor's dtype
    elif (
        type(b) is int and a.dtype is dtypes.int64 and op != "div" and _INT64_MIN <= b <= _INT64_MAX
    ):
        x, y = a, scalar_like(b, a)  # i + 16: an int keeps an int64 tensor's dtype
    else:
        x, y = operands(a, b, floating=(op == "div"))
    if reverse:
        x, y = y, x
    return _BINARY[op].apply_binary(x, y)


def compare(op, a, b):
    """Elementwise comparison ``a op b`` (``op`` one of ``lt``, ``le``, ``gt``, ``ge``, ``eq``,
    ``ne``) as a ``bool`` tensor, after broadcasting and type promotion; no gradient.
    """
    x, y = operands(a, b)
    return Compare.apply(x, y, op)


class Unary(Function):
    """``y = f(x)`` for a named backend map op, with a named backward.

    ``back`` is either a fused backend op ``<f>_back(saved, g) = g·f'(x)`` (``via_output``: the
    saved value is ``y`` instead of ``x``, e.g. tanh' = 1 - y²) or a Python rule on tensors.
    """

    direct_forward = True

    @staticmethod
    def forward(ctx, x, op):
        y = map_op(op, x)
        ctx.op = op
        ctx.save_for_backward(y if op in _FROM_OUTPUT else x)
        return y

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        rule = _RULES.get(ctx.op)
        if rule is None and GradMode.enabled:  # create_graph: the fused kernel would leave it
            rule = _GRAPH_RULES[ctx.op]
        if rule is not None:
            return rule(s, g), None
        return zip_op(ctx.op + "_back", s, g), None


_FROM_OUTPUT = {"exp", "sqrt", "rsqrt", "tanh", "sigmoid"}
_RULES = {
    "neg": lambda x, g: -g,
    "abs": lambda x, g: g * x.sign(),
    "exp": lambda y, g: gradient_op("mul", g, y),
    "log": lambda x, g: gradient_op("div", g, x),
    "sqrt": lambda y, g: g * 0.5 / y,
    "rsqrt": lambda y, g: g * -0.5 * y * y * y,  # d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
    "sin": lambda x, g: g * x.cos(),
    "cos": lambda x, g: -g * x.sin(),
    "square": lambda x, g: g * 2.0 * x,
    "reciprocal": lambda x, g: -g / (x * x),
    "erf": lambda x, g: g * TWO_OVER_SQRT_PI * (-(x * x)).exp(),  # d/dx erf(x) = 2/√π · exp(-x²)
}

# The derivatives the fused ``<f>_back`` kernels compute (formulas.py, numpy_ops.py), as recorded
# ops: what a backward with create_graph=True uses, so the gradient can be differentiated again.
_GRAPH_RULES = {
    "tanh": lambda y, g: g * (1.0 - y * y),
    "sigmoid": lambda y, g: g * (y * (1.0 - y)),
    "relu": lambda x, g: g * (x > 0).to(g.dtype),
    "softplus": lambda x, g: g * x.sigmoid(),
    "silu": lambda x, g: g * (x.sigmoid() * (1.0 + x * (1.0 - x.sigmoid()))),
    "gelu": lambda x, g: (
        g * (0.5 * (1.0 + (x * SQRT1_2).erf()) + x * INV_SQRT_2PI * (-0.5 * x * x).exp())
    ),
    "gelu_tanh": lambda x, g: g * gelu_tanh_slope(x, gelu_tanh_arg(x).tanh()),
}


def unary(op, x):
    """Apply the named elementwise op (one of the backend contract's ``MAP_OPS``) to ``x`` with its
    derivative recorded; integer inputs are promoted to float first (except for ``neg``, ``abs``,
    ``sign`` and ``relu``).
    """
    if op not in ("neg", "abs", "sign", "relu") or x.dtype is dtypes.bool_:
        x = float_operand(x)
    if op == "sign":
        return MapNoGrad.apply(x, "sign")
    return Unary.apply_unary(x, op)


class Clamp(Function):
    """``min(max(x, lo), hi)``; the gradient passes where ``lo <= x <= hi`` (PyTorch's rule)."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        if not x.dtype.is_floating_point and (isinstance(lo, float) or isinstance(hi, float)):
            x = cast(
                x, dtypes.get_default_dtype()
            )  # int tensor, float bound: a float result (PyTorch)
        y = x
        if lo is not None:
            y = zip_op("maximum", y, scalar_like(lo, x))
        if hi is not None:
            y = zip_op("minimum", y, scalar_like(hi, x))
        return y if y is not x else map_op("copy", x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        keep = None
        if ctx.lo is not None:
            keep = x >= ctx.lo
        if ctx.hi is not None:
            keep = (x <= ctx.hi) if keep is None else keep & (x <= ctx.hi)
        return (g if keep is None else g * keep.to(g.dtype)), None, None


class Where(Function):
    """``where(cond, a, b)``: the gradient flows to ``a`` where cond holds, to ``b`` elsewhere."""

    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.save_for_backward(cond)
        ctx.shapes = (a._td.shape, b._td.shape)
        return where_op(cond, a, b)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved_tensors
        sa, sb = ctx.shapes
        zero = scalar_like(0, g)
        ga = sum_to(where_in_backward(cond, g, zero), sa) if ctx.needs_input_grad[1] else None
        gb = sum_to(where_in_backward(cond, zero, g), sb) if ctx.needs_input_grad[2] else None
        return None, ga, gb


def where_in_backward(cond, a, b):
    """``where(cond, a, b)`` for a backward: a recorded :class:`Where` under
    ``create_graph=True`` (so the gradient stays differentiable), else straight on the backend."""
    return Where.apply(cond, a, b) if GradMode.enabled else where_op(cond, a, b)
