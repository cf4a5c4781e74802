"""Every differentiable op against float64 central finite differences (``tl.gradcheck``).

``CASES`` maps each differentiable op — a public ``Tensor`` method or operator, or a name in
``torchlight.tensor.functional.__all__`` — to one or more gradcheck cases. Each case runs on
four layouts of its inputs:

* ``contiguous`` — packed leaves;
* ``permuted`` / ``sliced`` — the leaf itself is a non-contiguous view (a transposed or
  step-sliced window into a larger buffer, with an offset), so the op's forward and backward see
  real strides;
* ``broadcast`` — the leaf is smaller and ``expand``-ed (stride 0) inside the checked function,
  so the gradient must be summed over the broadcast dims.

``test_every_differentiable_op_has_a_gradcheck`` derives the op list from the public API and
fails when an op is neither in ``CASES`` nor listed in ``NOT_DIFFERENTIABLE`` with a reason:
adding an op without a gradcheck breaks the suite.
"""

import inspect
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tltensor_helpers import LEAF_LAYOUTS, Maker, broadcastable_pair, layout_is_view, shapes

import torchlight as tl
from torchlight.tensor import functional

LAYOUTS = ("contiguous", "permuted", "sliced", "broadcast")


class In:
    """A float64 input of ``shape`` with values of ``kind`` (float, positive, nonzero, distinct)."""

    def __init__(self, *shape, kind="float", grad=True):
        self.shape, self.kind, self.grad = tuple(shape), kind, grad


class Case:
    def __init__(self, fn, *inputs, id=None, layouts=LAYOUTS, xfail=None):
        self.fn, self.inputs, self.id, self.layouts, self.xfail = fn, inputs, id, layouts, xfail


def _idx(values):
    return tl.tensor(np.array(values, dtype=np.int64))


