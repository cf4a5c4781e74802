"""Advanced indexing whose index tensors are 0-d or 2-D, on the numba backend, against numpy.

The core gathers advanced indices through the backend's ``take`` with a 1-D index (the contract);
``x[i, j]`` with 0-d tensors and ``x[rows2d, cols2d]`` exercise the reshape around it.
"""

import numpy as np
import pytest

import torchlight as tl

pytest.importorskip("numba")


@pytest.mark.parametrize(
    "make_index",
    [
        lambda: (np.array(2), np.array(3)),
        lambda: (np.array([[0, 1], [2, 3]]),),
        lambda: (np.array([[0, 1], [2, 3]]), np.array([[4, 3], [2, 1]])),
        lambda: (np.array([3, 0, 3]), slice(1, 4)),
    ],
)
def test_advanced_index_matches_numpy_with_gradient(make_index):
    base = np.arange(20, dtype=np.float32).reshape(4, 5) * 0.5
    index = make_index()
    x = tl.tensor(base, device="numba", requires_grad=True)
    tl_index = tuple(
        tl.tensor(i, device="numba") if isinstance(i, np.ndarray) else i for i in index
    )
    y = x[tl_index]
    expected = base[index]
    assert y.shape == expected.shape
    np.testing.assert_array_equal(y.detach().numpy(), expected)
    weights = np.arange(1, expected.size + 1, dtype=np.float32).reshape(expected.shape)
    (y * tl.tensor(weights, device="numba")).sum().backward()
    grad = np.zeros_like(base)
    np.add.at(grad, index, weights)
    np.testing.assert_array_equal(x.grad.numpy(), grad)
