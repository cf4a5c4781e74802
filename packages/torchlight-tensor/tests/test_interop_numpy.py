"""NumPy interop: ``__array__`` per NumPy 2 (copy=None/True/False), and ndarray operands on both
sides of every binary operator — the result is a tensor (numpy defers to torchlight), keeps the
autograd graph, and has PyTorch's dtype (an ndarray counts as a tensor of its own dtype).

Oracle: the same expression evaluated by numpy on arrays.
"""

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tltensor_helpers import assert_close, broadcastable_pair

import torchlight as tl

ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
COMPARE = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


# --- __array__ ------------------------------------------------------------------------------------
def test_asarray_shares_memory_on_the_host():
    t = tl.arange(6.0).reshape(2, 3)[:, 1:]
    a = np.asarray(t)
    np.testing.assert_array_equal(a, np.arange(6.0, dtype=np.float32).reshape(2, 3)[:, 1:])
    a[0, 0] = -1.0
    assert t[0, 0].item() == -1.0
    assert np.asarray(t, copy=False)[0, 0] == -1.0


def test_asarray_copy_true_copies():
    t = tl.zeros(3)
    a = np.asarray(t, copy=True) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else np.array(t)
    a[0] = 1.0
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_array_dtype_converts_and_copy_false_refuses_a_conversion():
    t = tl.arange(3.0)
    assert t.__array__(np.float64).dtype == np.float64
    np.testing.assert_array_equal(t.__array__(np.float64), [0.0, 1.0, 2.0])
    assert t.__array__(np.float32, copy=False).dtype == np.float32  # same dtype: a view
    with pytest.raises(ValueError, match="without a copy"):
        t.__array__(np.float64, copy=False)


# --- binary operators with ndarray operands -------------------------------------------------------------
@given(data=st.data(), op=st.sampled_from(ARITH + COMPARE), seed=st.integers(0, 2**16))
def test_ndarray_on_either_side_gives_a_tensor(data, op, seed):
    sa, sb = broadcastable_pair(data.draw, max_dims=3)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, sa).astype(np.float32)
    y = rng.uniform(0.5, 2.0, sb).astype(np.float32)
    t = tl.tensor(x)
    left, right = op(t, y), op(y, t)
    assert isinstance(left, tl.Tensor) and isinstance(right, tl.Tensor)
    assert_close(left, op(x, y), dtype=op(x, y).dtype)
    assert_close(right, op(y, x), dtype=op(y, x).dtype)


@pytest.mark.parametrize("op", ARITH + [operator.matmul])
def test_the_graph_survives_an_ndarray_operand(op):
    x = np.array([[0.5, 1.5], [2.0, 1.25]], dtype=np.float32)
    a = np.array([[1.5, 0.5], [0.75, 2.0]], dtype=np.float32)
    for side in ("left", "right"):
        t = tl.tensor(x, requires_grad=True)
        out = op(a, t) if side == "left" else op(t, a)
        assert out.grad_fn is not None
        out.sum().backward()
        # finite differences on the numpy expression as the oracle
        eps, g = 1e-3, np.zeros_like(x, dtype=np.float64)
        for i in np.ndindex(x.shape):
            d = np.zeros_like(x, dtype=np.float64)
            d[i] = eps
            f = (
                (lambda v: op(a.astype(np.float64), v))
                if side == "left"
                else (lambda v: op(v, a.astype(np.float64)))
            )
            g[i] = (f(x + d).sum() - f(x - d).sum()) / (2 * eps)
        np.testing.assert_allclose(t.grad.to_numpy(), g, rtol=1e-3, atol=1e-3)


def test_matmul_with_an_ndarray_on_either_side():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    assert_close(tl.tensor(x) @ a, x @ a)
    assert_close(x @ tl.tensor(a), x @ a)


def test_logical_operators_with_bool_arrays():
    m = np.array([True, False, True, False])
    t = tl.tensor([True, True, False, False])
    for op in (operator.and_, operator.or_):
        assert_close(op(t, m), op(t.to_numpy(), m))
        assert_close(op(m, t), op(m, t.to_numpy()))
        assert isinstance(op(m, t), tl.Tensor)


@pytest.mark.parametrize(
    "tensor_dtype,array,expected",
    [
        (
            tl.float32,
            np.ones(2, np.float64),
            tl.float64,
        ),  # dimensioned float64 widens, as a tensor would
        (tl.float32, np.array(2.0), tl.float32),  # a 0-d array acts like a scalar
        (tl.float32, np.ones(2, np.int64), tl.float32),
        (tl.int64, np.ones(2, np.float64), tl.float64),
        (tl.int64, np.ones(2, np.float32), tl.float32),
        (tl.int64, np.array(1.5), tl.float64),  # a 0-d array of a higher category decides
        (tl.int64, np.ones(2, np.int32), tl.int64),
        (tl.bool, np.ones(2, np.int64), tl.int64),
        (tl.float64, np.ones(2, np.float16), tl.float64),
    ],
)
def test_dtype_promotion_treats_an_ndarray_as_a_tensor(tensor_dtype, array, expected):
    t = tl.ones(2, dtype=tensor_dtype)
    assert (t + array).dtype is expected
    assert (array + t).dtype is expected


def test_numpy_scalars_act_like_python_scalars():
    t = tl.ones(2)
    assert (t * np.float64(2.0)).dtype is tl.float32
    out = np.float64(2.0) * t
    assert isinstance(out, tl.Tensor) and out.tolist() == [2.0, 2.0]


def test_in_place_ops_take_ndarrays():
    t = tl.zeros(3)
    t.add_(np.array([1.0, 2.0, 3.0]))
    t.mul_(np.array([2.0, 2.0, 2.0]))
    t.sub_(np.ones(3))
    t.div_(np.full(3, 2.0))
    assert t.tolist() == [0.5, 1.5, 2.5]
    t.copy_(np.arange(3))
    assert t.tolist() == [0.0, 1.0, 2.0]


def test_augmented_assignment_on_either_side():
    t = tl.ones(3)
    t += np.arange(3.0, dtype=np.float32)
    assert isinstance(t, tl.Tensor) and t.tolist() == [1.0, 2.0, 3.0]
    a = np.ones(3, dtype=np.float32)
    a *= tl.full((3,), 2.0)  # numpy defers in place too: ``a`` becomes a tensor, as with PyTorch
    assert isinstance(a, tl.Tensor) and a.tolist() == [2.0, 2.0, 2.0]


def test_ufuncs_still_convert_through_array():
    out = np.exp(tl.zeros(2))
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [1.0, 1.0])
