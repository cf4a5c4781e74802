"""``linear``: the one-node affine map under ``nn.Linear`` against finite differences and a numpy
oracle, on packed and strided operands, with and without a bias; other dtypes and shapes take
the composite (``matmul`` then ``add``) and give the same values."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.extension import linear
from torchlight.tensor.functions.linalg import Linear

rng = np.random.default_rng(11)


def _leaf(shape, layout):
    """A float64 leaf and the view of it that ``linear`` receives: packed, transposed, strided."""
    if layout == "contiguous":
        leaf = tl.tensor(rng.standard_normal(shape), requires_grad=True, dtype=tl.float64)
        return leaf, lambda t: t
    if layout == "transposed":
        leaf = tl.tensor(rng.standard_normal(shape[::-1]), requires_grad=True, dtype=tl.float64)
        return leaf, lambda t: t.transpose(0, -1) if t.ndim == 2 else t.permute(2, 1, 0)
    big = tl.tensor(rng.standard_normal((*shape[:-1], 2 * shape[-1])), dtype=tl.float64)
    leaf = big.requires_grad_(True)
    return leaf, lambda t: t[..., ::2]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xshape", [(5, 3), (2, 4, 3), (1, 3), (1, 1, 3)])
def test_values_and_gradients(layout, bias, xshape):
    x_leaf, xv = _leaf(xshape, layout)
    w_leaf, wv = _leaf((4, 3), layout)
    b = tl.tensor(rng.standard_normal(4), requires_grad=True, dtype=tl.float64) if bias else None
    inputs = (x_leaf, w_leaf) + ((b,) if bias else ())
    assert tl.gradcheck(lambda x, w, *bb: linear(xv(x), wv(w), *bb), inputs)
    got = linear(xv(x_leaf), wv(w_leaf), b)
    want = xv(x_leaf).detach().numpy() @ wv(w_leaf).detach().numpy().T
    if bias:
        want = want + b.detach().numpy()
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    assert got.shape == xshape[:-1] + (4,)


def test_one_node_per_call():
    x, w, b = tl.randn(3, 2, requires_grad=True), tl.randn(4, 2), tl.randn(4)
    y = linear(x, w, b)
    assert y.grad_fn is Linear and y._history.inputs[0] is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(w.numpy().sum(0), (3, 1)), rtol=1e-6)


def test_mixed_dtypes_and_vectors_take_the_composite():
    w, b = tl.randn(4, 3), tl.randn(4)
    x64 = tl.randn(2, 3, dtype=tl.float64)
    got = linear(x64, w, b)  # promoted as matmul promotes
    assert got.dtype is tl.float64
    np.testing.assert_allclose(got.numpy(), x64.numpy() @ w.numpy().T + b.numpy(), rtol=1e-6)
    v = tl.randn(3)
    np.testing.assert_allclose(
        linear(v, w, b).numpy(), w.numpy() @ v.numpy() + b.numpy(), rtol=1e-5
    )


def test_mismatched_features_say_so():
    with pytest.raises(tl.ShapeError, match="features"):
        linear(tl.ones(2, 3), tl.ones(4, 5))


def test_one_row_bias_gradient_leaves_the_callers_gradient_alone():
    # with one row the bias gradient is the row of g itself (no sum): accumulating it into
    # .grad over two backward passes must not write into the gradient the caller passed
    x = tl.tensor([[1.0, 2.0, 3.0]], dtype=tl.float64)
    w = tl.zeros(2, 3, dtype=tl.float64, requires_grad=True)
    b = tl.zeros(2, dtype=tl.float64, requires_grad=True)
    g = tl.tensor([[0.5, -1.0]], dtype=tl.float64)
    for _ in range(2):
        linear(x, w, b).backward(g)
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, -2.0])
    np.testing.assert_array_equal(g.numpy(), [[0.5, -1.0]])
    np.testing.assert_array_equal(w.grad.numpy(), 2 * np.outer([0.5, -1.0], [1.0, 2.0, 3.0]))
