"""``x[index]`` with integer and boolean tensors: the rows route (``index_select`` along dim 0)
and the general gather, both ways of computing its positions, against numpy's own indexing and
``np.add.at`` for the gradient."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tltensor_helpers import LEAF_LAYOUTS, Maker, assert_close

import torchlight as tl
from torchlight.tensor.errors import TensorIndexError
from torchlight.tensor.functions import index as indexing
from torchlight.tensor.functions import positions
from torchlight.tensor.functions.gathering import IndexSelect


@st.composite
def advanced_index(draw, shape):
    """An index of ``shape`` with at least one int64 tensor (negative entries too), the other
    dims full or stepped slices or ints, sometimes a bool mask over the leading dim."""
    items = []
    arrays = 0
    index_shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    for side in shape:
        kind = draw(st.sampled_from(["tensor", "full", "slice", "int"]))
        if kind == "tensor" or (arrays == 0 and len(items) == len(shape) - 1):
            items.append(draw(st.lists(st.integers(-side, side - 1), min_size=1, max_size=6)))
            arrays += 1
        elif kind == "full":
            items.append(slice(None))
        elif kind == "slice":
            items.append(slice(draw(st.integers(0, side - 1)), None, draw(st.integers(1, 2))))
        else:
            items.append(draw(st.integers(-side, side - 1)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    out = []
    for item in items:
        if isinstance(item, list):  # one shape for all the arrays, so that they broadcast
            values = rng.choice(np.array(item), size=index_shape)
            out.append(values.astype(np.int64))
        else:
            out.append(item)
    if draw(st.booleans()):  # a bool mask over dim 0 instead of its item
        out[0] = rng.random(shape[0]) < 0.6
    return tuple(out)


def _as_tensors(index):
    return tuple(tl.tensor(i) if isinstance(i, np.ndarray) else i for i in index)


@pytest.mark.parametrize("whole_arange", [True, False], ids=["arange", "coordinates"])
@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    layout=st.sampled_from(LEAF_LAYOUTS),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_gather_and_its_gradient_match_numpy(whole_arange, shape, layout, seed, data):
    mk = Maker(seed)
    a, x = mk.build(shape, layout)
    x.requires_grad_()
    index = data.draw(advanced_index(tuple(shape)))
    try:
        expected = a[index]
    except IndexError:  # index arrays that do not broadcast together: a torchlight error too
        with pytest.raises(TensorIndexError, match="shape mismatch"):
            x[_as_tensors(index)]
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(positions, "ARANGE_POSITIONS", 1 << 40 if whole_arange else 0)
        y = x[_as_tensors(index)]
    assert_close(y, expected)
    w = mk.values(expected.shape)
    (y * tl.tensor(w)).sum().backward()
    grad = np.zeros(a.shape)
    np.add.at(grad, index, w)
    assert_close(x.grad, grad)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 6),
    rest=st.lists(st.integers(1, 4), max_size=2),
    index_shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    layout=st.sampled_from(LEAF_LAYOUTS),
    trailing=st.sampled_from(["none", "full", "ellipsis"]),
    seed=st.integers(0, 2**16),
)
def test_rows_route_matches_numpy(rows, rest, index_shape, layout, trailing, seed):
    # x[idx], x[idx, :], x[idx, ...]: whole rows, the commonest advanced index
    mk = Maker(seed)
    shape = (rows, *rest)
    a, x = mk.build(shape, layout)
    x.requires_grad_()
    idx = mk.rng.integers(0, rows, size=tuple(index_shape))
    tail = {"none": (), "full": (slice(None),) * len(rest), "ellipsis": (Ellipsis,)}[trailing]
    y = x[(tl.tensor(idx), *tail)]
    assert_close(y, a[idx])
    w = mk.values(a[idx].shape)
    (y * tl.tensor(w)).sum().backward()
    grad = np.zeros(shape)
    np.add.at(grad, idx, w)
    assert_close(x.grad, grad)


def test_rows_route_is_index_select_and_the_general_path_is_not():
    x = tl.arange(12.0).reshape(4, 3).requires_grad_()
    assert x[tl.tensor([3, 0, 3])].grad_fn is IndexSelect
    # a negative row, an index after the first dim: the general gather
    assert x[tl.tensor([-1, 0])].grad_fn is indexing.AdvancedIndex
    assert x[:, tl.tensor([2, 0])].grad_fn is indexing.AdvancedIndex
    assert x[tl.tensor([-1, 0])].tolist() == [[9.0, 10.0, 11.0], [0.0, 1.0, 2.0]]


def test_a_few_rows_of_a_large_tensor_cost_memory_of_the_rows_only():
    # 4M elements: an arange over all of them would take 32 MB for a gather of 2 x 4 rows
    x = tl.zeros(1_000_000, 4)
    index = tl.tensor([-1, 5])  # negative: the general gather, with its flat positions
    tracemalloc.start()
    try:
        y = x[index]
        z = x[index, 1:]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert y.shape == (2, 4) and z.shape == (2, 3)
    assert peak < 1 << 20, f"peak {peak} bytes"


def test_assignment_through_a_tensor_index_on_a_large_tensor():
    x = tl.zeros(1_000_000, 4)
    tracemalloc.start()
    try:
        x[tl.tensor([-1, 3])] = tl.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
        x[tl.tensor([7, 7]), 1:] = 9.0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"peak {peak} bytes: the assignment copied the tensor"
    assert x[999_999].tolist() == [1.0, 2.0, 3.0, 4.0] and x[3].tolist() == [5.0, 6.0, 7.0, 8.0]
    assert x[7].tolist() == [0.0, 9.0, 9.0, 9.0]
    assert float(x.sum()) == 63.0


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    layout=st.sampled_from(LEAF_LAYOUTS),
    seed=st.integers(0, 2**16),
    scalar=st.booleans(),
    data=st.data(),
)
def test_assignment_matches_numpy(shape, layout, seed, scalar, data):
    # x[index] = v on views of every layout (the write lands in the base's storage), v a scalar
    # or an array broadcast to the selection, repeated indices included
    mk = Maker(seed)
    a, x = mk.build(shape, layout)
    index = data.draw(advanced_index(tuple(shape)))
    try:
        selected = a[index].shape
    except IndexError:
        return  # index arrays that do not broadcast: covered by the reading test
    value = 7.5 if scalar else mk.values(selected[1:] if selected else ())
    expected = np.array(a)
    expected[index] = value
    x[_as_tensors(index)] = value if scalar else tl.tensor(value)
    assert_close(x, expected)


def test_assignment_casts_like_numpy_and_counts_the_version():
    x = tl.zeros(40_000, dtype=tl.int64)
    before = x._version[0]
    x[tl.tensor([0, 39_999])] = tl.tensor([1.7, -2.7])
    assert x[0].item() == 1 and x[-1].item() == -2
    assert x._version[0] == before + 1


@pytest.mark.parametrize("bad", [4, -5])
def test_out_of_range_rows_raise_a_torchlight_error(bad):
    x = tl.zeros(4, 2)
    with pytest.raises(TensorIndexError, match=f"index {bad} is out of range for dimension 0"):
        x[tl.tensor([0, bad])]


def test_rows_route_leaves_an_index_on_another_backend_to_the_general_path():
    x = tl.arange(6.0).reshape(3, 2)
    idx = tl.tensor([2, 2])
    assert indexing._rows(x, (idx, slice(None))) is not None
    assert indexing._rows(x, (idx, slice(1, None))) is None
    assert indexing._rows(x, (tl.tensor([True, False, True]),)) is None
