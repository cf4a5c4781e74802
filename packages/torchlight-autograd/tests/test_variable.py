"""``Variable``: PyTorch's legacy wrapper returns its argument (engine variables only)."""

import pytest

from torchlight.autograd import Scalar, Variable


def test_variable_returns_the_same_object_and_sets_requires_grad():
    x = Scalar(3.0)
    assert Variable(x) is x and not x.requires_grad
    assert Variable(x, requires_grad=True) is x and x.requires_grad
    (x * x).backward()  # still an ordinary variable of the engine: d(x^2)/dx = 2x
    assert x.grad == 6.0


def test_isinstance_holds_for_every_engine_variable():
    assert isinstance(Scalar(1.0), Variable)
    assert not isinstance(1.0, Variable)
    assert not isinstance([1.0], Variable)


def test_tensor_is_a_variable():
    tl = pytest.importorskip("torchlight")
    t = tl.tensor([1.0, 2.0])
    v = Variable(t, requires_grad=True)
    assert v is t and t.requires_grad and isinstance(t, Variable)
    (v * v).sum().backward()
    assert t.grad.tolist() == [2.0, 4.0]


def test_non_variable_is_a_type_error():
    with pytest.raises(TypeError, match="needs a tensor"):
        Variable([1.0, 2.0])
