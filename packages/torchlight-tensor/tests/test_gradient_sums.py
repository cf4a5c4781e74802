"""Gradients summed over several uses of a tensor: the engine's in-place sums and the unbuilt
gradients of ``x[index]`` (``IndexedGradient``), against a numpy oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tltensor_helpers import LEAF_LAYOUTS, Maker, assert_close

import torchlight as tl
from torchlight.tensor.functions.index import IndexedGradient


@st.composite
def basic_index(draw, shape):
    """A basic index of ``shape`` (ints, stepped slices, ``None``, at most one ``...``)."""
    items = []
    for side in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            items.append(draw(st.integers(-side, side - 1)))
        elif kind == "slice":
            start = draw(st.integers(-side, side))
            stop = draw(st.one_of(st.none(), st.integers(-side, side)))
            items.append(slice(start, stop, draw(st.integers(1, 3))))
        else:
            items.append(slice(None))
    if items and draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    if items and draw(st.booleans()):  # ... standing for a run of full slices
        k = draw(st.integers(0, len(items) - 1))
        j = draw(st.integers(k, len(items)))
        if all(i == slice(None) for i in items[k:j]):
            items[k:j] = [Ellipsis]
    return tuple(items)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    layout=st.sampled_from(LEAF_LAYOUTS),
    dense_use=st.booleans(),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_many_indexed_uses_sum_like_numpy(shape, layout, dense_use, seed, data):
    mk = Maker(seed)
    a, x = mk.build(shape, layout)
    x.requires_grad_()
    indices = data.draw(st.lists(basic_index(tuple(shape)), min_size=1, max_size=5))
    expected = np.zeros(a.shape)
    loss = None
    for index in indices:
        w = mk.values(np.shape(a[index]))
        term = (x[index] * tl.tensor(w)).sum()
        loss = term if loss is None else loss + term
        expected[index] += w
    if dense_use:
        loss = loss + (x * 3.0).sum()
        expected += 3.0
    loss.backward()
    assert_close(x.grad, expected)


def test_iterating_rows_and_splitting_sum_into_the_gradient():
    a = np.arange(12.0).reshape(3, 4)
    x = tl.tensor(a, requires_grad=True)
    y = x * 2.0  # a computed tensor: its gradient is summed by the engine, then passed on
    loss = sum((row * row).sum() for row in y)
    q, k, v = y.split([1, 2, 1], dim=1)
    loss = loss + q.sum() + 2 * k.sum() + 3 * v.sum()
    for t in y.unbind(1):
        loss = loss + t.sum()
    loss.backward()
    expected = 2 * (2 * (2 * a) + np.array([1.0, 2.0, 2.0, 3.0]) + 1.0)
    assert_close(x.grad, expected)


def test_shared_gradients_are_never_updated_in_place():
    # an add passes its gradient on to both inputs as one tensor: the sums built from it must
    # be new buffers, and the caller's gradient stays as it was
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    w = tl.tensor([5.0, 7.0], requires_grad=True)
    u = x + w
    y = u + x + x
    seed = tl.tensor([1.0, 10.0])
    y.backward(seed)
    assert seed.tolist() == [1.0, 10.0]
    assert x.grad.tolist() == [3.0, 30.0]
    assert w.grad.tolist() == [1.0, 10.0]


def test_second_order_through_indexing():
    # create_graph: the sums are recorded ops, and x[i]'s gradient a differentiable node
    x = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x[0] ** 3 + x[0] * x[2] + x[1:].sum() ** 2
    y.backward(create_graph=True)
    g = x.grad
    # dy/dx = [3x0² + x2, 2(x1 + x2), x0 + 2(x1 + x2)]
    assert g.tolist() == [6.0, 10.0, 11.0]
    x.grad = None
    g.sum().backward()
    # d/dx of sum(g) = [6x0 + 1, 4, 1 + 4]
    assert x.grad.tolist() == [7.0, 4.0, 5.0]


def test_gradient_of_another_dtype_is_not_cast_into_the_buffer():
    g = tl.tensor([1.5, 2.5], dtype=tl.float32)
    part = IndexedGradient(g, (3,), (slice(0, 2),))
    buffer = tl.tensor([1.0, 1.0, 1.0], dtype=tl.float64)
    out = part.add_into(buffer)
    assert out is not buffer and buffer.tolist() == [1.0, 1.0, 1.0]
    assert out.dtype == tl.float64 and out.tolist() == [2.5, 3.5, 1.0]
    same = IndexedGradient(tl.tensor([1.5, 2.5], dtype=tl.float64), (3,), (slice(1, 3),))
    assert same.add_into(buffer) is buffer and buffer.tolist() == [1.0, 2.5, 3.5]


@pytest.mark.parametrize("retain", [False, True])
def test_leaf_gradients_accumulate_across_backward_calls(retain):
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    for _ in range(2):
        loss = x[0, 1] * 2 + x[:, 0].sum() + x[0, 1]
        loss.backward(retain_graph=retain)
    assert x.grad.tolist() == [[2.0, 6.0], [2.0, 0.0]]
