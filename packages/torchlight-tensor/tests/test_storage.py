"""``TensorData`` views: zero-copy layout changes checked against numpy.

Oracle: a view ``(storage, shape, strides, offset)`` denotes exactly the array
``np.lib.stride_tricks.as_strided(storage[offset:], shape, strides * itemsize)``. Every view
operation is applied to random strided views (random shapes, permutations, stepped slices,
stride-0 broadcasts, offsets, and arbitrary — even overlapping — strides) and the result must
(a) share the very same storage object and (b) denote what numpy's own operation gives.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided, sliding_window_view
from tltensor_helpers import shapes

import torchlight as tl
from torchlight.tensor.indexing import (
    broadcast_index,
    coalesce,
    contiguous_strides,
    index_to_position,
    shape_broadcast,
    to_index,
)
from torchlight.tensor.storage import TensorData

# --- oracle and strategies ----------------------------------------------------------------------


def oracle(td):
    """The array a TensorData denotes, read through numpy's own striding machinery."""
    st_ = td.storage
    if td.size == 0:
        return np.empty(td.shape, st_.dtype)
    return as_strided(
        st_[td.offset :], td.shape, tuple(s * st_.itemsize for s in td.strides), writeable=False
    )


def storage_for(n):
    # distinct values, so a view that reads the wrong element cannot pass
    return np.arange(n, dtype=np.float64) + 100.0