# ----------------------------------------------------------------------------------------------
# The registry: op name -> gradcheck cases. "Tensor.<name>" is the method or operator,
# "functional.<name>" the function in torchlight.tensor.functional (re-exported as tl.<name>).
# ----------------------------------------------------------------------------------------------
M = (2, 3)
CASES = {
    # --- unary -----------------------------------------------------------------------------------
    "Tensor.abs": [Case(lambda x: x.abs(), In(*M, kind="nonzero"))],
    "Tensor.__abs__": [Case(lambda x: abs(x), In(*M, kind="nonzero"))],
    "Tensor.neg": [Case(lambda x: x.neg(), In(*M))],
    "Tensor.__neg__": [Case(lambda x: -x, In(*M))],
    "Tensor.exp": [Case(lambda x: x.exp(), In(*M))],
    "Tensor.log": [Case(lambda x: x.log(), In(*M, kind="positive"))],
    "Tensor.sqrt": [Case(lambda x: x.sqrt(), In(*M, kind="positive"))],
    "Tensor.rsqrt": [Case(lambda x: x.rsqrt(), In(*M, kind="positive"))],
    "Tensor.reciprocal": [Case(lambda x: x.reciprocal(), In(*M, kind="nonzero"))],
    "Tensor.square": [Case(lambda x: x.square(), In(*M))],
    "Tensor.sin": [Case(lambda x: x.sin(), In(*M))],
    "Tensor.cos": [Case(lambda x: x.cos(), In(*M))],
    "Tensor.tanh": [Case(lambda x: x.tanh(), In(*M))],
    "Tensor.sigmoid": [Case(lambda x: x.sigmoid(), In(*M))],
    "Tensor.relu": [Case(lambda x: x.relu(), In(*M, kind="nonzero"))],
    "Tensor.leaky_relu": [
        Case(lambda x: x.leaky_relu(), In(*M, kind="nonzero")),
        Case(lambda x: x.leaky_relu(0.3), In(*M, kind="nonzero"), id="slope0.3"),
        Case(lambda x: x.leaky_relu(1.5), In(*M, kind="nonzero"), id="slope1.5"),
        Case(lambda x: x.leaky_relu(-0.5), In(*M, kind="nonzero"), id="slope-0.5"),
    ],
    "Tensor.gelu": [
        Case(lambda x: x.gelu(), In(*M)),
        Case(lambda x: x.gelu(approximate="tanh"), In(*M), id="tanh"),
    ],
    "Tensor.silu": [Case(lambda x: x.silu(), In(*M))],
    "Tensor.softplus": [
        Case(lambda x: x.softplus(), In(*M)),
        Case(lambda x: x.softplus(beta=2.0, threshold=2.0), In(*M), id="beta_threshold"),
    ],
    "Tensor.clamp": [
        Case(lambda x: x.clamp(-1.0, 0.5), In(*M)),
        Case(lambda x: x.clamp(min=0.2), In(*M), id="min"),
        Case(lambda x: x.clamp(max=-0.2), In(*M), id="max"),
    ],
    "Tensor.clip": [Case(lambda x: x.clip(-1.0, 1.0), In(*M))],
    "Tensor.clone": [Case(lambda x: x.clone() * 2, In(*M))],
    "Tensor.contiguous": [Case(lambda x: x.contiguous(), In(*M))],
    "Tensor.double": [Case(lambda x: x.double() * 3, In(*M))],  # float64 -> float64
    "Tensor.cpu": [Case(lambda x: x.cpu() * 3, In(*M))],
    "Tensor.to": [Case(lambda x: x.to(tl.float64) * x.to("cpu"), In(*M))],
    "Tensor.type_as": [Case(lambda x: x.type_as(x) * 2, In(*M))],
    # --- binary ----------------------------------------------------------------------------------
    "Tensor.__add__": [
        Case(lambda a, b: a + b, In(*M), In(*M)),
        Case(lambda a, b: a + b, In(2, 1, 3), In(4, 1), id="broadcast"),
        Case(lambda a: a + 2.5, In(*M), id="scalar"),
    ],
    "Tensor.__radd__": [Case(lambda a: 2.5 + a, In(*M))],
    "Tensor.add": [Case(lambda a, b: a.add(b, alpha=2.0), In(*M), In(3))],
    "Tensor.__sub__": [
        Case(lambda a, b: a - b, In(*M), In(*M)),
        Case(lambda a, b: a - b, In(3), In(2, 1), id="broadcast"),
        Case(lambda a: a - 1.5, In(*M), id="scalar"),
    ],
    "Tensor.__rsub__": [Case(lambda a: 1.5 - a, In(*M))],
    "Tensor.sub": [Case(lambda a, b: a.sub(b, alpha=-0.5), In(*M), In(1, 3))],
    "Tensor.__mul__": [
        Case(lambda a, b: a * b, In(*M), In(*M)),
        Case(lambda a, b: a * b, In(2, 1, 3), In(4, 1), id="broadcast"),
        Case(lambda a: a * -3.0, In(*M), id="scalar"),
        Case(lambda a: a * a, In(*M), id="same_input"),
    ],
    "Tensor.__rmul__": [Case(lambda a: 0.5 * a, In(*M))],
    "Tensor.mul": [Case(lambda a, b: a.mul(b), In(*M), In(2, 1))],
    "Tensor.__truediv__": [
        Case(lambda a, b: a / b, In(*M), In(*M, kind="nonzero")),
        Case(lambda a, b: a / b, In(2, 3), In(3, kind="nonzero"), id="broadcast"),
        Case(lambda a: a / 4.0, In(*M), id="scalar"),
    ],
    "Tensor.__rtruediv__": [Case(lambda a: 2.0 / a, In(*M, kind="nonzero"))],
    "Tensor.div": [
        Case(lambda a, b: a.div(b), In(*M), In(2, 1, kind="nonzero")),
        Case(
            lambda a, b: a.div(b, rounding_mode="floor"), In(*M), In(*M, kind="nonzero"), id="floor"
        ),
    ],
    "Tensor.__pow__": [
        Case(lambda a, b: a**b, In(*M, kind="positive"), In(*M)),
        Case(lambda a, b: a**b, In(2, 3, kind="positive"), In(3), id="broadcast"),
        Case(lambda a: a**3, In(*M), id="int_exponent"),
        Case(lambda a: a**0.5, In(*M, kind="positive"), id="sqrt"),
    ],
    "Tensor.__rpow__": [Case(lambda a: 2.0**a, In(*M))],
    "Tensor.pow": [Case(lambda a, b: a.pow(b), In(*M, kind="positive"), In(2, 1))],
    "Tensor.maximum": [
        Case(lambda a, b: a.maximum(b), In(*M), In(*M)),
        Case(lambda a, b: a.maximum(b), In(*M), In(3), id="broadcast"),
    ],
    "Tensor.minimum": [Case(lambda a, b: a.minimum(b), In(*M), In(2, 1))],
    "Tensor.max": [
        Case(lambda x: x.max(), In(*M)),
        Case(lambda x: x.max(1).values, In(*M), id="dim"),
        Case(lambda x: x.max(-2, keepdim=True).values, In(3, 2, 2), id="dim_keepdim"),
        Case(lambda a, b: a.max(b), In(*M), In(*M), id="tensor"),
    ],
    "Tensor.min": [
        Case(lambda x: x.min(), In(*M)),
        Case(lambda x: x.min(0).values, In(*M), id="dim"),
        Case(lambda a, b: a.min(b), In(*M), In(3), id="tensor"),
    ],
    "Tensor.where": [Case(lambda a, b: a.where(a > 0, b), In(*M), In(3))],
    # --- reductions ------------------------------------------------------------------------------
    "Tensor.sum": [
        Case(lambda x: x.sum(), In(*M)),
        Case(lambda x: x.sum(1), In(*M), id="dim"),
        Case(lambda x: x.sum((0, -1), keepdim=True), In(2, 3, 2), id="tuple_keepdim"),
    ],
    "Tensor.mean": [
        Case(lambda x: x.mean(), In(*M)),
        Case(lambda x: x.mean(-1), In(*M), id="dim"),
        Case(lambda x: x.mean((0, 2), keepdim=True), In(2, 3, 2), id="tuple_keepdim"),
    ],
    "Tensor.var": [
        Case(lambda x: x.var(), In(*M)),
        Case(lambda x: x.var(1, unbiased=False), In(*M), id="biased"),
        Case(lambda x: x.var((0, 1), keepdim=True), In(2, 2, 2), id="tuple"),
    ],
    "Tensor.std": [
        Case(lambda x: x.std(), In(*M)),
        Case(lambda x: x.std(1, unbiased=False, keepdim=True), In(2, 3), id="biased"),
    ],
    "Tensor.prod": [
        Case(lambda x: x.prod(), In(*M, kind="nonzero")),
        Case(lambda x: x.prod(1), In(*M, kind="nonzero"), id="dim"),
        Case(lambda x: (x * _zero_mask()).prod(1), In(*M, kind="nonzero"), id="with_zero"),
    ],
    "Tensor.amax": [
        Case(lambda x: x.amax(), In(*M)),
        Case(lambda x: x.amax((0, 2), keepdim=True), In(2, 2, 3), id="tuple"),
    ],
    "Tensor.amin": [Case(lambda x: x.amin(1), In(*M))],
    "Tensor.logsumexp": [
        Case(lambda x: x.logsumexp(), In(*M)),
        Case(lambda x: x.logsumexp(-1, keepdim=True), In(*M), id="dim"),
    ],
    "Tensor.softmax": [
        Case(lambda x: x.softmax(-1), In(*M)),
        Case(lambda x: x.softmax(0), In(*M), id="dim0"),
    ],
    "Tensor.log_softmax": [
        Case(lambda x: x.log_softmax(-1), In(*M)),
        Case(lambda x: x.log_softmax(0), In(3, 2), id="dim0"),
    ],
    # --- matmul ----------------------------------------------------------------------------------
    "Tensor.__matmul__": [
        Case(lambda a, b: a @ b, In(2, 3), In(3, 2)),
        Case(lambda a, b: a @ b, In(3), In(3), id="vec_vec"),
        Case(lambda a, b: a @ b, In(3), In(3, 2), id="vec_mat"),
        Case(lambda a, b: a @ b, In(2, 3), In(3), id="mat_vec"),
        Case(lambda a, b: a @ b, In(2, 2, 3), In(2, 3, 2), id="batched"),
        Case(lambda a, b: a @ b, In(2, 1, 2, 3), In(2, 3, 1), id="broadcast_batch"),
        Case(lambda a, b: a @ b, In(2, 2, 3), In(3), id="batched_vec"),
    ],
    "Tensor.__rmatmul__": [Case(lambda a, b: b.__rmatmul__(a), In(2, 3), In(3, 2))],
    "Tensor.matmul": [Case(lambda a, b: a.matmul(b), In(2, 3), In(2, 3, 2))],
    "Tensor.mm": [Case(lambda a, b: a.mm(b), In(2, 3), In(3, 2))],
    "Tensor.bmm": [Case(lambda a, b: a.bmm(b), In(2, 2, 3), In(2, 3, 2))],
    # --- shape -----------------------------------------------------------------------------------
    "Tensor.view": [
        Case(lambda x: x.view(2, 2, 3), In(4, 3)),  # splitting a dim is a view for any strides
        Case(lambda x: x.view(4, 3, 1), In(4, 3), id="add_dim"),
    ],
    "Tensor.view_as": [Case(lambda x: x.view_as(tl.zeros(2, 2, 3)), In(4, 3))],
    "Tensor.reshape": [
        Case(lambda x: x.reshape(-1), In(*M)),
        Case(lambda x: x.reshape(3, 2), In(*M), id="2d"),
    ],
    "Tensor.reshape_as": [Case(lambda x: x.reshape_as(tl.zeros(6)), In(*M))],
    "Tensor.permute": [Case(lambda x: x.permute(2, 0, 1) * _ramp((2, 2, 3)), In(2, 3, 2))],
    "Tensor.transpose": [Case(lambda x: x.transpose(0, -1) * _ramp((2, 3, 2)), In(2, 3, 2))],
    "Tensor.t": [Case(lambda x: x.t() * _ramp((3, 2)), In(*M))],
    "Tensor.T": [Case(lambda x: x.T * _ramp((3, 2)), In(*M))],
    "Tensor.mT": [Case(lambda x: x.mT * _ramp((2, 3, 2)), In(2, 2, 3))],
    "Tensor.expand": [
        Case(lambda x: x.expand(3, 2, 3) * _ramp((3, 2, 3)), In(2, 1)),
        Case(lambda x: x.expand(2, -1) * _ramp((2, 3)), In(1, 3), id="minus_one"),
    ],
    "Tensor.expand_as": [
        Case(lambda x: x.expand_as(tl.zeros(4, 2, 3)) * _ramp((4, 2, 3)), In(2, 3))
    ],
    "Tensor.squeeze": [
        Case(lambda x: x.squeeze() * _ramp((2, 3)), In(2, 1, 3)),
        Case(lambda x: x.squeeze(1) * _ramp((2, 3)), In(2, 1, 3), id="dim"),
    ],
    "Tensor.unsqueeze": [Case(lambda x: x.unsqueeze(1) * _ramp((2, 1, 3)), In(*M))],
    "Tensor.flatten": [
        Case(lambda x: x.flatten() * _ramp((12,)), In(2, 3, 2)),
        Case(lambda x: x.flatten(1) * _ramp((2, 6)), In(2, 3, 2), id="start"),
    ],
    "Tensor.unflatten": [Case(lambda x: x.unflatten(1, (3, 2)) * _ramp((2, 3, 2)), In(2, 6))],
    "Tensor.unfold": [
        Case(lambda x: x.unfold(1, 3, 1) * _ramp((2, 3, 3)), In(2, 5)),  # overlapping windows
        Case(lambda x: x.unfold(0, 2, 2) * _ramp((2, 3, 2)), In(5, 3), id="step2"),
        Case(lambda x: x.unfold(-1, 2, 3) * _ramp((2, 2, 2)), In(2, 7), id="gaps"),
    ],
    "Tensor.narrow": [Case(lambda x: x.narrow(1, 1, 2), In(2, 4))],
    "Tensor.split": [Case(lambda x: _weighted_cat(x.split(2, 1), 1), In(2, 5))],
    "Tensor.chunk": [Case(lambda x: _weighted_cat(x.chunk(3, 0), 0), In(5, 2))],
    "Tensor.repeat": [Case(lambda x: x.repeat(2, 1, 2) * _ramp((2, 2, 6)), In(2, 3))],
    "Tensor.tril": [
        Case(lambda x: x.tril(), In(3, 3)),
        Case(lambda x: x.tril(-1), In(2, 3, 4), id="diag"),
    ],
    "Tensor.triu": [Case(lambda x: x.triu(1), In(3, 4))],
    # --- indexing --------------------------------------------------------------------------------
    "Tensor.__getitem__": [
        Case(lambda x: x[1], In(3, 4), id="int"),
        Case(lambda x: x[:, 1:3], In(3, 4), id="slice"),
        Case(lambda x: x[::2, -3:], In(3, 4), id="step_negative"),
        Case(lambda x: x[None, ..., 1], In(3, 4), id="none_ellipsis"),
        Case(lambda x: x[_idx([0, 2, 0, -1])], In(3, 4), id="int_tensor_repeats"),
        Case(lambda x: x[_idx([[0, 1], [1, 1]]), 1:], In(3, 4), id="int_tensor_2d_mixed"),
        Case(lambda x: x[_idx([0, 2]), _idx([3, -1])], In(3, 4), id="two_tensors"),
        Case(lambda x: x[x > 0], In(3, 4), id="bool_mask"),
        Case(lambda x: x[tl.tensor([True, False, True])], In(3, 4), id="bool_rows"),
        Case(lambda x: x[[1, 1, 0]], In(3, 4), id="list"),
    ],
    "Tensor.index_select": [Case(lambda x: x.index_select(1, _idx([3, 0, 3, 2])), In(2, 4))],
    "Tensor.gather": [
        Case(lambda x: x.gather(1, _idx([[0, 0, 2], [1, 2, 1]])), In(2, 3)),
        Case(lambda x: x.gather(0, _idx([[1, 0], [1, 1]])), In(2, 3), id="smaller_index"),
    ],
    "Tensor.scatter_add": [
        Case(lambda x, s: x.scatter_add(1, _idx([[0, 0, 2], [1, 2, 1]]), s), In(2, 3), In(2, 3)),
        Case(lambda x, s: x.scatter_add(0, _idx([[1, 1]]), s), In(2, 3), In(2, 3), id="src_larger"),
    ],
    "Tensor.masked_fill": [Case(lambda x: x.masked_fill(_mask((2, 3)), -2.0), In(*M))],
    # --- functional ------------------------------------------------------------------------------
    "functional.abs": [Case(lambda x: tl.abs(x), In(*M, kind="nonzero"))],
    "functional.exp": [Case(lambda x: tl.exp(x), In(*M))],
    "functional.log": [Case(lambda x: tl.log(x), In(*M, kind="positive"))],
    "functional.sqrt": [Case(lambda x: tl.sqrt(x), In(*M, kind="positive"))],
    "functional.rsqrt": [Case(lambda x: tl.rsqrt(x), In(*M, kind="positive"))],
    "functional.sin": [Case(lambda x: tl.sin(x), In(*M))],
    "functional.cos": [Case(lambda x: tl.cos(x), In(*M))],
    "functional.tanh": [Case(lambda x: tl.tanh(x), In(*M))],
    "functional.sigmoid": [Case(lambda x: tl.sigmoid(x), In(*M))],
    "functional.relu": [Case(lambda x: tl.relu(x), In(*M, kind="nonzero"))],
    "functional.gelu": [
        Case(lambda x: tl.gelu(x), In(*M)),
        Case(lambda x: tl.gelu(x, "tanh"), In(*M), id="tanh"),
    ],
    "functional.silu": [Case(lambda x: tl.silu(x), In(*M))],
    "functional.softplus": [Case(lambda x: tl.softplus(x), In(*M))],
    "functional.clamp": [Case(lambda x: tl.clamp(x, -0.5, 0.5), In(*M))],
    "functional.maximum": [Case(lambda a, b: tl.maximum(a, b), In(*M), In(2, 1))],
    "functional.minimum": [Case(lambda a, b: tl.minimum(a, b), In(*M), In(*M))],
    "functional.sum": [Case(lambda x: tl.sum(x, -1), In(*M))],
    "functional.mean": [Case(lambda x: tl.mean(x, 0, keepdim=True), In(*M))],
    "functional.var": [Case(lambda x: tl.var(x, 1), In(*M))],
    "functional.std": [Case(lambda x: tl.std(x, unbiased=False), In(*M))],
    "functional.max": [
        Case(lambda x: tl.max(x, 1).values, In(*M)),
        Case(lambda x: tl.max(x), In(*M), id="all"),
    ],
    "functional.min": [Case(lambda x: tl.min(x, 0).values, In(*M))],
    "functional.amax": [Case(lambda x: tl.amax(x, -1), In(*M))],
    "functional.amin": [Case(lambda x: tl.amin(x), In(*M))],
    "functional.prod": [Case(lambda x: tl.prod(x, 0), In(*M, kind="nonzero"))],
    "functional.logsumexp": [Case(lambda x: tl.logsumexp(x, 0), In(*M))],
    "functional.softmax": [Case(lambda x: tl.softmax(x, dim=1), In(*M))],
    "functional.log_softmax": [Case(lambda x: tl.log_softmax(x, dim=-1), In(2, 2, 3))],
    "functional.layer_norm": [
        Case(lambda x: tl.layer_norm(x, 3), In(2, 3)),
        Case(lambda x, w, b: tl.layer_norm(x, 3, w, b), In(2, 3), In(3), In(3), id="affine"),
        Case(
            lambda x, w, b: tl.layer_norm(x, (2, 3), w, b, eps=1e-3),
            In(2, 2, 3),
            In(2, 3),
            In(2, 3),
            id="2d",
        ),
        Case(lambda x, w: tl.layer_norm(x, 4, weight=w), In(3, 4), In(4), id="weight_only"),
    ],
    "functional.matmul": [Case(lambda a, b: tl.matmul(a, b), In(3), In(2, 3, 2))],
    "functional.cat": [
        Case(lambda a, b: tl.cat([a, b, a], 1), In(2, 2), In(2, 3)),
        Case(lambda a, b: tl.cat([a, b], 0), In(1, 3), In(2, 3), id="dim0"),
    ],
    "functional.stack": [Case(lambda a, b: tl.stack([a, b, a], -1), In(*M), In(*M))],
    "functional.split": [Case(lambda x: _weighted_cat(tl.split(x, [1, 3], 1), 1), In(2, 4))],
    "functional.chunk": [Case(lambda x: _weighted_cat(tl.chunk(x, 2, 1), 1), In(2, 5))],
    "functional.tril": [Case(lambda x: tl.tril(x, 1), In(3, 3))],
    "functional.triu": [Case(lambda x: tl.triu(x, -1), In(3, 3))],
    "functional.pad": [
        Case(lambda x: tl.pad(x, (1, 2)), In(*M)),
        Case(lambda x: tl.pad(x, (0, 1, 2, 0), value=1.5), In(*M), id="two_dims"),
    ],
    "functional.where": [
        Case(lambda a, b: tl.where(a > b, a, b), In(*M), In(*M)),
        Case(lambda a, b: tl.where(_mask((2, 3)), a, b), In(2, 1), In(3), id="broadcast"),
        Case(lambda a: tl.where(a > 0, a, 0.0), In(*M), id="scalar"),
    ],
    "functional.gather": [Case(lambda x: tl.gather(x, 0, _idx([[1, 0, 1]])), In(*M))],
    "functional.scatter_add": [
        Case(lambda x, s: tl.scatter_add(x, 0, _idx([[1, 1, 0]]), s), In(*M), In(1, 3))
    ],
    "functional.index_select": [Case(lambda x: tl.index_select(x, 0, _idx([1, 1, 0])), In(*M))],
    "functional.masked_fill": [Case(lambda x: tl.masked_fill(x, _mask((3,)), 0.0), In(*M))],
    "functional.embedding": [
        Case(
            lambda w: tl.embedding(_idx([[0, 2, 0], [3, 3, 3]]), w), In(4, 3)
        ),  # repeats accumulate
    ],
    # --- ordering, reordering, products (PyTorch-compatibility surface) ---------------------------
    "Tensor.topk": [
        Case(lambda x: x.topk(2).values, In(*M, kind="distinct")),
        Case(
            lambda x: x.topk(1, dim=0, largest=False).values,
            In(*M, kind="distinct"),
            id="dim0_smallest",
        ),
    ],
    "functional.topk": [Case(lambda x: tl.topk(x, 2, dim=1).values, In(*M, kind="distinct"))],
    "Tensor.sort": [
        Case(lambda x: x.sort().values, In(*M, kind="distinct")),
        Case(
            lambda x: x.sort(0, descending=True).values, In(3, 2, kind="distinct"), id="dim0_desc"
        ),
    ],
    "functional.sort": [Case(lambda x: tl.sort(x, dim=0).values, In(*M, kind="distinct"))],
    "Tensor.roll": [
        Case(lambda x: x.roll(1, 1), In(*M)),
        Case(lambda x: x.roll(-4), In(*M), id="flat"),
        Case(lambda x: x.roll((1, 2), (0, 1)), In(*M), id="two_dims"),
    ],
    "functional.roll": [Case(lambda x: tl.roll(x, 2, 1), In(*M))],
    "Tensor.flip": [
        Case(lambda x: x.flip(0, 1), In(*M)),
        Case(lambda x: x.flip([1]), In(*M), id="list"),
    ],
    "functional.flip": [Case(lambda x: tl.flip(x, (0,)), In(*M))],
    "Tensor.cumsum": [
        Case(lambda x: x.cumsum(1), In(*M)),
        Case(lambda x: x.cumsum(0), In(*M), id="dim0"),
    ],
    "functional.cumsum": [Case(lambda x: tl.cumsum(x, -1), In(*M))],
    "Tensor.repeat_interleave": [
        Case(lambda x: x.repeat_interleave(2, dim=1), In(*M)),
        Case(lambda x: x.repeat_interleave(tl.tensor([2, 0]), dim=0), In(*M), id="counts"),
    ],
    "functional.repeat_interleave": [Case(lambda x: tl.repeat_interleave(x, 3), In(*M))],
    "Tensor.unbind": [Case(lambda x: x.unbind(1)[2], In(*M))],
    "functional.unbind": [Case(lambda x: tl.unbind(x)[1], In(*M))],
    "Tensor.select": [Case(lambda x: x.select(1, -1), In(*M))],
    "functional.select": [Case(lambda x: tl.select(x, 0, 1), In(*M))],
    "functional.mm": [Case(lambda a, b: tl.mm(a, b), In(2, 3), In(3, 4))],
    "functional.bmm": [Case(lambda a, b: tl.bmm(a, b), In(2, 2, 3), In(2, 3, 2))],
    "Tensor.dot": [Case(lambda a, b: a.dot(b), In(3), In(3))],
    "functional.dot": [Case(lambda a, b: tl.dot(a, b), In(3), In(3))],
    "Tensor.outer": [Case(lambda a, b: a.outer(b), In(2), In(3))],
    "functional.outer": [Case(lambda a, b: tl.outer(a, b), In(3), In(2))],
    "Tensor.diag": [
        Case(lambda x: x.diag(), In(3)),
        Case(lambda x: x.diag(1), In(*M), id="matrix_above"),
        Case(lambda x: x.diag(-1), In(2), id="vector_below"),
    ],
    "functional.diag": [Case(lambda x: tl.diag(x), In(3, 3))],
    "functional.einsum": [
        Case(lambda a, b: tl.einsum("ij,jk->ik", a, b), In(2, 3), In(3, 2)),
        Case(lambda a, b: tl.einsum("bij,bkj->bik", a, b), In(2, 2, 3), In(2, 2, 3), id="batched"),
        Case(lambda a, b: tl.einsum("...i,...i", a, b), In(2, 3), In(2, 3), id="ellipsis_implicit"),
        Case(lambda a: tl.einsum("ij->ji", a), In(*M), id="transpose"),
    ],
    "Tensor.norm": [
        Case(lambda x: x.norm(), In(*M, kind="nonzero")),
        Case(lambda x: x.norm(1, dim=1), In(*M, kind="nonzero"), id="p1"),
        Case(lambda x: x.norm(3, dim=0, keepdim=True), In(*M, kind="nonzero"), id="p3"),
    ],
    "functional.norm": [Case(lambda x: tl.norm(x, dim=-1), In(*M, kind="nonzero"))],
    "functional.pow": [
        Case(lambda a, b: tl.pow(a, b), In(*M, kind="positive"), In(*M)),
        Case(lambda a: tl.pow(a, 3), In(*M), id="scalar_exponent"),
    ],
    "functional.flatten": [Case(lambda x: tl.flatten(x), In(2, 3, 2))],
    "functional.reshape": [Case(lambda x: tl.reshape(x, (3, 2)), In(*M))],
    "functional.transpose": [Case(lambda x: tl.transpose(x, 0, 1), In(*M))],
    "functional.permute": [Case(lambda x: tl.permute(x, (2, 0, 1)), In(2, 3, 2))],
    "functional.squeeze": [Case(lambda x: tl.squeeze(x.unsqueeze(1)), In(*M))],
    "functional.unsqueeze": [Case(lambda x: tl.unsqueeze(x, -1), In(*M))],
    "functional.narrow": [Case(lambda x: tl.narrow(x, 1, 1, 2), In(*M))],
    "functional.t": [Case(lambda x: tl.t(x), In(*M))],
    "functional.clip": [Case(lambda x: tl.clip(x, -0.3, 0.4), In(*M))],
    "functional.neg": [Case(lambda x: tl.neg(x), In(*M))],
    "functional.square": [Case(lambda x: tl.square(x), In(*M))],
    "Tensor.scatter": [
        Case(lambda x, s: x.scatter(1, _idx([[2, 0], [1, 1]]), s), In(*M), In(2, 2)),
        Case(lambda x: x.scatter(0, _idx([[1, 0, 1]]), 0.5), In(*M), id="value"),
    ],
    "functional.scatter": [
        Case(lambda x, s: tl.scatter(x, 0, _idx([[1, 0, 1]]), s), In(*M), In(1, 3))
    ],
    "Tensor.masked_select": [Case(lambda x: x.masked_select(_mask((3,))), In(*M))],
    "functional.masked_select": [Case(lambda x: tl.masked_select(x, _mask((2, 3))), In(*M))],
    "Tensor.remainder": [
        Case(lambda a, b: a.remainder(b), In(*M, kind="positive"), In(*M, kind="positive")),
    ],
    "functional.remainder": [Case(lambda a: tl.remainder(a, 0.7), In(*M))],
    "Tensor.__mod__": [Case(lambda a: a % 0.9, In(*M))],
    "Tensor.__rmod__": [Case(lambda b: 2.5 % b, In(*M, kind="positive"))],
    "functional.div": [Case(lambda a, b: tl.div(a, b), In(*M), In(*M, kind="nonzero"))],
    "functional.meshgrid": [
        Case(lambda a, b: sum(g * (k + 1) for k, g in enumerate(tl.meshgrid(a, b))), In(2), In(3)),
        Case(
            lambda a, b: (lambda g: g[0] * 2.0 + g[1])(tl.meshgrid(a, b, indexing="xy")),
            In(2),
            In(3),
            id="xy",
        ),
    ],
    "Tensor.log1p": [Case(lambda x: x.log1p(), In(*M, kind="positive"))],
    "functional.log1p": [Case(lambda x: tl.log1p(x * 1e-9), In(*M), id="tiny")],
    "Tensor.expm1": [Case(lambda x: x.expm1(), In(*M))],
    "functional.expm1": [Case(lambda x: tl.expm1(x * 1e-9), In(*M), id="tiny")],
    "Tensor.log2": [Case(lambda x: x.log2(), In(*M, kind="positive"))],
    "functional.log2": [Case(lambda x: tl.log2(x), In(*M, kind="positive"))],
    "Tensor.log10": [Case(lambda x: x.log10(), In(*M, kind="positive"))],
    "functional.log10": [Case(lambda x: tl.log10(x), In(*M, kind="positive"))],
    "Tensor.exp2": [Case(lambda x: x.exp2(), In(*M))],
    "functional.exp2": [Case(lambda x: tl.exp2(x), In(*M))],
    "Tensor.erf": [Case(lambda x: x.erf(), In(*M))],
    "functional.erf": [Case(lambda x: tl.erf(x), In(*M))],
    "functional.var_mean": [Case(lambda x: (lambda v, m: v + m)(*tl.var_mean(x, 1)), In(*M))],
    "functional.std_mean": [
        Case(lambda x: (lambda v, m: v * m)(*tl.std_mean(x, 1, correction=0)), In(2, 3))
    ],
    "Tensor.clamp_min": [Case(lambda x: x.clamp_min(-0.2), In(*M))],
    "Tensor.clamp_max": [Case(lambda x: x.clamp_max(0.3), In(*M))],
}


