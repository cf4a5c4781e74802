"""Second derivatives: ``backward(create_graph=True)`` gives a gradient that is itself
differentiable, through every op whose backward can be recorded, and a clear error (never a
silently partial answer) through the fused kernels that cannot.

Oracle: for ``S(x) = Σ g(x)²`` with ``g = ∇f``, the second backward of ``S`` must equal central
finite differences of ``S`` computed with plain first-order gradients (float64, h = 1e-6).
Inputs stay away from kinks (relu at 0, clamp bounds, ties of max).
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.functions.activation import cross_entropy_rows
from torchlight.tensor.functions.gathering import nll_rows
from torchlight.tensor.functions.recurrent import gru_cell_gates

A = np.array([[0.5, -1.2, 2.0, 0.03], [1.1, 0.2, -0.3, 1.7]])
IDX = [1, 0, 1]

CASES = {
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu() * x,
    "softplus": lambda x: x.softplus(),
    "silu": lambda x: x.silu(),
    "gelu": lambda x: x.gelu(),
    "gelu_tanh": lambda x: x.gelu(approximate="tanh"),
    "where": lambda x: tl.where(x > 0, x * x, -x),
    "masked_fill": lambda x: (x * x).masked_fill(x < 0, 0.0),
    "clamp": lambda x: (x * x).clamp(0.1, 2.0),
    "maximum": lambda x: tl.maximum(x * x, x),
    "broadcast": lambda x: x * tl.tensor([[1.0], [2.0]], dtype=tl.float64) + x[0],
    "mean_centered": lambda x: (x - x.mean(0)) ** 2,
    "var": lambda x: x.var(1),
    "prod": lambda x: x.prod(1),
    "softmax": lambda x: tl.softmax(x, -1),
    "log_softmax": lambda x: tl.log_softmax(x, -1),
    "slices": lambda x: x[:, 1:3] * x[:, :2],
    "unfold": lambda x: x.unfold(1, 2, 1) ** 2,
    "cat_stack_roll": lambda x: tl.stack([tl.cat([x, x * x], 1).roll(1, 1), tl.cat([x, x], 1)]),
    "index_select": lambda x: tl.index_select(x * x, 1, tl.tensor([0, 2, 2])),
    "gather": lambda x: tl.gather(x * x, 1, tl.tensor([[0, 2], [1, 1]])),
    "advanced_index": lambda x: (x * x)[tl.tensor(IDX), tl.tensor([3, 3, 0])],
    "embedding": lambda x: tl.embedding(tl.tensor(IDX), x * x),
    "max_dim": lambda x: tl.max(x * x, 1).values,
    "scatter_add": lambda x: tl.zeros(2, 5, dtype=tl.float64).scatter_add(
        1, tl.tensor([[0, 2, 2, 4], [1, 1, 3, 0]]), x * x
    ),
    "layer_norm": lambda x: tl.layer_norm(
        x, (4,), tl.tensor([0.5, 1.0, 2.0, -1.0], dtype=tl.float64)
    ),
    "layer_norm_2d": lambda x: tl.layer_norm(x, (2, 4)),
    "cross_entropy": lambda x: cross_entropy_rows(
        x, tl.tensor([1, 3]), tl.tensor([1.0, 0.5], dtype=tl.float64)
    ),
    "cross_entropy_mean": lambda x: cross_entropy_rows(
        x, tl.tensor([1, 3]), tl.tensor([0.25, 0.5], dtype=tl.float64), "mean"
    ),
    "nll_rows_mean": lambda x: nll_rows(
        x * x, tl.tensor([0, 2]), tl.tensor([2.0, 0.5], dtype=tl.float64), "mean"
    ),
}


def _second_order_sum(fn, a, create_graph):
    """``S = Σ (∇ Σ fn(x)³)²`` at ``a``; with ``create_graph`` also ``∇S`` (the second backward)."""
    x = tl.tensor(a, requires_grad=True)
    (fn(x) ** 3).sum().backward(create_graph=create_graph)
    g = x.grad
    s = (g * g).sum()
    if not create_graph:
        return s.item(), None
    x.grad = None
    s.backward()
    return s.item(), x.grad.numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_matches_finite_differences(name):
    fn = CASES[name]
    _, got = _second_order_sum(fn, A, create_graph=True)
    h = 1e-6
    want = np.zeros_like(A)
    for i in np.ndindex(A.shape):
        step = np.zeros_like(A)
        step[i] = h
        hi, _ = _second_order_sum(fn, A + step, create_graph=False)
        lo, _ = _second_order_sum(fn, A - step, create_graph=False)
        want[i] = (hi - lo) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


def test_a_fused_recurrent_backward_gives_first_derivatives_and_refuses_the_second():
    # the per-step fused GRU cell (what nn.GRUCell runs) has no recorded backward: the first
    # derivative is right, and a second-order term through it raises instead of being dropped
    def cell(x):
        gi = tl.cat([x, x * x, -x], 1)[:, :9]  # (2, 3H) with H = 3
        return gru_cell_gates(gi, gi * 0.5, x[:, :3])

    x = tl.tensor(A, requires_grad=True)
    (cell(x) ** 3).sum().backward()
    plain = x.grad.numpy()
    x = tl.tensor(A, requires_grad=True)
    (cell(x) ** 3).sum().backward(create_graph=True)
    np.testing.assert_allclose(x.grad.detach().numpy(), plain, rtol=1e-12)
    penalty = (x.grad * x.grad).sum() + (x * x).sum()
    with pytest.raises(tl.AutogradError, match="cannot differentiate twice through FusedGRUCell"):
        penalty.backward()


def test_second_derivative_through_a_dtype_cast():
    # float32 in the middle is too coarse for finite differences: the oracle is the same
    # function without the casts (checked against finite differences above), to float32's
    # precision
    _, got = _second_order_sum(lambda x: (x.float() * x.float()).double(), A, create_graph=True)
    _, want = _second_order_sum(lambda x: x * x, A, create_graph=True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
