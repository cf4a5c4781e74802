"""The engine: topological order, chain rule, path sums, accumulation, graph freeing, create_graph."""

import math
import sys
import weakref

import pytest

from torchlight.autograd import (
    AutogradError,
    Function,
    Scalar,
    backward,
    is_grad_enabled,
    topological_order,
)


def leaf(v):
    return Scalar(v, requires_grad=True)


def test_chain_rule():
    # y = tanh(x^2 * 3) -> dy/dx = (1 - y^2) * 6x
    x = leaf(0.4)
    y = (x**2 * 3.0).tanh()
    y.backward()
    assert x.grad == pytest.approx((1 - math.tanh(0.48) ** 2) * 6 * 0.4, rel=1e-12)


def test_diamond_sums_gradients_along_both_paths():
    # x -> a = 2x, b = x^2 -> y = a * b = 2x^3; dy/dx = 6x^2, reached through two paths
    x = leaf(1.5)
    a = x * 2.0
    b = x * x
    y = a * b
    y.backward()
    assert x.grad == pytest.approx(6 * 1.5**2, rel=1e-12)


def test_shared_subexpression_is_backpropagated_once():
    # h is used three times; its own backward must run once with the summed gradient
    calls = []

    class Count(Function):
        @staticmethod
        def forward(ctx, a):
            return Scalar(a.data)

        @staticmethod
        def backward(ctx, g):
            calls.append(g.data)
            return g

    x = leaf(2.0)
    h = Count.apply(x)
    y = h * h + h
    y.backward()
    assert calls == [pytest.approx(2 * 2.0 + 1)]  # dy/dh = 2h + 1, delivered in one call
    assert x.grad == 5.0


def test_grad_accumulates_across_backward_calls():
    x = leaf(3.0)
    (x * x).backward()
    (x * 4.0).backward()
    assert x.grad == 6.0 + 4.0
    x.grad = None
    (x * 4.0).backward()
    assert x.grad == 4.0


def test_leaf_and_non_leaf_grads():
    x = leaf(2.0)
    h = x * 3.0
    y = h * h
    y.backward()
    assert x.is_leaf and not h.is_leaf and not y.is_leaf
    assert x.grad == 2 * 6.0 * 3.0
    assert h.grad is None and y.grad is None  # non-leaves keep no .grad by default


def test_retains_grad_keeps_a_non_leaf_gradient():
    x = leaf(2.0)
    h = (x * 3.0).retain_grad()
    y = (h * h).retain_grad()
    y.backward()
    assert h.grad == 2 * 6.0
    assert y.grad == 1.0
    assert x.grad == 36.0


def test_only_a_retained_node_remembers_its_variable():
    x = leaf(2.0)
    h = x * 3.0
    assert h._history.output is None  # no reference, weak or strong, unless asked
    assert h.retain_grad() is h and h._history.output() is h
    (h * h).backward()
    assert h.grad == 12.0


def test_leaf_root():
    x = leaf(2.0)
    x.backward(5.0)
    assert x.grad == 5.0


def test_backward_on_a_value_without_grad_raises():
    with pytest.raises(AutogradError, match="requires_grad=True"):
        Scalar(1.0).backward()
    with pytest.raises(AutogradError):
        (Scalar(1.0) * 2.0).backward()


def test_topological_order_puts_every_node_before_its_inputs():
    x, w = leaf(1.0), leaf(2.0)
    c = Scalar(5.0)  # does not require grad: not part of the order
    a = x * w
    b = a + x
    y = a * b * c
    order = topological_order(y)
    pos = {id(v): i for i, v in enumerate(order)}
    assert order[0] is y
    assert len(order) == len(pos)  # each node once
    assert id(c) not in pos
    for v in order:
        if v._history is not None:
            for p in v._history.parents:
                assert pos[id(v)] < pos[id(p)]
    # computed variables take part through their History nodes (the graph links those)
    assert {id(x), id(w), id(a._history), id(b._history)} <= set(pos)


def test_the_graph_does_not_keep_computed_values_alive():
    """Only what forward saved survives: an intermediate the program dropped is freed, and
    backward still reaches the leaves through its node (and a retained grad reaches a variable
    that is still alive)."""
    x = leaf(2.0)
    h = x + 1.0  # addition saves nothing for backward
    ref = weakref.ref(h)
    y = h * 4.0
    del h
    assert ref() is None
    kept = x * 5.0
    z = y + kept
    kept.retain_grad()  # asked after it was used: the node passes the gradient on
    z.backward()
    assert x.grad == 4.0 + 5.0 and kept.grad == 1.0


def unrolled_rnn(w, steps, h0=0.1, u=0.5):
    h = Scalar(h0)
    for _ in range(steps):
        h = (w * h + u).tanh()
    return h


def test_ten_thousand_step_chain_has_no_recursion_error():
    steps = 10_000
    assert sys.getrecursionlimit() < 3 * steps  # a recursive sort would fail here
    w = leaf(0.9)
    h = unrolled_rnn(w, steps)  # 30,000 recorded ops
    h.backward()
    # forward-mode reference: dh_{t+1}/dw = (1 - h_{t+1}^2) * (h_t + w * dh_t/dw)
    hv, dv = 0.1, 0.0
    for _ in range(steps):
        new = math.tanh(0.9 * hv + 0.5)
        dv = (1 - new * new) * (hv + 0.9 * dv)
        hv = new
    assert h.data == pytest.approx(hv, rel=1e-12)
    assert w.grad == pytest.approx(dv, rel=1e-9)