def _ramp(shape):
    """Distinct weights, so a gradient routed to the wrong element cannot pass."""
    n = int(np.prod(shape))
    return tl.tensor(np.linspace(0.5, 2.0, n).reshape(shape))


def _mask(shape):
    rng = np.random.default_rng(1)
    m = rng.random(shape) < 0.5
    m.flat[0], m.flat[-1] = True, False
    return tl.tensor(m)


def _zero_mask():
    return tl.tensor(np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]))


def _weighted_cat(parts, dim):
    return tl.cat([p * float(k + 1) for k, p in enumerate(parts)], dim)


# ----------------------------------------------------------------------------------------------
# Public names that are not differentiable ops, each with the reason.
# ----------------------------------------------------------------------------------------------
NOT_DIFFERENTIABLE = {
    # metadata, conversion out of torchlight, autograd plumbing
    **dict.fromkeys(
        [
            "accumulate_grad",
            "backend",
            "backward",
            "data",
            "detach",
            "detach_",
            "device",
            "dim",
            "dtype",
            "element_size",
            "grad",
            "grad_fn",
            "is_contiguous",
            "is_floating_point",
            "is_leaf",
            "item",
            "ndim",
            "numel",
            "numpy",
            "numpy_view",
            "register_post_accumulate_grad_hook",
            "requires_grad",
            "requires_grad_",
            "retain_grad",
            "shape",
            "size",
            "storage_offset",
            "stride",
            "to_numpy",
            "tolist",
            "__array__",
            "__array_priority__",
            "__dlpack__",
            "__dlpack_device__",
            "__bool__",
            "__float__",
            "__int__",
            "__index__",
            "__len__",
            "__iter__",
            "__repr__",
            "__init__",
            "__hash__",
            "__setitem__",
        ],
        "metadata / conversion / autograd plumbing",
    ),
    # integer or boolean results carry no gradient
    **dict.fromkeys(
        [
            "argmax",
            "argmin",
            "all",
            "any",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "logical_not",
            "long",
            "bool",
            "sign",
            "__eq__",
            "__ne__",
            "__lt__",
            "__le__",
            "__gt__",
            "__ge__",
            "__and__",
            "__rand__",
            "__or__",
            "__ror__",
            "__invert__",
            "functional.argmax",
            "functional.argmin",
        ],
        "integer/bool result (or piecewise constant): no gradient",
    ),
    # in-place updates: their semantics (views, version counter, leaf rule) are in test_autograd_tensor
    **dict.fromkeys(
        [
            "add_",
            "sub_",
            "mul_",
            "div_",
            "clamp_",
            "copy_",
            "fill_",
            "zero_",
            "uniform_",
            "normal_",
            "masked_fill_",
        ],
        "in-place op: checked in test_autograd_tensor.py",
    ),
    # the PyTorch-compatibility surface without gradients
    **dict.fromkeys(
        [
            "argsort",
            "functional.argsort",
            "isclose",
            "functional.isclose",
            "allclose",
            "functional.allclose",
            "equal",
            "functional.equal",
            "multinomial",
            "bernoulli",
            "functional.is_tensor",
            "int",
            "half",
            "bfloat16",
        ],
        "integer/bool/Python result, a random draw, or a dtype torchlight refuses: no gradient",
    ),
    **dict.fromkeys(
        [
            "ndimension",
            "nelement",
            "is_cuda",
            "is_cpu",
            "type",
            "cuda",
            "new_tensor",
            "new_zeros",
            "new_ones",
            "new_full",
            "new_empty",
            "is_complex",
            "get_device",
            "pin_memory",
            "is_pinned",
        ],
        "metadata / new tensors that are not functions of this one",
    ),
    "bernoulli_": "in-place random fill: no gradient",
    **dict.fromkeys(
        [
            "floor",
            "ceil",
            "trunc",
            "round",
            "floor_divide",
            "__floordiv__",
            "__rfloordiv__",
            "functional.floor",
            "functional.ceil",
            "functional.trunc",
            "functional.round",
            "functional.floor_divide",
            "nonzero",
            "argwhere",
            "functional.nonzero",
            "functional.argwhere",
        ],
        "piecewise constant (zero gradient, checked in test_compat_ops.py) or an index result",
    ),
    "scatter_": "in-place op: forward checked in test_compat_ops.py",
    **dict.fromkeys(
        ["exp_", "log_", "sqrt_", "abs_", "neg_", "sigmoid_", "tanh_", "relu_", "pow_"],
        "in-place op: checked in test_compat_ops.py",
    ),
    # a float32 cast cannot be finite-differenced at float64 precision: exact test below
    "float": "float64 -> float32 cast: gradient checked exactly in test_cast_gradients_are_exact",
    # a += b: the in-place op, or the out-of-place one on a graph tensor (gradchecked as __add__ ...)
    **dict.fromkeys(
        ["__iadd__", "__isub__", "__imul__", "__itruediv__"],
        "augmented assignment: checked in test_augmented_assignment.py",
    ),
}

