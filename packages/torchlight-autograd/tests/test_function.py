"""``Function.apply``, ``Context`` and ``History``: what gets recorded, saved, checked and freed."""

from contextlib import nullcontext

import pytest

from torchlight.autograd import (
    AutogradError,
    Context,
    Function,
    History,
    Scalar,
    TorchlightError,
    is_grad_enabled,
    no_grad,
)


class Versioned(Scalar):
    """A Scalar with a version cell, as Tensor has: in-place ops bump ``_version[0]``."""

    __slots__ = ("_version",)

    def __init__(self, data, requires_grad=False):
        super().__init__(data, requires_grad)
        self._version = [0]

    def mul_(self, k):
        self.data *= k
        self._version[0] += 1
        return self


class SaveInputs(Function):
    """y = a * b, saving the variables themselves (not their floats) so versions are tracked."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.note = "kept"
        return Scalar(a.data * b.data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b.data, g * a.data


class Spy(Function):
    """Records what forward saw, to check the recording switch and the context it gets."""

    seen = {}

    @staticmethod
    def forward(ctx, a, k=1.0):
        needs = ctx.needs_input_grad
        Spy.seen = {"grad_enabled": is_grad_enabled(), "needs": needs and list(needs), "k": k}
        return Scalar(a.data * k)

    @staticmethod
    def backward(ctx, g):
        return g * 2.0  # one gradient, returned bare (not a 1-tuple)


def test_apply_records_history_when_an_input_requires_grad():
    a, b = Scalar(2.0, requires_grad=True), Scalar(3.0)
    y = SaveInputs.apply(a, b)
    assert y.requires_grad
    assert isinstance(y._history, History)
    assert y._history.fn is SaveInputs
    assert y._history.inputs == (a, b)
    assert y._history.parents == [a]
    assert list(y._history.ctx.needs_input_grad) == [True, False]


def test_apply_records_nothing_without_grad_inputs():
    y = SaveInputs.apply(Scalar(2.0), Scalar(3.0))
    assert y._history is None and not y.requires_grad


def test_apply_records_nothing_under_no_grad():
    a = Scalar(2.0, requires_grad=True)
    with no_grad():
        y = SaveInputs.apply(a, a)
    assert y._history is None and not y.requires_grad


def test_forward_runs_with_recording_off_and_sees_kwargs():
    a = Scalar(2.0, requires_grad=True)
    y = Spy.apply(a, k=3.0)
    assert Spy.seen == {"grad_enabled": False, "needs": [True], "k": 3.0}
    assert is_grad_enabled()  # restored after forward
    assert y.data == 6.0
    y.backward()
    assert a.grad == 2.0  # a bare (non-tuple) gradient is accepted


def test_grad_mode_is_restored_when_forward_raises():
    class Boom(Function):
        @staticmethod
        def forward(ctx, a):
            raise ValueError("boom")

    for requires_grad in (True, False):
        with pytest.raises(ValueError, match="boom"):
            Boom.apply(Scalar(1.0, requires_grad=requires_grad))
        assert is_grad_enabled()


def test_base_function_must_be_subclassed():
    with pytest.raises(NotImplementedError):
        Function.apply(Scalar(1.0, requires_grad=True))
    with pytest.raises(NotImplementedError):
        Function.backward(Context(), 1.0)


def test_history_backprop_drops_none_and_non_grad_inputs():
    class TwoOut(Function):
        @staticmethod
        def forward(ctx, a, b, c):
            return Scalar(a.data + b.data + c.data)

        @staticmethod
        def backward(ctx, g):
            return g, g, None  # no gradient for c

    a, b, c = (Scalar(1.0, requires_grad=True), Scalar(2.0), Scalar(3.0, requires_grad=True))
    y = TwoOut.apply(a, b, c)
    pairs = y._history.backprop(1.0)
    assert [(v is a, g) for v, g in pairs] == [(True, 1.0)]


def test_context_saves_and_returns_values():
    ctx = Context()
    ctx.save_for_backward(1.0, "x", None)
    assert ctx.saved_tensors == (1.0, "x", None)
    assert ctx.saved_values == (1.0, "x", None)


def test_release_frees_saved_values_and_attributes():
    ctx = Context()
    ctx.save_for_backward(Scalar(1.0))
    ctx.dim = 3
    ctx.release()
    with pytest.raises(AutogradError, match="retain_graph=True"):
        ctx.saved_tensors
    with pytest.raises(AutogradError, match="second time"):
        ctx.dim  # extra attributes are freed too, with the same explanation


def test_release_of_an_empty_context_is_harmless():
    # a Function that saved nothing (e.g. Add) can be backpropagated again, as in PyTorch
    ctx = Context()
    ctx.release()
    assert ctx.saved_tensors == ()
    with pytest.raises(AttributeError):
        ctx.missing


def test_missing_attribute_is_a_plain_attribute_error():
    with pytest.raises(AttributeError) as info:
        Context().nothing_here
    assert not isinstance(info.value, AutogradError)


def test_in_place_change_of_a_saved_value_raises():
    a = Versioned(2.0, requires_grad=True)
    b = Versioned(3.0, requires_grad=True)
    y = SaveInputs.apply(a, b)
    b.mul_(10.0)  # backward would now use 30 instead of 3
    with pytest.raises(AutogradError) as info:
        y.backward()
    msg = str(info.value)
    assert "saved value #1" in msg
    assert "in-place" in msg and "version 0 -> 1" in msg
    assert a.grad is None  # no wrong gradient was written


def test_unmodified_versioned_values_backprop_normally():
    a, b = Versioned(2.0, requires_grad=True), Versioned(3.0, requires_grad=True)
    y = SaveInputs.apply(a, b)
    y.backward()
    assert (a.grad, b.grad) == (3.0, 2.0)


def test_in_place_change_before_use_is_fine():
    a, b = Versioned(2.0, requires_grad=True), Versioned(3.0, requires_grad=True)
    b.mul_(2.0)  # modified before it was saved: backward sees a consistent value
    y = SaveInputs.apply(a, b)
    y.backward()
    assert (a.grad, b.grad) == (6.0, 2.0)


def test_autograd_error_family():
    assert issubclass(AutogradError, TorchlightError)
    assert issubclass(AutogradError, RuntimeError)


@pytest.fixture
def trace():
    calls = []

    def tracer(fn, args, kwargs, out):
        calls.append((fn, args, kwargs, out))

    Function.tracers.append(tracer)
    try:
        yield calls
    finally:
        Function.tracers.remove(tracer)


def test_tracers_see_every_top_level_apply(trace):
    a = Scalar(2.0, requires_grad=True)
    y = Spy.apply(a, k=3.0)
    with no_grad():
        z = Spy.apply(y)  # reported whether or not it is recorded
    assert [(c[0], c[1], c[2]) for c in trace] == [(Spy, (a,), {"k": 3.0}), (Spy, (y,), {})]
    assert trace[0][3] is y and trace[1][3] is z


def test_tracers_skip_applies_nested_in_a_forward(trace):
    class Outer(Function):
        @staticmethod
        def forward(ctx, a):
            return Spy.apply(Spy.apply(a))  # implementation detail of Outer

        @staticmethod
        def backward(ctx, g):
            return g

    Outer.apply(Scalar(1.0, requires_grad=True))
    assert [c[0] for c in trace] == [Outer]


def test_tracing_depth_is_restored_when_forward_raises(trace):
    class Boom(Function):
        @staticmethod
        def forward(ctx, a):
            raise ValueError("boom")

    with pytest.raises(ValueError):
        Boom.apply(Scalar(1.0))
    Spy.apply(Scalar(1.0))
    assert [c[0] for c in trace] == [Spy]  # still reported: the depth counter went back to 0


class KernelMul(SaveInputs):
    """:class:`SaveInputs`, whose forward runs no other Function: it may take ``apply_binary``."""

    direct_forward = True


class KernelScale(Function):
    """y = k * x for a constant k, by the short ``apply_unary``."""

    direct_forward = True

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return Scalar(x.data * k)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def _graph(y):
    """What a recorded output links: comparable between apply and the short forms."""
    h = y._history
    if h is None:
        return (y.data, y.requires_grad, None)
    return (y.data, y.requires_grad, h.fn, h.inputs, tuple(h.ctx.needs_input_grad))


@pytest.mark.parametrize("grad_a", [False, True])
@pytest.mark.parametrize("grad_b", [False, True])
@pytest.mark.parametrize("recording", [False, True])
def test_apply_binary_records_what_apply_records(grad_a, grad_b, recording):
    a, b = Scalar(2.0, requires_grad=grad_a), Scalar(3.0, requires_grad=grad_b)
    c = KernelMul.apply(a, Scalar(1.0, requires_grad=True))  # a computed input: linked by node
    with no_grad() if not recording else nullcontext():
        long = [KernelMul.apply(a, b), KernelMul.apply(c, b)]
        short = [KernelMul.apply_binary(a, b), KernelMul.apply_binary(c, b)]
    assert [_graph(y) for y in short] == [_graph(y) for y in long]
    assert short[1]._history is None or short[1]._history.inputs[0] is c._history
    if recording and grad_a:
        short[0].backward()
        assert a.grad == 3.0


def test_apply_unary_records_what_apply_records():
    x = Scalar(2.0, requires_grad=True)
    for source in (x, Scalar(2.0), KernelScale.apply(x, 2.0)):
        assert _graph(KernelScale.apply_unary(source, 3.0)) == _graph(
            KernelScale.apply(source, 3.0)
        )
    y = KernelScale.apply_unary(x, 3.0)
    y.backward()
    assert x.grad == 3.0
    with no_grad():
        assert KernelScale.apply_unary(x, 3.0)._history is None


def test_short_forms_take_apply_for_other_functions_and_under_tracers(trace):
    a = Scalar(2.0, requires_grad=True)
    Spy.apply_unary(a, 3.0)  # not direct_forward: apply switches recording off for forward
    assert Spy.seen["grad_enabled"] is False
    KernelMul.apply_binary(a, a)
    KernelScale.apply_unary(a, 2.0)
    assert [(c[0], c[1]) for c in trace] == [
        (Spy, (a, 3.0)),
        (KernelMul, (a, a)),
        (KernelScale, (a, 2.0)),
    ]
