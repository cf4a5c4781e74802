"""``gradcheck`` must pass correct backwards and catch wrong ones, naming the input and element.

Besides ``Scalar`` it is exercised with ``Vec``, a tiny list-backed vector variable written here,
so that "which element disagrees" means something and the finite-difference protocol
(``_fd_flat``/``_fd_like``/``_fd_set``) is tested on a multi-element variable.
"""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchlight.autograd import (
    AutogradError,
    Function,
    GradcheckError,
    Scalar,
    backward,
    gradcheck,
)


class Vec:
    def __init__(self, data, requires_grad=False):
        self.data = [float(v) for v in data]
        self.grad = None
        self.requires_grad = requires_grad
        self._history = None

    @property
    def shape(self):
        return (len(self.data),)

    def accumulate_grad(self, g):
        self.grad = g if self.grad is None else self.grad + g

    def backward(self, grad):
        backward(self, grad)

    def __add__(self, other):
        return Vec([a + b for a, b in zip(self.data, other.data)])

    def _fd_flat(self):
        return list(self.data)

    def _fd_like(self, values):
        return Vec(values)

    def _fd_set(self, i, value):
        self.data[i] = float(value)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(list(a.data), list(b.data))
        return Vec([x * y for x, y in zip(a.data, b.data)])

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return Vec([gi * y for gi, y in zip(g.data, b)]), Vec([gi * x for gi, x in zip(g.data, a)])


class CumSum(Function):
    """y_i = sum_{j<=i} x_j, so dL/dx_j = sum_{i>=j} g_i (every output depends on many inputs)."""

    @staticmethod
    def forward(ctx, a):
        out, s = [], 0.0
        for v in a.data:
            s += v
            out.append(s)
        return Vec(out)

    @staticmethod
    def backward(ctx, g):
        out, s = [], 0.0
        for v in reversed(g.data):
            s += v
            out.append(s)
        return Vec(out[::-1])


class BuggyMul(Mul):
    """Right for every element except #2 of the second input: a deliberately wrong backward."""

    @staticmethod
    def backward(ctx, g):
        ga, gb = Mul.backward(ctx, g)
        gb.data[2] *= 1.01
        return ga, gb


class BuggyTanh(Function):
    """Scalar tanh whose backward forgot the square: 1 - y instead of 1 - y^2."""

    @staticmethod
    def forward(ctx, a):
        y = math.tanh(a.data)
        ctx.save_for_backward(y)
        return Scalar(y)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1.0 - y)


def test_passes_on_correct_vector_functions():
    a = Vec([0.5, -1.0, 2.0, 0.25], requires_grad=True)
    b = Vec([1.5, 0.3, -0.7, 4.0], requires_grad=True)
    assert gradcheck(Mul.apply, (a, b))
    assert gradcheck(lambda x: CumSum.apply(Mul.apply(x, x)), (a,))


def test_reports_input_and_element_of_a_wrong_gradient():
    a = Vec([0.5, -1.0, 2.0, 0.25], requires_grad=True)
    b = Vec([1.5, 0.3, -0.7, 4.0], requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(BuggyMul.apply, (a, b))
    msg = str(info.value)
    assert "input #1" in msg
    assert "element 2" in msg
    assert "(4,)" in msg
    assert "analytic" in msg and "numeric" in msg


def test_input_index_counts_constants_too():
    # the wrong gradient belongs to the argument at position 2 (after a constant)
    class Weighted(Function):
        @staticmethod
        def forward(ctx, c, a, b):
            return Scalar(c.data * a.data + b.data**2)

        @staticmethod
        def backward(ctx, g):
            return None, g * 0.0, g * 2.0  # d/da is wrong (should be c); d/db = 2b is right at b=1

    c, a, b = Scalar(3.0), Scalar(1.0, requires_grad=True), Scalar(1.0, requires_grad=True)
    with pytest.raises(GradcheckError, match="input #1"):
        gradcheck(Weighted.apply, (c, a, b))


def test_catches_a_wrong_scalar_backward():
    x = Scalar(0.7, requires_grad=True)
    with pytest.raises(GradcheckError, match=r"input #0 .*element 0"):
        gradcheck(BuggyTanh.apply, (x,))
    assert gradcheck(lambda v: v.tanh(), (x,))


def test_raise_exception_false_returns_false():
    x = Scalar(0.7, requires_grad=True)
    assert gradcheck(BuggyTanh.apply, (x,), raise_exception=False) is False
    assert gradcheck(lambda v: v.tanh(), x, raise_exception=False) is True  # bare input is fine


def test_missing_gradient_is_caught():
    # a backward that returns None for an input that matters: analytic 0 vs numeric != 0
    class Forgetful(Function):
        @staticmethod
        def forward(ctx, a, b):
            return Scalar(a.data * b.data)

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None

    a, b = Scalar(3.0, requires_grad=True), Scalar(2.0, requires_grad=True)
    with pytest.raises(GradcheckError, match="input #1"):
        gradcheck(Forgetful.apply, (a, b))


def test_no_checkable_input_raises():
    with pytest.raises(GradcheckError, match="requires_grad"):
        gradcheck(lambda v: v * 2.0, (Scalar(1.0),))


def test_inputs_are_restored_after_the_check():
    a = Vec([0.5, -1.0, 2.0], requires_grad=True)
    gradcheck(lambda x: Mul.apply(x, x), (a,))
    assert a.data == [0.5, -1.0, 2.0]


def test_error_family():
    assert issubclass(GradcheckError, AutogradError)
    assert issubclass(GradcheckError, AssertionError)  # reads as a failed assertion in pytest


@given(
    st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=6),
    st.data(),
    st.floats(1e-7, 0.5),
)
def test_gradient_errors_are_caught_wherever_they_are(values, data, rel):
    """Scale one element's gradient by (1 + rel): gradcheck fails when that clearly exceeds its
    tolerance (atol 1e-5 + rtol 1e-4 * |numeric|) and passes when it is clearly within."""
    bad = data.draw(st.integers(0, len(values) - 1))

    class Scaled(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(list(a.data))
            return Vec([v**3 for v in a.data])

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            out = [gi * 3 * v * v for gi, v in zip(g.data, a)]
            out[bad] *= 1 + rel
            return Vec(out)

    x = Vec(values, requires_grad=True)
    ok = gradcheck(Scaled.apply, (x,), raise_exception=False)
    analytic = x.grad.data[bad]  # gradcheck leaves the backpropagated gradient in .grad
    exact = analytic / (1 + rel)
    error, tol = abs(analytic - exact), 1e-5 + 1e-4 * abs(exact)
    if error > 2 * tol:
        assert not ok
    elif error < tol / 2:
        assert ok