# magic methods that are not ops at all
_IGNORED_DUNDERS = {
    "__class__",
    "__delattr__",
    "__dict__",
    "__dir__",
    "__doc__",
    "__format__",
    "__getattribute__",
    "__getstate__",
    "__init_subclass__",
    "__module__",
    "__new__",
    "__reduce__",
    "__reduce_ex__",
    "__setattr__",
    "__sizeof__",
    "__slots__",
    "__str__",
    "__subclasshook__",
    "__weakref__",
}


def public_ops():
    """Every public Tensor method/property/operator and every functional name."""
    names = set()
    for name, _ in inspect.getmembers(tl.Tensor):
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        if name in _IGNORED_DUNDERS:
            continue
        if name.startswith("__") and name not in vars(tl.Tensor):
            continue  # inherited from object
        names.add(f"Tensor.{name}")
    names |= {f"functional.{n}" for n in functional.__all__}
    return names


def _unlisted(name):
    short = name.split(".", 1)[1]
    return name not in CASES and name not in NOT_DIFFERENTIABLE and short not in NOT_DIFFERENTIABLE


def test_every_differentiable_op_has_a_gradcheck():
    missing = sorted(n for n in public_ops() if _unlisted(n))
    assert not missing, (
        "these public ops have no gradcheck case in test_gradcheck.CASES (or, if they are not "
        f"differentiable, no entry with a reason in NOT_DIFFERENTIABLE): {missing}"
    )


