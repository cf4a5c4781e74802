"""``Scalar``: every primitive against its hand-derived derivative, and random expressions against
two independent oracles (forward-mode dual numbers and central finite differences)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchlight.autograd import Scalar, gradcheck


def grad_of(f, *values):
    """d f / d each input, by reverse mode."""
    xs = [Scalar(v, requires_grad=True) for v in values]
    f(*xs).backward()
    return [x.grad for x in xs]


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


# (function of Scalars, hand-derived derivative(s), point)
UNARY = [
    (lambda x: -x, lambda x: -1.0, 1.3),
    (lambda x: x.exp(), lambda x: math.exp(x), 0.7),
    (lambda x: x.log(), lambda x: 1.0 / x, 2.5),
    (lambda x: x.tanh(), lambda x: 1.0 - math.tanh(x) ** 2, -0.4),
    (lambda x: x.sigmoid(), lambda x: sigmoid(x) * (1 - sigmoid(x)), 0.9),
    (lambda x: x.relu(), lambda x: 1.0, 1.5),
    (lambda x: x.relu(), lambda x: 0.0, -1.5),
    (lambda x: x**3, lambda x: 3 * x**2, -1.2),
    (lambda x: x**0.5, lambda x: 0.5 / math.sqrt(x), 4.0),
    (lambda x: x**-2, lambda x: -2 * x**-3, 1.5),
    (lambda x: 1.0 / x, lambda x: -1.0 / x**2, 3.0),
    (lambda x: 2.0 - x, lambda x: -1.0, 3.0),
    (lambda x: 3.0 * x, lambda x: 3.0, 3.0),
    (lambda x: x + 4.0, lambda x: 1.0, 3.0),
    (lambda x: 4.0 + x, lambda x: 1.0, 3.0),
]


@pytest.mark.parametrize("f, df, x", UNARY)
def test_unary_derivatives_match_hand_derivation(f, df, x):
    (g,) = grad_of(f, x)
    assert g == pytest.approx(df(x), rel=1e-12, abs=1e-15)


BINARY = [
    (lambda a, b: a + b, lambda a, b: (1.0, 1.0)),
    (lambda a, b: a - b, lambda a, b: (1.0, -1.0)),
    (lambda a, b: a * b, lambda a, b: (b, a)),
    (lambda a, b: a / b, lambda a, b: (1 / b, -a / b**2)),
]


@pytest.mark.parametrize("f, df", BINARY)
def test_binary_derivatives_match_hand_derivation(f, df):
    a, b = 1.7, -0.6
    assert grad_of(f, a, b) == pytest.approx(df(a, b), rel=1e-12)


def test_forward_values():
    a, b = Scalar(2.0), Scalar(-3.0)
    assert (a + b).data == -1.0
    assert (a - b).data == 5.0
    assert (a * b).data == -6.0
    assert (a / b).data == pytest.approx(-2.0 / 3.0)
    assert (a**3).data == 8.0
    assert (-a).data == -2.0
    assert b.relu().data == 0.0
    assert a.exp().data == pytest.approx(math.exp(2.0))
    assert a.log().data == pytest.approx(math.log(2.0))


@pytest.mark.parametrize("x", [0.0, 2.0, -3.0])
def test_pow_zero_has_zero_gradient_everywhere(x):
    assert grad_of(lambda v: v**0, x) == [0.0]
    assert grad_of(lambda v: v**1, x) == [1.0]


def test_sigmoid_is_stable_for_large_inputs():
    # the naive 1/(1+exp(-x)) overflows at x = -1000; the two-branch form must not
    assert Scalar(-1000.0).sigmoid().data == 0.0
    assert Scalar(1000.0).sigmoid().data == 1.0
    assert grad_of(lambda x: x.sigmoid(), -1000.0) == [0.0]


def test_constants_and_non_grad_scalars_get_no_grad():
    x = Scalar(2.0, requires_grad=True)
    c = Scalar(5.0)
    (x * c + 1.0).backward()
    assert x.grad == 5.0
    assert c.grad is None


def test_leaf_and_parents():
    x = Scalar(1.0, requires_grad=True)
    c = Scalar(2.0)
    y = x * c
    assert x.is_leaf and not y.is_leaf
    assert y.requires_grad
    assert y.parents == [x]  # c does not take part in backprop
    assert x.parents == []


def test_result_of_non_grad_inputs_is_a_leaf_without_grad():
    y = Scalar(1.0) * Scalar(2.0)
    assert y.is_leaf and not y.requires_grad


def test_detach_cuts_the_graph():
    x = Scalar(3.0, requires_grad=True)
    y = x * x
    d = y.detach()
    assert d.data == 9.0 and d.is_leaf and not d.requires_grad
    z = d * x  # only the direct x path remains: dz/dx = d = 9
    z.backward()
    assert x.grad == 9.0


def test_requires_grad_():
    x = Scalar(2.0)
    assert x.requires_grad_() is x and x.requires_grad
    (x * x).backward()
    assert x.grad == 4.0
    x.requires_grad_(False)
    assert not (x * x).requires_grad


def test_backward_with_explicit_seed():
    x = Scalar(2.0, requires_grad=True)
    (x * x).backward(10.0)  # seed dL/dy = 10
    assert x.grad == 40.0


def test_repr():
    x = Scalar(1.5, requires_grad=True)
    assert repr(x) == "Scalar(1.5)"
    (x * 2).backward()
    assert repr(x) == "Scalar(1.5, grad=2)"


def test_gradcheck_on_scalar_functions():
    x, y = Scalar(0.3, requires_grad=True), Scalar(-1.1, requires_grad=True)
    assert gradcheck(lambda a, b: (a * b + a.tanh()) / (b**2 + 1.0), (x, y))
    assert gradcheck(lambda a: a.sigmoid().log() * a.exp(), (x,))


# --- random expressions ----------------------------------------------------------------------
N_VARS = 3
SMOOTH_UNARY = ["neg", "tanh", "sigmoid", "square", "cube"]

leaves = st.one_of(
    st.integers(0, N_VARS - 1).map(lambda i: ("var", i)),
    st.floats(-2.0, 2.0, allow_nan=False).map(lambda c: ("const", c)),
)


def expressions(unary):
    return st.recursive(
        leaves,
        lambda sub: st.one_of(
            st.tuples(st.sampled_from(["add", "sub", "mul"]), sub, sub),
            st.tuples(st.sampled_from(unary), sub),
        ),
        max_leaves=10,
    )


class Dual:
    """Forward-mode dual number a + b*eps: an exact derivative oracle independent of the engine."""

    def __init__(self, v, d=0.0):
        self.v, self.d = v, d

    def __add__(self, o):
        return Dual(self.v + o.v, self.d + o.d)

    def __sub__(self, o):
        return Dual(self.v - o.v, self.d - o.d)

    def __mul__(self, o):
        return Dual(self.v * o.v, self.d * o.v + self.v * o.d)


def _apply(op, a):
    if isinstance(a, Dual):
        if op == "neg":
            return Dual(-a.v, -a.d)
        if op == "tanh":
            t = math.tanh(a.v)
            return Dual(t, (1 - t * t) * a.d)
        if op == "sigmoid":
            s = sigmoid(a.v)
            return Dual(s, s * (1 - s) * a.d)
        if op == "relu":
            return Dual(max(a.v, 0.0), a.d if a.v > 0 else 0.0)
        if op == "square":
            return Dual(a.v**2, 2 * a.v * a.d)
        if op == "cube":
            return Dual(a.v**3, 3 * a.v**2 * a.d)
    if isinstance(a, Scalar):
        return {
            "neg": lambda: -a,
            "tanh": a.tanh,
            "sigmoid": a.sigmoid,
            "relu": a.relu,
            "square": lambda: a**2,
            "cube": lambda: a**3,
        }[op]()
    return {
        "neg": lambda: -a,
        "tanh": lambda: math.tanh(a),
        "sigmoid": lambda: sigmoid(a),
        "relu": lambda: max(a, 0.0),
        "square": lambda: a**2,
        "cube": lambda: a**3,
    }[op]()


def evaluate(expr, xs, const):
    kind = expr[0]
    if kind == "var":
        return xs[expr[1]]
    if kind == "const":
        return const(expr[1])
    if kind in ("add", "sub", "mul"):
        a, b = evaluate(expr[1], xs, const), evaluate(expr[2], xs, const)
        return a + b if kind == "add" else a - b if kind == "sub" else a * b
    return _apply(kind, evaluate(expr[1], xs, const))


points = st.lists(st.floats(-1.5, 1.5, allow_nan=False), min_size=N_VARS, max_size=N_VARS)


@given(expressions(SMOOTH_UNARY + ["relu"]), points)
def test_random_expressions_match_forward_mode(expr, values):
    xs = [Scalar(v, requires_grad=True) for v in values]
    out = evaluate(expr, xs, lambda c: c)
    if not isinstance(out, Scalar) or not out.requires_grad:  # the expression uses no variable
        return
    out.backward()
    for i, x in enumerate(xs):
        duals = [Dual(v, 1.0 if j == i else 0.0) for j, v in enumerate(values)]
        expected = evaluate(expr, duals, lambda c: Dual(c)).d
        got = 0.0 if x.grad is None else x.grad
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9), (expr, i)


@given(expressions(SMOOTH_UNARY), points)
def test_random_smooth_expressions_match_finite_differences(expr, values):
    xs = [Scalar(v, requires_grad=True) for v in values]
    out = evaluate(expr, xs, lambda c: c)
    if not isinstance(out, Scalar) or not out.requires_grad:
        return
    out.backward()
    eps = 1e-6
    for i, x in enumerate(xs):
        up = list(values)
        down = list(values)
        up[i] += eps
        down[i] -= eps
        f_up = evaluate(expr, up, lambda c: c)
        f_down = evaluate(expr, down, lambda c: c)
        numeric = (f_up - f_down) / (2 * eps)
        got = 0.0 if x.grad is None else x.grad
        scale = 1.0 + abs(f_up) + abs(numeric)  # rounding in f grows with |f|
        assert abs(got - numeric) <= 1e-5 * scale, (expr, i, got, numeric)


@given(points, st.integers(1, 4))
def test_grad_accumulates_linearly_over_repeated_backward(values, k):
    x = Scalar(values[0], requires_grad=True)
    y = (x * x).tanh() * values[1]
    for _ in range(k):
        y.backward(retain_graph=True)
    single = Scalar(values[0], requires_grad=True)
    ((single * single).tanh() * values[1]).backward()
    assert x.grad == pytest.approx(k * single.grad, rel=1e-12, abs=1e-300)
