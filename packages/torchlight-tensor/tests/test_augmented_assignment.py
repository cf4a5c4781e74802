"""``a += b``, ``-=``, ``*=``, ``/=`` on tensors: in place (PyTorch's semantics), checked with numpy.

On a tensor with a ``grad_fn`` (grad mode on) torchlight records no in-place op, so the name is
rebound to the out-of-place result and the gradient is that of the out-of-place expression.
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.autograd import AutogradError

OPS = [
    ("__iadd__", np.add),
    ("__isub__", np.subtract),
    ("__imul__", np.multiply),
    ("__itruediv__", np.divide),
]


@pytest.mark.parametrize("name, ref", OPS)
@pytest.mark.parametrize("other_kind", ["scalar", "same", "broadcast"])
def test_inplace_on_plain_tensor_updates_every_reference(name, ref, other_kind):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((3, 4)).astype(np.float32)
    other_np = {
        "scalar": 1.5,
        "same": rng.standard_normal((3, 4)),
        "broadcast": rng.standard_normal(4),
    }[other_kind]
    other = (
        other_np if other_kind == "scalar" else tl.tensor(np.asarray(other_np, dtype=np.float32))
    )
    x = tl.tensor(base)
    alias = x
    view = x[1]  # a view shares the storage, so it sees the update too
    result = getattr(x, name)(other)
    expected = ref(base, np.asarray(other_np, dtype=np.float32))
    assert result is x
    np.testing.assert_allclose(alias.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(view.numpy(), expected[1], rtol=1e-6)


def test_inplace_on_non_contiguous_view_writes_through():
    x = tl.zeros(3, 4)
    col = x.t()[1]  # column 1, stride 4
    col += tl.tensor([1.0, 2.0, 3.0])
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[:, 1] = [1, 2, 3]
    np.testing.assert_array_equal(x.numpy(), expected)


def test_manual_sgd_step_keeps_the_leaf():
    w = tl.tensor([1.0, -2.0], requires_grad=True)
    (w * w).sum().backward()  # grad = 2w
    with tl.no_grad():
        w -= 0.25 * w.grad
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    np.testing.assert_allclose(w.detach().numpy(), [0.5, -1.0])


def test_leaf_requiring_grad_outside_no_grad_raises():
    w = tl.tensor([1.0], requires_grad=True)
    with pytest.raises(AutogradError, match="leaf"):
        w += 1


def test_graph_tensor_is_rebound_out_of_place_with_the_right_gradient():
    a = tl.tensor([2.0, 3.0], requires_grad=True)
    b = a * a
    before = b
    b *= a  # b = a^3 out of place; `before` still holds a^2
    np.testing.assert_allclose(before.detach().numpy(), [4.0, 9.0])
    np.testing.assert_allclose(b.detach().numpy(), [8.0, 27.0])
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 3 * np.array([4.0, 9.0]))  # d(a^3)/da


def test_integer_tensor_in_place():
    i = tl.tensor([1, 2, 3])
    i *= 3
    i += 1
    assert i.dtype == tl.int64
    assert i.tolist() == [4, 7, 10]