def test_registry_names_real_ops():
    ops = public_ops()
    stale = sorted(n for n in CASES if n not in ops)
    assert not stale, f"CASES lists names that are not public ops: {stale}"
    assert len(CASES) > 100


def test_functional_all_is_exported_by_torchlight():
    for name in functional.__all__:
        assert callable(getattr(tl, name)), name


# ----------------------------------------------------------------------------------------------
# Running the cases
# ----------------------------------------------------------------------------------------------


def _leaf(maker, spec, layout):
    """(leaf tensor, function mapping the leaf to the op's input)."""
    maker.kind = spec.kind
    shape = spec.shape
    if layout == "broadcast":
        small = list(shape)
        big = [k for k, s in enumerate(shape) if s > 1]
        if big:
            small[big[0]] = 1
        elif small:
            small = small[1:]
        _, t = maker.build(tuple(small), "contiguous", requires_grad=True)
        return t, (lambda x: x.expand(*shape))
    _, t = maker.build(shape, layout, requires_grad=True)
    if layout == "sliced" and len(shape) >= 1:
        assert layout_is_view(t), "the sliced layout must give a strided leaf"
    return t, (lambda x: x)


def _params():
    for name in sorted(CASES):
        for k, case in enumerate(CASES[name]):
            for layout in case.layouts:
                marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
                yield pytest.param(
                    name, k, layout, id=f"{name}-{case.id or k}-{layout}", marks=marks
                )