@st.composite
def strided_views(draw, min_dims=0, max_dims=4, max_side=4, kind=None):
    """A TensorData over a fresh storage.

    ``chain``: a contiguous base sliced with random starts/steps (negative bounds included) and
    then permuted — the layouts real programs make; ``arbitrary``: any non-negative strides
    (zero and overlapping included) and offset.
    """
    kind = kind or draw(st.sampled_from(["contiguous", "chain", "arbitrary"]))
    shape = draw(shapes(min_dims, max_dims, 1, max_side))
    n = len(shape)
    if kind == "contiguous":
        offset = draw(st.integers(0, 3))
        store = storage_for(offset + math.prod(shape) + draw(st.integers(0, 2)))
        return TensorData(store, shape, None, offset)
    if kind == "arbitrary":
        strides = tuple(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
        offset = draw(st.integers(0, 5))
        need = offset + sum((s - 1) * k for s, k in zip(shape, strides)) + 1
        return TensorData(storage_for(need + draw(st.integers(0, 3))), shape, strides, offset)
    # chain: slice a larger contiguous base, then permute
    perm = draw(st.permutations(range(n)))
    pre = [0] * n  # shape before the permutation
    for i, p in enumerate(perm):
        pre[p] = shape[i]
    base_shape, slices = [], []
    for s in pre:
        start, step = draw(st.integers(0, 2)), draw(st.integers(1, 3))
        length = start + step * (s - 1) + 1 + draw(st.integers(0, 2))
        base_shape.append(length)
        slices.append((start - length if draw(st.booleans()) else start, step))
    offset = draw(st.integers(0, 3))
    td = TensorData(storage_for(offset + math.prod(base_shape)), base_shape, None, offset)
    for d, (start, step) in enumerate(slices):
        td = td.slice(d, start, None, step)
        td = td.slice(d, None, pre[d], None)
    return td.permute(tuple(perm))


def factorizations(n):
    """All ways to write n as an ordered product of sides >= 2 (plus the empty one when n == 1)."""
    if n == 1:
        return [()]
    out = []
    for k in range(2, n + 1):
        if n % k == 0:
            out += [(k,) + rest for rest in factorizations(n // k)]
    return out


@st.composite
def view_shapes(draw, size):
    """A random shape with ``size`` elements, with random size-1 dims and maybe one -1."""
    dims = list(draw(st.sampled_from(factorizations(size)))) if size > 0 else [0]
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    if dims and draw(st.booleans()) and size > 0:
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


def numpy_can_view(a, shape):
    """numpy's own answer: ``np.reshape`` returns a view exactly when no copy is needed (written
    without NumPy 2.1's ``copy=False`` so the declared oldest numpy can run it)."""
    return a.size == 0 or np.shares_memory(np.reshape(a, shape), a)


def assert_denotes(td, expected, store):
    assert td.storage is store, "a view must share the storage object (zero-copy)"
    got = oracle(td)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


# --- the oracle itself and metadata -------------------------------------------------------------


def test_oracle_agrees_with_handmade_view():
    store = storage_for(24)
    td = TensorData(store, (2, 3), (12, 2), 1)
    np.testing.assert_array_equal(oracle(td), [[101, 103, 105], [113, 115, 117]])


@given(shapes(0, 5, 0, 5))
def test_contiguous_strides_match_numpy(shape):
    a = np.empty(shape, dtype=np.float64)
    if a.size:  # numpy's strides of an empty array are unconstrained
        assert contiguous_strides(shape) == tuple(s // 8 for s in a.strides)
    td = TensorData(storage_for(max(1, math.prod(shape))), shape)
    assert td.is_contiguous()
    assert td.size == a.size and td.ndim == a.ndim


@given(strided_views())
def test_is_contiguous_matches_numpy_c_contiguity(td):
    assert td.is_contiguous() == oracle(td).flags.c_contiguous


# --- permute / transpose / .T -------------------------------------------------------------------


@given(strided_views(), st.data())
def test_permute_is_a_zero_copy_transpose(td, data):
    perm = data.draw(st.permutations(range(td.ndim)))
    assert_denotes(td.permute(tuple(perm)), np.transpose(oracle(td), perm), td.storage)


def test_permute_rejects_non_permutations():
    td = TensorData(storage_for(6), (2, 3))
    for bad in [(0, 0), (0,), (0, 1, 2), (1, 2)]:
        with pytest.raises(tl.ShapeError):
            td.permute(bad)


@given(strided_views(min_dims=2, max_dims=4), st.data())
def test_tensor_transpose_and_T_share_storage(td, data):
    x = tl.from_numpy(np.zeros(1))  # any tensor; give it the random view
    x = x.detach()
    x._td = td
    d0 = data.draw(st.integers(-td.ndim, td.ndim - 1))
    d1 = data.draw(st.integers(-td.ndim, td.ndim - 1))
    y = x.transpose(d0, d1)
    assert y._td.storage is td.storage
    np.testing.assert_array_equal(y.to_numpy(), np.swapaxes(oracle(td), d0, d1))
    assert x.T._td.storage is td.storage
    np.testing.assert_array_equal(x.T.to_numpy(), oracle(td).T)
    np.testing.assert_array_equal(x.mT.to_numpy(), np.swapaxes(oracle(td), -1, -2))


def test_T_of_headline_example_shares_storage():
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    t = x.T
    assert t._td.storage is x._td.storage
    assert t.stride() == (1, 2) and x.stride() == (2, 1)
    np.testing.assert_array_equal(t.detach().numpy(), [[1.0, 3.0], [2.0, 4.0]])
    with tl.no_grad():
        x[0, 1] = 20.0  # a write through the base is visible through the transpose
    assert t[1, 0].item() == 20.0


# --- view / reshape ----------------------------------------------------------------------------


@given(strided_views(max_side=4), st.data())
def test_view_possible_exactly_when_numpy_reshapes_without_copy(td, data):
    new_shape = data.draw(view_shapes(td.size))
    a = oracle(td)
    v = td.view(new_shape)
    expected_possible = numpy_can_view(a, new_shape)
    assert (v is not None) == expected_possible, (
        f"view {td} -> {new_shape}: torchlight says {'possible' if v is not None else 'impossible'}, "
        f"numpy says {'possible' if expected_possible else 'impossible'}"
    )
    if v is not None:
        assert_denotes(v, a.reshape(new_shape), td.storage)


@pytest.mark.parametrize(
    "shape, strides, new, possible",
    [
        ((2, 3), (3, 1), (6,), True),
        ((3, 2), (1, 3), (6,), False),  # a transpose cannot be flattened
        ((3, 2), (1, 3), (3, 2, 1), True),  # ...but size-1 dims may be added anywhere
        ((3, 2), (1, 3), (3, 1, 2), True),
        ((4, 3), (6, 1), (2, 2, 3), True),  # splitting a strided dim is fine (PyTorch's rule)
        ((4, 3), (6, 1), (12,), False),  # merging across the gap is not
        (
            (2, 3, 4),
            (24, 4, 1),
            (2, 12),
            True,
        ),  # the last two dims are contiguous w.r.t. each other
        ((2, 3, 4), (24, 4, 1), (6, 4), False),
        ((2, 1, 3), (3, 100, 1), (6,), True),  # a size-1 dim's stride does not matter
        ((2, 2, 1, 3), (12, 3, 100, 1), (2, 6), True),  # ...also inside a non-contiguous view
        ((2, 2, 1, 3), (12, 3, 100, 1), (4, 3), False),
        ((3, 4), (0, 1), (12,), False),  # stride 0 (expanded) cannot merge
        ((3, 4), (0, 1), (3, 2, 2), True),
    ],
)
def test_view_rule_examples(shape, strides, new, possible):
    n = sum((s - 1) * k for s, k in zip(shape, strides)) + 1
    td = TensorData(storage_for(n), shape, strides, 0)
    assert numpy_can_view(oracle(td), new) == possible  # the oracle agrees with the table
    v = td.view(new)
    assert (v is not None) == possible
    if possible:
        assert_denotes(v, oracle(td).reshape(new), td.storage)


def test_view_infers_minus_one_and_checks_size():
    td = TensorData(storage_for(24), (2, 3, 4))
    assert td.view((-1, 4)).shape == (6, 4)
    assert td.view((4, -1, 2)).shape == (4, 3, 2)
    for bad in [(5, -1), (-1, -1), (25,), (2, 3, 5), (0, -1)]:
        with pytest.raises(tl.ShapeError):
            td.view(bad)


@given(strided_views(max_side=3), st.data())
def test_tensor_reshape_copies_only_when_needed(td, data):
    x = tl.from_numpy(np.zeros(1)).detach()
    x._td = td
    new_shape = data.draw(view_shapes(td.size))
    a = oracle(td)
    y = x.reshape(*new_shape)
    np.testing.assert_array_equal(y.to_numpy(), a.reshape(new_shape))
    shares = y._td.storage is td.storage
    assert shares == numpy_can_view(a, new_shape), (
        "reshape must copy exactly when a view is impossible"
    )
    if numpy_can_view(a, new_shape):
        y2 = x.view(*new_shape)
        assert y2._td.storage is td.storage
    else:
        with pytest.raises(tl.ShapeError, match="view"):
            x.view(*new_shape)


# --- expand ------------------------------------------------------------------------------------


@given(strided_views(max_dims=3), st.data())
def test_expand_gives_stride_zero(td, data):
    # expand: size-1 dims to any size, plus new leading dims; -1 keeps a size
    target = []
    for s in td.shape:
        if s == 1:
            target.append(data.draw(st.integers(1, 4)))
        else:
            target.append(data.draw(st.sampled_from([s, -1])))
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
    e = td.expand(tuple(lead) + tuple(target))
    final = tuple(lead) + tuple(s if t == -1 else t for s, t in zip(td.shape, target))
    assert_denotes(e, np.broadcast_to(oracle(td), final), td.storage)
    for k in range(len(lead)):
        assert e.strides[k] == 0
    for k, (s, t) in enumerate(zip(td.shape, target)):
        if s == 1 and t != 1:
            assert e.strides[len(lead) + k] == 0


def test_expand_rejects_non_singleton_and_fewer_dims():
    td = TensorData(storage_for(6), (2, 3))
    with pytest.raises(tl.ShapeError, match=r"\(2, 3\)"):
        td.expand((4, 3))
    with pytest.raises(tl.ShapeError):
        td.expand((3,))
    with pytest.raises(tl.ShapeError, match="-1"):
        td.expand((-1, 2, 3))  # -1 only keeps an existing size (PyTorch)
    with pytest.raises(tl.ShapeError):
        td.expand((2, 0))


# --- squeeze / unsqueeze -----------------------------------------------------------------------


@given(strided_views(max_dims=3), st.data())
def test_unsqueeze_inserts_a_size_one_dim(td, data):
    dim = data.draw(st.integers(0, td.ndim))
    u = td.unsqueeze(dim)
    assert_denotes(u, np.expand_dims(oracle(td), dim), td.storage)
    # the new dim is consistent with the layout: a contiguous view stays contiguous
    assert u.is_contiguous() == td.is_contiguous()


@given(st.lists(st.sampled_from([1, 1, 2, 3]), max_size=5).map(tuple), st.data())
def test_tensor_squeeze_and_unsqueeze_are_views(shape, data):
    n = math.prod(shape)
    a = np.arange(2 * n, dtype=np.float64)[::2].reshape(shape)  # strided, not packed
    x = tl.tensor(np.arange(2 * n, dtype=np.float64))[::2].reshape(*shape)
    assert x._td.storage.size == 2 * n
    s = x.squeeze()
    np.testing.assert_array_equal(s.to_numpy(), np.squeeze(a))
    assert s._td.storage is x._td.storage
    if x.ndim:
        d = data.draw(st.integers(-x.ndim, x.ndim - 1))
        sd = x.squeeze(d)
        expected = (
            np.squeeze(a, d) if a.shape[d] == 1 else a
        )  # squeezing a non-1 dim is a no-op (PyTorch)
        np.testing.assert_array_equal(sd.to_numpy(), expected)
        assert sd._td.storage is x._td.storage
    d = data.draw(st.integers(-x.ndim - 1, x.ndim))
    u = x.unsqueeze(d)
    np.testing.assert_array_equal(u.to_numpy(), np.expand_dims(a, d))
    assert u._td.storage is x._td.storage


# --- slicing and select ------------------------------------------------------------------------

bounds = st.one_of(st.none(), st.integers(-7, 7))


@given(strided_views(min_dims=1), st.data())
def test_slice_with_steps_and_negative_bounds(td, data):
    dim = data.draw(st.integers(0, td.ndim - 1))
    start, stop = data.draw(bounds), data.draw(bounds)
    step = data.draw(st.one_of(st.none(), st.integers(1, 4)))
    s = td.slice(dim, start, stop, step)
    expected = oracle(td)[(slice(None),) * dim + (slice(start, stop, step),)]
    assert s.storage is td.storage
    np.testing.assert_array_equal(oracle(s), expected)
    assert s.shape == expected.shape


@given(strided_views(min_dims=1), st.data())
def test_select_with_negative_index(td, data):
    dim = data.draw(st.integers(0, td.ndim - 1))
    i = data.draw(st.integers(-td.shape[dim], td.shape[dim] - 1))
    assert_denotes(td.select(dim, i), np.take(oracle(td), i, axis=dim), td.storage)


def test_select_out_of_range_names_index_and_size():
    td = TensorData(storage_for(6), (2, 3))
    with pytest.raises(tl.TensorIndexError, match=r"3.*size 3"):
        td.select(1, 3)
    with pytest.raises(tl.TensorIndexError, match=r"-3.*size 2"):
        td.select(0, -3)


def test_slice_rejects_non_positive_step():
    td = TensorData(storage_for(6), (6,))
    with pytest.raises(tl.ShapeError):
        td.slice(0, None, None, 0)
    with pytest.raises(tl.ShapeError):
        td.slice(0, None, None, -1)


@given(shapes(1, 3, 1, 6), st.data())
def test_tensor_basic_indexing_is_a_view(shape, data):
    a = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    x = tl.tensor(a)
    idx = []
    for s in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "none", "full"]))
        if kind == "int":
            idx.append(data.draw(st.integers(-s, s - 1)))
        elif kind == "slice":
            idx.append(
                slice(
                    data.draw(bounds),
                    data.draw(bounds),
                    data.draw(st.one_of(st.none(), st.integers(1, 3))),
                )
            )
        elif kind == "none":
            idx.extend([None, slice(None)])
        else:
            idx.append(slice(None))
    if data.draw(st.booleans()):
        k = data.draw(st.integers(0, len(idx)))
        idx.insert(k, Ellipsis)
    idx = tuple(idx)
    y = x[idx]
    np.testing.assert_array_equal(y.to_numpy(), a[idx])
    assert y._td.storage is x._td.storage


# --- unfold ------------------------------------------------------------------------------------


@given(strided_views(min_dims=1, max_dims=3, max_side=5), st.data())
def test_unfold_is_a_sliding_window_view(td, data):
    dim = data.draw(st.integers(0, td.ndim - 1))
    size = data.draw(st.integers(1, td.shape[dim]))
    step = data.draw(st.integers(1, 3))
    u = td.unfold(dim, size, step)
    windows = sliding_window_view(oracle(td), size, axis=dim)
    expected = windows[(slice(None),) * dim + (slice(None, None, step),)]
    assert_denotes(u, expected, td.storage)


def test_unfold_rejects_windows_that_do_not_fit():
    td = TensorData(storage_for(5), (5,))
    for size, step in [(6, 1), (0, 1), (2, 0)]:
        with pytest.raises(tl.ShapeError):
            td.unfold(0, size, step)


# --- chains of views stay zero-copy -------------------------------------------------------------


@given(strided_views(min_dims=2, max_dims=3, kind="chain"), st.data())
def test_a_chain_of_views_writes_through_to_the_base(td, data):
    """Writing through a derived view changes exactly the storage elements numpy says it covers."""
    x = tl.from_numpy(np.zeros(1)).detach()
    x._td = td
    perm = data.draw(st.permutations(range(td.ndim)))
    y = x.permute(*perm)[..., ::2].unsqueeze(0)
    before = td.storage.copy()
    y.fill_(-1.0)
    # numpy view of the same chain, on a copy of the storage
    ref_store = before.copy()
    ref = as_strided(ref_store[td.offset :], td.shape, tuple(s * 8 for s in td.strides))
    np.expand_dims(np.transpose(ref, perm)[..., ::2], 0)[...] = -1.0
    np.testing.assert_array_equal(td.storage, ref_store)


# --- the pure index helpers shared by the compiled backends ---------------------------------------


@given(shapes(0, 4, 1, 4), shapes(0, 4, 1, 4))
def test_shape_broadcast_matches_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        expected = None
    assert shape_broadcast(a, b) == expected


@given(strided_views(), st.data())
def test_index_to_position_and_to_index(td, data):
    assume(td.size > 0)
    ordinal = data.draw(st.integers(0, td.size - 1))
    idx = [0] * td.ndim
    to_index(ordinal, td.shape, idx)
    assert tuple(idx) == np.unravel_index(ordinal, td.shape)
    pos = index_to_position(idx, td.strides, td.offset)
    assert td.storage[pos] == oracle(td)[tuple(idx)]


@given(shapes(1, 4, 1, 4), st.data())
def test_broadcast_index_reads_the_broadcast_element(big, data):
    small = tuple(1 if data.draw(st.booleans()) else s for s in big)[
        data.draw(st.integers(0, len(big))) :
    ]
    a = np.arange(math.prod(small)).reshape(small)
    b = np.broadcast_to(a, big)
    big_idx = tuple(data.draw(st.integers(0, s - 1)) for s in big)
    out = [0] * len(small)
    broadcast_index(big_idx, big, small, out)
    assert a[tuple(out)] == b[big_idx]


@given(strided_views(max_dims=3))
def test_contiguous_copies_only_non_contiguous_views(td):
    x = tl.from_numpy(np.zeros(1)).detach()
    x._td = td
    c = x.contiguous()
    np.testing.assert_array_equal(c.to_numpy(), oracle(td))
    if td.is_contiguous():
        assert c is x
    else:
        assert c._td.storage is not td.storage
        assert (
            c.is_contiguous()
            and c.stride() == contiguous_strides(td.shape)
            and c.storage_offset() == 0
        )


@given(strided_views(max_side=4), st.sampled_from(["contiguous", "broadcast"]))
def test_coalesce_keeps_every_position(td, second):
    """Coalescing the dims of two operands together (the numba/CUDA kernels' first step) keeps,
    for every element in C order, the positions of both, and never keeps a size-1 dim."""
    strides2 = contiguous_strides(td.shape) if second == "contiguous" else (0,) * td.ndim
    shape, (s1, s2) = coalesce(td.shape, (td.strides, strides2))
    assert 1 not in shape or shape == (1,)
    assert math.prod(shape) == max(td.size, 1) or td.size == 0
    if td.size == 0:
        return

    def positions(sh, st_):
        return [sum(i * s for i, s in zip(idx, st_)) for idx in np.ndindex(*sh)]

    assert positions(shape, s1) == positions(td.shape, td.strides)
    assert positions(shape, s2) == positions(td.shape, strides2)


@pytest.mark.parametrize(
    "shape, strides, want",
    [
        ((2, 3, 4), ((12, 4, 1), (12, 4, 1)), ((24,), [(1,), (1,)])),  # contiguous: one dim
        ((2, 3, 4), ((12, 4, 1), (0, 4, 1)), ((2, 12), [(12, 1), (0, 1)])),  # broadcast batch
        (
            (2, 3, 4),
            ((1, 2, 6), (12, 4, 1)),
            ((2, 3, 4), [(1, 2, 6), (12, 4, 1)]),
        ),  # permuted: no merge
        ((1, 1), ((5, 1), (0, 0)), ((1,), [(0,), (0,)])),  # all size 1
    ],
)
def test_coalesce_examples(shape, strides, want):
    got_shape, got_strides = coalesce(shape, strides)
    assert (got_shape, list(got_strides)) == (want[0], want[1])


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.integers(0, 3),
    st.booleans(),
)
def test_a_kept_shape_resolves_as_numpy_and_as_the_first_time(sizes, at, infer):
    """``infer_shape`` keeps what it resolved; asked again (and through ``view``), it gives
    numpy's answer, and a request that does not fit fails every time."""
    from torchlight.tensor.storage import infer_shape

    size = math.prod(sizes)
    request = tuple(-1 if infer and i == at % len(sizes) else s for i, s in enumerate(sizes))
    expected = np.zeros(size).reshape(request).shape
    assert infer_shape(request, size) == expected
    assert infer_shape(request, size) == expected  # kept
    assert tl.zeros(size).view(*request).shape == expected
    bad = request + (size + 1,)  # never divides the count
    for _ in range(2):  # a failure is not kept as an answer
        with pytest.raises(tl.ShapeError):
            infer_shape(bad, size)
    assert infer_shape(tuple(np.int64(s) for s in request), size) == expected  # numpy ints too


def test_kept_shapes_stay_bounded_and_odd_entries_are_not_kept():
    from torchlight.tensor import storage

    for n in range(1, storage.INFERRED_MAX + 50):
        assert storage.infer_shape((n, -1), 2 * n) == (n, 2)
    assert len(storage._INFERRED) <= storage.INFERRED_MAX
    before = len(storage._INFERRED)
    assert storage.infer_shape((tl.tensor(2), 3), 6) == (2, 3)  # a 0-d tensor: resolved, not kept
    assert len(storage._INFERRED) == before
    with pytest.raises(TypeError):  # an unhashable entry fails as int() would, not in the table
        storage.infer_shape((2, [3]), 6)
