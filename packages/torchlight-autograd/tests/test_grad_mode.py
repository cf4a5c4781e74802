"""``no_grad`` / ``enable_grad`` / ``set_grad_enabled``: context managers, decorators, nesting,
and the global flag always restored — even when the body raises."""

import pytest

from torchlight.autograd import Scalar, enable_grad, is_grad_enabled, no_grad, set_grad_enabled


@pytest.fixture(autouse=True)
def grad_mode_is_left_on():
    assert is_grad_enabled()
    yield
    assert is_grad_enabled(), "a test leaked a disabled grad mode"


def x2():
    x = Scalar(2.0, requires_grad=True)
    return x, x * x


def test_no_grad_records_nothing():
    with no_grad():
        assert not is_grad_enabled()
        _, y = x2()
    assert not y.requires_grad and y._history is None


def test_enable_grad_inside_no_grad_records_again():
    with no_grad():
        with enable_grad():
            assert is_grad_enabled()
            x, y = x2()
        assert not is_grad_enabled()
    y.backward()
    assert x.grad == 4.0


def test_nesting_restores_each_level():
    states = []
    with no_grad():
        states.append(is_grad_enabled())
        with no_grad():
            states.append(is_grad_enabled())
            with enable_grad():
                states.append(is_grad_enabled())
            states.append(is_grad_enabled())
        states.append(is_grad_enabled())
    states.append(is_grad_enabled())
    assert states == [False, False, True, False, False, True]


@pytest.mark.parametrize("switch", [no_grad, enable_grad, lambda: set_grad_enabled(False)])
def test_exception_inside_restores_state(switch):
    with pytest.raises(KeyError):
        with switch():
            raise KeyError("x")
    assert is_grad_enabled()
    with no_grad():
        with pytest.raises(KeyError):
            with enable_grad():
                raise KeyError("x")
        assert not is_grad_enabled()


def test_decorators():
    @no_grad()
    def off(a):
        assert not is_grad_enabled()
        return a * a

    @enable_grad()
    def on(a):
        assert is_grad_enabled()
        return a * a

    x = Scalar(3.0, requires_grad=True)
    assert not off(x).requires_grad
    with no_grad():
        y = on(x)
    assert y.requires_grad
    assert off.__name__ == "off"  # functools.wraps


def test_decorator_restores_state_on_exception():
    @no_grad()
    def fails():
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fails()


def test_decorated_function_is_reentrant():
    # each call gets its own switch, so recursion restores the right state at every level
    @no_grad()
    def rec(n):
        if n:
            with enable_grad():
                rec(n - 1)
                assert is_grad_enabled()
        assert not is_grad_enabled()

    rec(3)


def test_set_grad_enabled_as_a_function_and_context_manager():
    set_grad_enabled(False)
    try:
        assert not is_grad_enabled()
    finally:
        set_grad_enabled(True)
    assert is_grad_enabled()
    with set_grad_enabled(False):
        assert not is_grad_enabled()
        with set_grad_enabled(True):
            assert is_grad_enabled()
        assert not is_grad_enabled()
    assert is_grad_enabled()


@pytest.mark.parametrize("mode", [False, True])
def test_set_grad_enabled_as_a_decorator(mode):
    @set_grad_enabled(mode)
    def f():
        return is_grad_enabled()

    assert is_grad_enabled()  # decorating must not flip the global mode
    with no_grad():
        assert f() is mode
        assert not is_grad_enabled()
    assert f() is mode
    assert is_grad_enabled()