@pytest.mark.parametrize("name, k, layout", list(_params()))
def test_gradcheck(name, k, layout):
    case = CASES[name][k]
    maker = Maker(zlib.crc32(f"{name}/{k}".encode()), np.float64)
    leaves, lifts = zip(*[_leaf(maker, spec, layout) for spec in case.inputs])

    def fn(*xs):
        return case.fn(*[lift(x) for lift, x in zip(lifts, xs)])

    out = fn(*leaves)
    assert out.dtype == tl.float64, f"{name} must keep float64 (got {out.dtype})"
    assert out.requires_grad, f"{name}'s output must require grad"
    assert tl.gradcheck(fn, leaves)
    # gradcheck compares with `>`, which a NaN never satisfies: require finite gradients too
    for leaf in leaves:
        assert leaf.grad is not None and np.isfinite(leaf.grad.numpy()).all(), leaf.grad


def test_gradcheck_catches_a_wrong_gradient():
    """The harness can fail: a Function with a deliberately wrong backward is rejected."""
    from torchlight.autograd import Function, GradcheckError

    class WrongSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # should be 2 x g

    x = tl.tensor([[0.5, -1.0], [2.0, 1.5]], dtype=tl.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="input #0"):
        tl.gradcheck(WrongSquare.apply, (x,))


