"""Leaky ReLU as one node (``LeakyReLU``): values and gradients against numpy (the finite
differences are in ``test_gradcheck.py``), NaN, integers, and second derivatives."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.functions.activation import LeakyReLU


@pytest.mark.parametrize("slope", [0.01, 0.2, 1.5, -0.5, 0.0])
def test_values_and_gradient_like_numpy(slope):
    a = np.random.default_rng(0).standard_normal((5, 6))
    a[0, 0] = 0.0  # PyTorch's rule at 0: the slope (x > 0 is false)
    x = tl.tensor(a, requires_grad=True)
    c = np.random.default_rng(1).standard_normal((5, 6))
    y = x.leaky_relu(slope)
    assert y.grad_fn is LeakyReLU  # one node
    (y * tl.tensor(c)).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), np.where(a > 0, a, slope * a))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(a > 0, c, slope * c))


def test_a_strided_input():
    a = np.arange(-12.0, 12.0).reshape(4, 6)
    x = tl.tensor(a, requires_grad=True)
    y = x.t()[::2].leaky_relu(0.1)
    y.sum().backward()
    np.testing.assert_array_equal(
        y.detach().numpy(), np.where(a.T[::2] > 0, a.T[::2], 0.1 * a.T[::2])
    )
    want = np.zeros_like(a)
    want.T[::2] = np.where(a.T[::2] > 0, 1.0, 0.1)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_nan_stays_nan_and_integers_give_floats():
    y = tl.tensor([float("nan"), -1.0, 2.0]).leaky_relu(0.5)
    assert np.isnan(y[0].item()) and y[1:].tolist() == [-0.5, 2.0]
    z = tl.tensor([-2, 3]).leaky_relu(0.5)
    assert z.dtype is tl.get_default_dtype() and z.tolist() == [-1.0, 3.0]


def test_second_derivative():
    """``(leaky(x))²``: first derivative ``2 s² x``, second ``2 s²`` (``s`` 1 or the slope)."""
    x = tl.tensor([-2.0, 3.0], dtype=tl.float64, requires_grad=True)
    (x.leaky_relu(0.5) ** 2).sum().backward(create_graph=True)
    g, x.grad = x.grad, None
    np.testing.assert_allclose(g.detach().numpy(), [2 * 0.25 * -2.0, 2 * 3.0])
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 0.25, 2.0])
