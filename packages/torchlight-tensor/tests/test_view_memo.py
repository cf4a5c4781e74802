"""A view keeps the permuted and expanded views made of it (``TensorData._remember``): the same
request returns the same view, values stay those of the storage, and the table stays small."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.errors import ShapeError
from torchlight.tensor.storage import VIEW_MEMO


def test_the_same_request_returns_the_same_view():
    td = tl.randn(3, 4)._td
    assert td.permute((1, 0)) is td.permute([1, 0])
    assert td.expand((2, 3, 4)) is td.expand((2, 3, 4))
    assert td.expand((2, 3, 4)) is not td.expand((5, 3, 4))
    assert td.permute((0, 1)) is not td.permute((1, 0))


def test_a_remembered_transpose_sees_later_writes():
    """A layer's weight is transposed in every call; the optimizer updates it in place."""
    w = tl.randn(3, 4)
    x = tl.randn(2, 4)
    first = (x @ w.T).numpy().copy()
    w.mul_(2.0).add_(1.0)
    second = (x @ w.T).numpy()
    wn = w.numpy()
    np.testing.assert_allclose(second, x.numpy() @ wn.T, rtol=1e-5)
    assert not np.allclose(first, second)


def test_a_remembered_broadcast_sees_later_writes():
    b = tl.tensor([1.0, 2.0, 3.0])
    x = tl.zeros(2, 3)
    np.testing.assert_array_equal((x + b).numpy(), [[1, 2, 3], [1, 2, 3]])
    b.add_(10.0)
    np.testing.assert_array_equal((x + b).numpy(), [[11, 12, 13], [11, 12, 13]])


def test_the_table_is_bounded_and_every_view_is_right():
    b = tl.tensor([1.0, 2.0])
    for n in range(1, 3 * VIEW_MEMO):
        y = b.expand(n, 2)
        np.testing.assert_array_equal(y.numpy(), np.tile([1.0, 2.0], (n, 1)))
    assert len(b._td.views) <= VIEW_MEMO


def test_a_remembered_view_does_not_hide_a_bad_request():
    td = tl.randn(3, 4)._td
    td.permute((1, 0))
    with pytest.raises(ShapeError, match="not a permutation"):
        td.permute((1, 1))
    td.expand((2, 3, 4))
    with pytest.raises(ShapeError, match="only size-1 dimensions"):
        td.expand((2, 5, 4))


def test_expand_with_minus_one_is_remembered_under_the_request():
    td = tl.randn(1, 4)._td
    v = td.expand((3, -1))
    assert v.shape == (3, 4) and td.expand((3, -1)) is v