def test_gradcheck_rejects_a_nan_gradient():
    from torchlight.autograd import Function, GradcheckError

    class NanGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = tl.tensor([1.0, 2.0], dtype=tl.float64, requires_grad=True)
    with pytest.raises(GradcheckError):
        tl.gradcheck(NanGrad.apply, (x,))


@pytest.mark.parametrize("method", ["float", "to", "type_as"])
def test_cast_gradients_are_exact(method):
    """float64 -> float32 -> ...: the gradient flows back as float64 with the exact values."""
    x = tl.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=tl.float64, requires_grad=True)
    cast = {
        "float": lambda t: t.float(),
        "to": lambda t: t.to(tl.float32),
        "type_as": lambda t: t.type_as(tl.zeros(1)),
    }[method](x)
    assert cast.dtype == tl.float32
    w = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
    (cast * w).sum().backward()
    assert x.grad.dtype == tl.float64
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 2.0], [3.0, 4.0]])


def test_int_casts_and_comparisons_carry_no_gradient():
    x = tl.tensor([1.5, -2.0], requires_grad=True)
    for out in (x.long(), x.bool(), x > 0, x == x, x.argmax(), x.sign()):
        assert not out.requires_grad
    # but they can steer a differentiable computation
    y = (x * (x > 0).float()).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0])