def test_second_backward_through_freed_graph_raises_helpfully():
    x = leaf(2.0)
    y = x * x
    y.backward()
    with pytest.raises(AutogradError) as info:
        y.backward()
    msg = str(info.value)
    assert "second time" in msg and "retain_graph=True" in msg
    assert x.grad == 4.0


def test_retain_graph_allows_a_second_backward_then_frees():
    x = leaf(2.0)
    y = (x * x).exp()
    y.backward(retain_graph=True)
    first = x.grad
    y.backward()  # allowed: the graph was retained; this one frees it
    assert x.grad == pytest.approx(2 * first)
    with pytest.raises(AutogradError, match="retain_graph"):
        y.backward()


def test_grad_mode_is_off_during_backward_and_restored_after():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a):
            return Scalar(a.data)

        @staticmethod
        def backward(ctx, g):
            seen.append(is_grad_enabled())
            return g

    x = leaf(1.0)
    Probe.apply(x).backward()
    assert seen == [False]
    assert is_grad_enabled()


def test_grad_mode_is_restored_when_a_backward_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a):
            return Scalar(a.data)

        @staticmethod
        def backward(ctx, g):
            raise ValueError("bad backward")

    y = Bad.apply(leaf(1.0))
    with pytest.raises(ValueError, match="bad backward"):
        backward(y, Scalar(1.0), create_graph=True)
    assert is_grad_enabled()


# --- create_graph ----------------------------------------------------------------------------
class KeepGrad(Scalar):
    """A leaf that stores its gradient as a Scalar (with its graph), as a Tensor does.

    ``Scalar`` itself stores ``.grad`` as a float, so higher-order derivatives are exercised with
    this subclass and Functions that save the variables (not their floats).
    """

    __slots__ = ()

    def accumulate_grad(self, g):
        self.grad = g if self.grad is None else self.grad + g


class Cube(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return Scalar(a.data**3)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 3.0 * a * a  # built from recorded ops when create_graph=True


def test_create_graph_records_the_backward_pass():
    x = KeepGrad(2.0, requires_grad=True)
    y = Cube.apply(x)
    backward(y, Scalar(1.0), create_graph=True)
    g = x.grad
    assert isinstance(g, Scalar) and g.data == 12.0  # 3x^2
    assert g.requires_grad and g._history is not None
    x.grad = None
    g.backward()  # d(3x^2)/dx = 6x
    assert x.grad.data == 12.0
    # create_graph implies retain_graph: the first-order graph is still usable
    x.grad = None
    backward(y, Scalar(1.0))
    assert x.grad.data == 12.0


def test_without_create_graph_the_gradient_has_no_graph():
    x = KeepGrad(2.0, requires_grad=True)
    backward(Cube.apply(x), Scalar(1.0))
    assert x.grad.data == 12.0 and not x.grad.requires_grad


class VarMul(Function):
    """a * b saving the variables, so its backward is itself differentiable."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Scalar(a.data * b.data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


def test_second_derivative_of_a_composite():
    # f = x^3 * x = x^4 via two paths; f'' = 12x^2
    x = KeepGrad(1.5, requires_grad=True)
    f = VarMul.apply(Cube.apply(x), x)
    backward(f, Scalar(1.0), create_graph=True)
    first = x.grad
    assert first.data == pytest.approx(4 * 1.5**3)
    x.grad = None
    first.backward()
    assert x.grad.data == pytest.approx(12 * 1.5**2)


class _KeepsGradVariable(Scalar):
    """A leaf that keeps the gradient variable itself (``Scalar.grad`` keeps a float), so a
    gradient taken with create_graph=True can be differentiated again."""

    __slots__ = ("kept",)

    def accumulate_grad(self, g):
        self.kept = g


def _square(graph_backward):
    class Square(Function):  # y = x², dy/dx = 2x
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return Scalar(x.data**2)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            if graph_backward:
                return 2.0 * x * g  # recorded ops: differentiable again
            return Scalar(2.0 * x.data * g.data)  # computed outside the graph, like a fused kernel

    return Square


def test_create_graph_through_a_recorded_backward_gives_the_second_derivative():
    x = _KeepsGradVariable(3.0, requires_grad=True)
    backward(_square(True).apply(x), Scalar(1.0), create_graph=True)
    g = x.kept
    assert g.data == 6.0 and g.requires_grad
    backward(g, Scalar(1.0))
    assert x.kept.data == 2.0  # d²(x²)/dx²


def test_differentiating_twice_through_a_backward_outside_the_graph_raises():
    # The first derivative is right; the second would silently miss this node's share, so
    # backpropagating into the gradient raises and names the function instead.
    x = _KeepsGradVariable(3.0, requires_grad=True)
    backward(_square(False).apply(x), Scalar(1.0), create_graph=True)
    g = x.kept
    assert g.data == 6.0 and g.requires_grad
    with pytest.raises(AutogradError, match="cannot differentiate twice through Square"):
        backward(g, Scalar(1.0))
    # without create_graph nothing is marked: the gradient is a plain value
    x = _KeepsGradVariable(3.0, requires_grad=True)
    backward(_square(False).apply(x), Scalar(1.0))
    assert x.kept.data == 6.0 and not x.kept.requires_grad
