"""Functions marked ``direct_forward`` really compute their output directly.

``Function.apply`` (and its short forms ``apply_binary`` / ``apply_unary``) skips switching
recording off around the ``forward`` of such a Function: an op applied inside it would then be
recorded as a node of its own. These tests run every marked Function with a tracer installed
(where every apply, nested or not, goes through ``_apply_traced``) and check that none applies
another Function from inside its forward; and that the short forms give the graph and gradients
that ``apply`` gives.
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.autograd import Function
from torchlight.tensor.functions import pointwise as P
from torchlight.tensor.functions.linalg import linear


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _exercise():
    """Ops that reach every Function marked ``direct_forward``, with and without gradients."""
    x = tl.randn(3, 4, requires_grad=True)
    y = tl.randn(3, 4, requires_grad=True)
    w = tl.randn(5, 4, requires_grad=True)
    b = tl.randn(5, requires_grad=True)
    out = [x + y, x - y, x * y, x / (y.abs() + 1.0), x.abs() ** y, tl.maximum(x, y)]
    out += [tl.minimum(x, y), x.tanh(), -x, x.to(tl.float64), x.view(4, 3), x.permute(1, 0)]
    out += [x[:, None].expand(3, 2, 4), x[1:], x @ w.t(), linear(x, w, b)]
    out += [tl.cat([x, y], 1), tl.stack([x, y]), x.softmax(1), x.log_softmax(1), x.narrow(1, 0, 2)]
    out += [x.select(0, 1), linear(x, w), x.leaky_relu(0.2), x.roll(1, 1)]
    with tl.no_grad():
        out += [x * y, x.view(12), tl.cat([x, y])]
    return out


def test_no_direct_forward_applies_another_function(monkeypatch):
    inside, seen, nested = [], set(), []
    original = Function._apply_traced.__func__

    def watched(cls, prev, args, kwargs):
        if inside and inside[-1].direct_forward:
            nested.append((inside[-1].__name__, cls.__name__))
        seen.add(cls)
        inside.append(cls)
        try:
            return original(cls, prev, args, kwargs)
        finally:
            inside.pop()

    monkeypatch.setattr(Function, "_apply_traced", classmethod(watched))
    Function.tracers.append(lambda *a: None)
    try:
        _exercise()
    finally:
        Function.tracers.pop()
    assert nested == []
    marked = {
        c
        for c in _subclasses(Function)
        if c.__dict__.get("direct_forward") and c.__module__.startswith("torchlight.")
    }
    assert marked - seen == set(), f"not exercised here: {marked - seen}"


def _leaves():
    rng = np.random.default_rng(0)
    return [tl.tensor(rng.standard_normal((2, 3)), requires_grad=True) for _ in range(2)]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum"])
def test_apply_binary_matches_apply(op):
    a, b = _leaves()
    long = P._BINARY[op].apply(a, b)
    short = P._BINARY[op].apply_binary(a, b)
    np.testing.assert_array_equal(short.detach().numpy(), long.detach().numpy())
    assert short._history.fn is long._history.fn
    assert short._history.inputs == long._history.inputs
    assert short._history.ctx.needs_input_grad == long._history.ctx.needs_input_grad
    g = tl.ones(2, 3)
    long.backward(g)
    grads = [t.grad.numpy().copy() for t in (a, b)]
    a.grad = b.grad = None
    short.backward(g)
    for t, expected in zip((a, b), grads):
        np.testing.assert_array_equal(t.grad.numpy(), expected)


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "neg"])
def test_apply_unary_matches_apply_through_a_computed_input(op):
    a, _ = _leaves()
    h = a * 2.0  # a computed input: linked through its node
    long, short = P.Unary.apply(h, op), P.Unary.apply_unary(h, op)
    np.testing.assert_array_equal(short.detach().numpy(), long.detach().numpy())
    assert short._history.inputs == long._history.inputs == (h._history, op)
    long.sum().backward(retain_graph=True)
    expected = a.grad.numpy().copy()
    a.grad = None
    short.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), expected)


def test_short_forms_without_gradients_record_nothing():
    a, b = tl.ones(2), tl.ones(2)
    assert P.Add.apply_binary(a, b)._history is None
    with tl.no_grad():
        assert P.Unary.apply_unary(tl.ones(2, requires_grad=True), "exp")._history is None