def test_embedding_padding_idx_gets_no_gradient_and_repeats_accumulate():
    """padding_idx is deliberately not the derivative (the row is frozen), so it is checked exactly."""
    w = tl.tensor(np.arange(8.0).reshape(4, 2), dtype=tl.float64, requires_grad=True)
    idx = _idx([[0, 1, 1], [3, 1, 0]])
    out = tl.embedding(idx, w, padding_idx=1)
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[idx.numpy()])
    (out * _ramp((2, 3, 2))).sum().backward()
    r = _ramp((2, 3, 2)).numpy()
    expected = np.zeros((4, 2))
    expected[0] = r[0, 0] + r[1, 2]
    expected[3] = r[1, 0]
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)


# --- random shapes, broadcasts and layouts ------------------------------------------------------

_BIN = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "maximum": lambda a, b: tl.maximum(a, b),
    "where": lambda a, b: tl.where(a > b, a * 2, b),
    "matmul_like": lambda a, b: (a * b).sum(-1),
}


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(data=st.data(), op=st.sampled_from(sorted(_BIN)))
def test_gradcheck_binary_random_broadcast(data, op):
    sa, sb = broadcastable_pair(data.draw, 0, 3, 3)
    m = Maker(data.draw(st.integers(0, 2**32 - 1)), np.float64)
    m.kind = "positive" if op in ("pow", "div") else "float"
    _, a = m.build(sa, data.draw(st.sampled_from(LEAF_LAYOUTS)), requires_grad=True)
    m.kind = "nonzero" if op == "div" else "float"
    _, b = m.build(sb, data.draw(st.sampled_from(LEAF_LAYOUTS)), requires_grad=True)
    assert tl.gradcheck(_BIN[op], (a, b))
    assert np.isfinite(a.grad.numpy()).all() and np.isfinite(b.grad.numpy()).all()


_RED = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k, unbiased=False),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "logsumexp": lambda x, d, k: x.logsumexp(d, keepdim=k),
    "prod": lambda x, d, k: x.prod(d, keepdim=k),
    "softmax": lambda x, d, k: x.softmax(d[0] if isinstance(d, tuple) else d),
}


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(data=st.data(), op=st.sampled_from(sorted(_RED)), shape=shapes(1, 3, 1, 3))
def test_gradcheck_reductions_random_dims(data, op, shape):
    n = len(shape)
    dims = data.draw(
        st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda d: d % n)
    )
    dim = tuple(dims) if len(dims) > 1 else dims[0]
    m = Maker(data.draw(st.integers(0, 2**32 - 1)), np.float64, kind="nonzero")
    _, x = m.build(shape, data.draw(st.sampled_from(LEAF_LAYOUTS)), requires_grad=True)
    keepdim = data.draw(st.booleans())
    assert tl.gradcheck(lambda t: _RED[op](t, dim, keepdim), (x,))
    assert np.isfinite(x.grad.numpy()).all()
