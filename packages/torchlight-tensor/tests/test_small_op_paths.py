"""The short paths small tensors take: ``stack`` as one op, ``view`` resolving its shape once,
0-d integer tensors indexing as ints, Python numbers written without a host tensor, and fill
factories recording their index range without reading the data. Each is checked for the values,
views, gradients and errors of the general path it shortcuts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tltensor_helpers import LAYOUTS, Maker, assert_close

import torchlight as tl
from torchlight.autograd import Function
from torchlight.tensor.backend.bounds import SHORT_RANGE, value_range
from torchlight.tensor.dispatch import index_range
from torchlight.tensor.functions.activation import cross_entropy_rows
from torchlight.tensor.functions.concat import Cat, Stack
from torchlight.tensor.functions.gathering import embedding
from torchlight.tensor.functions.shape import View


def _f64(*shape, seed=0):
    return tl.tensor(np.random.default_rng(seed).standard_normal(shape))


# --- stack ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_of_views_matches_numpy(layout, dim):
    m = Maker(3)
    pairs = [m.build((2, 3), layout) for _ in range(4)]
    out = tl.stack([t for _, t in pairs], dim)
    assert_close(out, np.stack([a for a, _ in pairs], axis=dim))
    assert out._td.is_contiguous()


def test_stack_is_one_recorded_op_whose_gradient_unbinds():
    a = _f64(2, 3, seed=1).requires_grad_()
    b = _f64(2, 3, seed=2).requires_grad_()
    out = tl.stack([a, b, a.t().t()], 1)
    assert out.grad_fn is not None and out._history.fn is Stack
    assert [v is a for v in out._history.inputs[1:]] == [True, False, False]
    w = _f64(2, 3, 3, seed=3)
    (out * w).sum().backward()
    wn = w.numpy()
    np.testing.assert_allclose(a.grad.numpy(), wn[:, 0] + wn[:, 2])
    np.testing.assert_allclose(b.grad.numpy(), wn[:, 1])


def test_stack_gradcheck_on_a_strided_input():
    base = _f64(4, 6, seed=4)
    a = base[::2, 1::2].requires_grad_()  # a non-contiguous leaf
    b = _f64(2, 3, seed=5).requires_grad_()
    assert tl.gradcheck(lambda x, y: tl.stack([x, y * y, x], 2), (a, b))


def test_stack_of_scalars_and_dtype_promotion():
    out = tl.stack([tl.tensor(1), tl.tensor(2.5), tl.tensor(True)])
    assert out.dtype == tl.float32 and out.tolist() == [1.0, 2.5, 1.0]
    ints = tl.stack([tl.tensor([1, 2]), tl.tensor([3, 4])])
    assert ints.dtype == tl.int64 and ints.tolist() == [[1, 2], [3, 4]]


def test_stack_errors():
    with pytest.raises(tl.ShapeError, match="non-empty"):
        tl.stack([])
    with pytest.raises(tl.ShapeError, match=r"tensor #2 has shape \(3,\)"):
        tl.stack([tl.zeros(2), tl.zeros(2), tl.zeros(3)])
    with pytest.raises(tl.TensorIndexError, match="Dimension out of range"):
        tl.stack([tl.zeros(2), tl.zeros(2)], 3)


def test_stack_and_cat_refuse_mixed_devices(fresh_registry):
    from test_errors import _OtherCpu

    tl.register_backend("othercpu", _OtherCpu())
    a, b = tl.ones(2), tl.ones(2, device="othercpu")
    for op in (tl.stack, tl.cat):
        with pytest.raises(tl.BackendError, match="othercpu"):
            op([a, b])


def test_cat_checks_every_piece():
    a = tl.zeros(2, 3)
    with pytest.raises(tl.ShapeError, match="zero-dimensional tensor \\(at position 1\\)"):
        tl.cat([a, tl.tensor(1.0)])
    with pytest.raises(tl.ShapeError, match=r"tensor #1 has shape \(2, 4\)"):
        tl.cat([a, tl.zeros(2, 4)], 0)
    with pytest.raises(tl.ShapeError, match=r"tensor #1 has shape \(2, 3, 1\)"):
        tl.cat([a, tl.zeros(2, 3, 1)], 0)
    out = tl.cat([a, tl.ones(2, 1, dtype=tl.float64), tl.ones(2, 2, dtype=tl.int64)], 1)
    assert out.dtype == tl.float64 and out.shape == (2, 6)
    assert out.numpy()[:, 3:].tolist() == [[1.0] * 3] * 2


def test_cat_gradient_narrows_into_each_piece():
    a = _f64(2, 2, seed=6).requires_grad_()
    b = _f64(2, 4, seed=7)[:, ::2].requires_grad_()
    out = tl.cat([a, b, a], 1)
    assert out._history.fn is Cat
    w = _f64(2, 6, seed=8)
    (out * w).sum().backward()
    wn = w.numpy()
    np.testing.assert_allclose(a.grad.numpy(), wn[:, 0:2] + wn[:, 4:6])
    np.testing.assert_allclose(b.grad.numpy(), wn[:, 2:4])


def test_stack_replays_from_a_traced_tape():
    def fn(x, y):
        return tl.stack([x, y * 2], 1).sum(0)

    x, y = _f64(3, 4, seed=9), _f64(3, 4, seed=10)
    tape = tl.jit.trace(fn, x, y)
    assert tape.count_ops().get("stack") == 1
    x2, y2 = _f64(5, 4, seed=11), _f64(5, 4, seed=12)
    np.testing.assert_allclose(tape(x2, y2).numpy(), fn(x2, y2).numpy())


# --- view -----------------------------------------------------------------------------------------


def test_view_resolves_minus_one_and_shares_storage():
    x = tl.arange(12.0)
    v = x.view(-1, 1)
    assert v.shape == (12, 1) and v._td.storage is x._td.storage
    assert x.view(3, -1).shape == (3, 4) and x.view((2, -1, 3)).shape == (2, 2, 3)
    w = x.view(3, 4).t()  # not contiguous: only views that keep rows apart work
    assert w.view(4, 3, 1).shape == (4, 3, 1)
    with pytest.raises(tl.ShapeError, match="not compatible"):
        w.view(-1)
    with pytest.raises(tl.ShapeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(tl.ShapeError, match="invalid for input of shape"):
        x.view(5, -1)
    with pytest.raises(tl.ShapeError, match="invalid for input of shape"):
        x.view(4, 4)


def test_view_forward_refuses_a_shape_that_does_not_fit():
    # a replayed tape hands View a shape it adapted itself: forward re-checks the element count
    with pytest.raises(tl.ShapeError, match="invalid for input of shape"):
        View.apply(tl.zeros(6), (4, 2))
    with pytest.raises(tl.ShapeError, match="invalid for input of shape"):
        View.apply(tl.zeros(6), (-2, -3))


def test_view_gradient_and_replay_with_a_new_batch():
    x = _f64(4, 6, seed=13).requires_grad_()
    assert tl.gradcheck(lambda t: t.view(-1, 3) * t.view(8, 3), (x,))

    def fn(t):
        return t.view(-1, 2) * 3

    tape = tl.jit.trace(fn, _f64(4, 6, seed=14))
    x2 = _f64(7, 6, seed=15)
    np.testing.assert_allclose(tape(x2).numpy(), fn(x2).numpy())


# --- 0-d integer tensors as indices ---------------------------------------------------------------


def test_zero_dim_int_tensor_indexes_like_an_int():
    a = np.arange(20.0).reshape(4, 5)
    x = tl.tensor(a)
    i, j = tl.tensor(2), tl.tensor(-1)
    got = x[i, j]
    assert got.shape == () and got.item() == a[2, -1]
    row = x[i]
    assert row._td.storage is x._td.storage  # a view, as x[2] is
    np.testing.assert_array_equal(row.numpy(), a[2])
    np.testing.assert_array_equal(x[..., i].numpy(), a[..., 2])
    np.testing.assert_array_equal(x[i, 1:].numpy(), a[2, 1:])
    np.testing.assert_array_equal(x[None, j].numpy(), a[None, -1])
    # combined with an index tensor it broadcasts like numpy's int
    np.testing.assert_array_equal(x[i, tl.tensor([0, 3])].numpy(), a[2, [0, 3]])
    xt = x.t()  # non-contiguous
    np.testing.assert_array_equal(xt[i].numpy(), a.T[2])


def test_zero_dim_index_that_is_a_view_of_a_larger_tensor():
    # the view keeps its base's value range (0..4): the value must be its own
    idx = tl.tensor([0, 4, 1])
    x = tl.arange(10.0).view(5, 2)
    np.testing.assert_array_equal(x[idx[1]].numpy(), [8.0, 9.0])
    np.testing.assert_array_equal(x[idx[2]].numpy(), [2.0, 3.0])
    step = idx[1]
    idx[1] = 3  # rewritten in place: read again
    np.testing.assert_array_equal(x[step].numpy(), [6.0, 7.0])


def test_zero_dim_index_out_of_range_and_wrong_kinds():
    x = tl.zeros(3, 2)
    with pytest.raises(tl.TensorIndexError, match="index 3 is out of range"):
        x[tl.tensor(3)]
    with pytest.raises(tl.TensorIndexError, match="index -4 is out of range"):
        x[tl.tensor(-4)]
    with pytest.raises(tl.TensorIndexError, match="too many indices"):
        x[tl.tensor(0), tl.tensor(0), tl.tensor(0)]
    with pytest.raises(tl.TensorIndexError):
        x[0][tl.tensor(2)] = 1.0
    with pytest.raises(tl.DTypeError, match="int64 or bool"):
        x[tl.tensor(1.0)]
    # a 0-d bool tensor stays a mask: True adds a dim of 1, False one of 0
    assert x[tl.tensor(True)].shape == (1, 3, 2)
    assert x[tl.tensor(False)].shape == (0, 3, 2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_int_index_reads_and_writes_as_the_general_path(layout):
    # x[i] and x[i] = v with a plain int skip expanding the index: same view, same checks
    a, x = Maker(21).build((4, 3, 2), layout)
    for i in range(-4, 4):
        assert_close(x[i], a[i])
        assert x[i]._td.storage is x._td.storage  # a view, not a copy
    for bad in (4, -5):
        with pytest.raises(tl.TensorIndexError, match="out of range"):
            x[bad]
    with pytest.raises(tl.TensorIndexError, match="too many indices"):
        tl.tensor(3.0)[0]
    for mask in (True, False, (0, True), (Ellipsis, np.False_)):  # a 0-d mask, not 1 or 0
        assert x[mask].shape == a[mask].shape
    y, want = x.clone(), a.copy()  # (a copy: an expanded view's elements alias one another)
    before = y._version[0]
    y[-1] = 7.5
    y[1][2][0] = -2
    want[-1] = 7.5
    want[1, 2, 0] = -2
    np.testing.assert_array_equal(y.numpy(), want)
    assert y._version[0] == before + 2
    with pytest.raises(tl.TensorIndexError, match="out of range"):
        y[4] = 1.0
    w = _f64(4, 3, seed=22).requires_grad_()
    assert tl.gradcheck(lambda t: t[1] * t[-1] + t[1], (w,))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ints_with_whole_dims_read_and_write_in_one_view(layout):
    # x[i, :, j] and x[i, 0, :] (ints and whole dims, a batch loop's writes) take one view;
    # x[i, 0, p, :] += 1 writes the updated view back onto itself (no copy, same result)
    a, x = Maker(23).build((4, 3, 5, 2), layout)
    for idx in ((1, slice(None), 3), (-1, 0, slice(None)), (2, slice(None), -5, 1), (0, 2)):
        assert_close(x[idx], a[idx])
        assert x[idx]._td.storage is x._td.storage
    for bad in ((4, slice(None), 0), (0, slice(None), -6)):
        with pytest.raises(tl.TensorIndexError, match="out of range"):
            x[bad]
    y, want = x.clone(), a.copy()
    before = y._version[0]
    y[2, 0, :, 1] += 1.0
    y[1, :, 4] *= -2.0
    y[3, 1, 2, :] = y[3, 1, 2, :]  # the same view: nothing changes
    y[0, 0, 1:, 0] = y[0, 0, :-1, 0].clone()  # overlapping, not the same view: shifted
    want[2, 0, :, 1] += 1.0
    want[1, :, 4] *= -2.0
    want[0, 0, 1:, 0] = want[0, 0, :-1, 0].copy()
    np.testing.assert_array_equal(y.numpy(), want)
    assert y._version[0] > before
    w = _f64(4, 3, 5, seed=24).requires_grad_()
    assert tl.gradcheck(lambda t: t[1, :, 2] * t[-1, 0, :3].sum(), (w,))


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64, tl.int64, tl.bool])
def test_item_reads_the_one_element_of_any_view(dtype):
    a = (np.arange(24).reshape(4, 6) % 5).astype(dtype.np)
    x = tl.tensor(a).t()[3:4, 2:3]  # one element at an offset, through a transposed view
    got = x.item()
    assert got == a.T[3, 2] and type(got) is type(a.T[3, 2].item())
    assert tl.tensor(a)[2, 5].item() == a[2, 5]
    with pytest.raises(tl.ShapeError, match="one-element"):
        tl.tensor(a).item()


def test_zero_dim_index_gradient_and_setitem():
    x = _f64(3, 4, seed=16).requires_grad_()
    i = tl.tensor(1)
    assert tl.gradcheck(lambda t: t[i] * t[i, tl.tensor(2)], (x,))
    y = tl.zeros(3, 4)
    before = y._version[0]
    y[i] = 5.0
    y[tl.tensor(2), tl.tensor(-1)] = tl.tensor(7.0)
    y[0, 1:] = 3
    assert y._version[0] == before + 3  # one bump per assignment, as in PyTorch
    want = np.zeros((3, 4))
    want[1] = 5.0
    want[2, -1] = 7.0
    want[0, 1:] = 3
    np.testing.assert_array_equal(y.numpy(), want)


def test_zero_dim_index_on_another_device(fresh_registry):
    from test_errors import _OtherCpu

    tl.register_backend("othercpu", _OtherCpu())
    x = tl.arange(6.0).view(3, 2)
    i = tl.tensor(2, device="othercpu")
    np.testing.assert_array_equal(x[i].numpy(), [4.0, 5.0])
    far = tl.tensor([0, 1, 2], device="othercpu")
    np.testing.assert_array_equal(x[far[1]].numpy(), [2.0, 3.0])
    y = tl.zeros(3, 2, device="othercpu")
    y[i] = 1.0
    assert y.to("cpu").numpy().tolist() == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]


def test_a_traced_tape_replays_a_zero_dim_index_with_its_new_value():
    def fn(x, i):
        return x[i] * 2

    x = _f64(4, 3, seed=17)
    tape = tl.jit.trace(fn, x, tl.tensor(1))
    assert Function.tracers == []
    np.testing.assert_allclose(tape(x, tl.tensor(3)).numpy(), x.numpy()[3] * 2)


# --- writing Python numbers; fill factories -------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, value, stored",
    [
        (tl.int64, -1, -1),
        (tl.int64, 2.7, 2),
        (tl.int64, True, 1),
        (tl.float32, 3, 3.0),
        (tl.float64, -0.5, -0.5),
        (tl.bool, 1, True),
        (tl.bool, 0.0, False),
    ],
)
def test_setitem_and_copy_of_a_python_number(dtype, value, stored):
    x = tl.zeros(4, 5, dtype=dtype)
    x[1:3, ::2] = value  # a non-contiguous target
    want = np.zeros((4, 5), dtype=dtype.np)
    want[1:3, ::2] = stored
    np.testing.assert_array_equal(x.numpy(), want)
    assert x.dtype is dtype
    y = tl.zeros(2, 3, dtype=dtype).t()
    y.copy_(value)
    assert (y.numpy() == np.asarray(stored, dtype=dtype.np)).all()


def test_setitem_of_lists_and_errors_are_unchanged():
    x = tl.zeros(2, 3, dtype=tl.int64)
    x[0] = [1, 2, 3]
    x[1, 1:] = np.array([7, 8])
    assert x.tolist() == [[1, 2, 3], [0, 7, 8]]
    with pytest.raises(tl.DTypeError, match="without overflow"):
        x[0] = 2**70
    with pytest.raises(tl.ShapeError):
        x[0] = [1, 2]
    assert x.tolist() == [[1, 2, 3], [0, 7, 8]]
    w = tl.zeros(2, requires_grad=True)
    with pytest.raises(tl.AutogradError, match="no_grad"):
        w[0] = 1.0


def _record(t):
    rec = t.__dict__.get("_index_range")
    return rec[:2] if rec is not None and rec[2] == t._version[0] else None


def test_indices_keep_their_bounds_through_a_number_written_and_a_roll():
    # makemore's MLP: idx = torch.roll(idx, 1, 1); idx[:, 0] = blank, nine times a step
    table = tl.arange(30.0).view(15, 2)
    idx = tl.tensor([[3, 4, 5], [6, 7, 8]])
    assert _record(idx) == (3, 8)
    idx = tl.roll(idx, 1, 1)
    assert _record(idx) == (3, 8) and idx.tolist() == [[5, 3, 4], [8, 6, 7]]
    idx[:, 0] = 14
    assert _record(idx) == (3, 14) and idx.tolist() == [[14, 3, 4], [14, 6, 7]]
    np.testing.assert_array_equal(embedding(idx, table).numpy(), table.numpy()[idx.numpy()])
    idx[0, 1:] = 2.0  # not a Python int: the record is dropped, not guessed
    assert _record(idx) is None


def test_a_widened_record_is_read_again_before_an_error():
    table = tl.zeros(15, 2)
    idx = tl.tensor([20, 1])
    idx[0] = 3  # the record now says [1, 20]: wider than the values [1, 3]
    assert _record(idx) == (1, 20)
    assert embedding(idx, table).shape == (2, 2)  # no false error
    idx[1] = 15
    with pytest.raises(tl.TensorIndexError, match="index 15 is out of range"):
        embedding(idx, table)
    idx[1] = -2
    with pytest.raises(tl.TensorIndexError, match="index -2 is out of range"):
        embedding(idx, table)
    target = tl.tensor([9, 0])
    target[0] = 2  # record [0, 9], values [0, 2]: 3 classes are enough
    loss = cross_entropy_rows(tl.zeros(2, 3), target, reduction="mean")
    assert loss.item() == pytest.approx(np.log(3.0))
    target[1] = 3
    with pytest.raises(tl.TensorIndexError, match="Target 3 is out of bounds"):
        cross_entropy_rows(tl.zeros(2, 3), target)


def test_a_write_into_a_saved_tensor_is_still_caught():
    x = tl.ones(3, requires_grad=True)
    w = tl.ones(3)
    y = x * w
    w[1:] = 2.0
    with pytest.raises(tl.AutogradError, match="modified by an in-place operation"):
        y.sum().backward()


@pytest.mark.parametrize(
    "make, lo",
    [
        (lambda: tl.zeros(17, dtype=tl.long), 0),
        (lambda: tl.ones(2, 3, dtype=tl.long), 1),
        (lambda: tl.full((4,), 7, dtype=tl.long), 7),
        (lambda: tl.full((4,), 2.7, dtype=tl.long), 2),
        (lambda: tl.full((2,), -3, dtype=tl.long), -3),
    ],
)
def test_fill_factories_record_their_single_value(make, lo):
    t = make()
    assert t.__dict__["_index_range"][:2] == (lo, lo)
    assert index_range(t) == (lo, lo)
    assert (t.numpy() == lo).all()


def test_an_empty_fill_has_no_range_and_index_checks_use_the_record():
    assert "_index_range" not in tl.zeros(0, dtype=tl.long).__dict__
    table = tl.zeros(5, 2)
    with pytest.raises(tl.TensorIndexError, match="index 5 is out of range"):
        table.index_select(0, tl.full((3,), 5, dtype=tl.long))
    with pytest.raises(tl.TensorIndexError, match="index -1 is out of range"):
        table.index_select(0, tl.full((3,), -1, dtype=tl.long))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 2 * SHORT_RANGE),
    kind=st.sampled_from(["int64", "float64", "bool"]),
    seed=st.integers(0, 2**16),
)
def test_value_range_agrees_with_numpy_either_side_of_the_short_threshold(n, kind, seed):
    """Short arrays take Python's min and max, long ones numpy's: both give Python ints equal to
    numpy's (floats truncated as int() does, the recorded range of tensor(floats, dtype=long))."""
    rng = np.random.default_rng(seed)
    arr = (rng.standard_normal((n, 1)) * 1e6).astype(kind)
    lo, hi = value_range(arr)
    assert (lo, hi) == (int(arr.min()), int(arr.max()))
    assert type(lo) is int and type(hi) is int


def test_tensor_of_a_list_records_the_range_of_its_stored_values():
    t = tl.tensor([3.9, -2.5, 7.0], dtype=tl.long)  # stored as 3, -2, 7
    assert t.__dict__["_index_range"][:2] == (-2, 7)
    assert t.tolist() == [3, -2, 7]


# --- ops that record nothing ----------------------------------------------------------------------


def test_basic_index_of_a_tensor_without_grad_is_a_plain_view():
    x = tl.arange(12.0).view(3, 4)
    v = x[1]
    assert v._history is None and not v.requires_grad
    assert v._version is x._version and v._base is x._base
    v[2] = -1.0  # a view: the write reaches x, and both see the new version
    assert x[1, 2].item() == -1.0 and x._version[0] == v._version[0] > 0
    w = tl.ones(3, 4, requires_grad=True)
    with tl.no_grad():
        assert w[0]._history is None
    assert w[0]._history is not None


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind_and_iteration_without_grad_are_plain_views(layout, dim):
    a, x = Maker(7).build((3, 4, 2), layout)
    parts = x.unbind(dim)
    expected = [np.take(a, i, axis=dim) for i in range(a.shape[dim])]
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        assert p._history is None and p._version is x._version
        assert_close(p, e)
    rows = list(x)  # iteration is unbind(0), as PyTorch's
    assert [r.tolist() for r in rows] == [e.tolist() for e in a]
    rows[1][0, 0] = 5.0  # a view: the write reaches x
    assert x[1, 0, 0].item() == 5.0
    with pytest.raises(TypeError, match="0-d"):
        iter(tl.tensor(1.0))


def test_unbind_records_when_it_must():
    w = _f64(3, 2, seed=40).requires_grad_()
    parts = w.unbind(1)
    assert all(p._history is not None for p in parts)
    (parts[0] * 2 + parts[1] * 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.tile([2.0, 3.0], (3, 1)))
    with tl.no_grad():
        assert all(p._history is None for p in w.unbind(0))
    # a trace records the slices even of a tensor without grad, so a replay reads new values
    tape = tl.jit.trace(lambda t: sum(t.unbind(0)), _f64(3, 2, seed=41))
    x2 = _f64(3, 2, seed=42)
    np.testing.assert_allclose(tape(x2).numpy(), x2.numpy().sum(0))


def test_one_row_linear_and_logsumexp_gradients():
    from torchlight.tensor.functions.linalg import linear

    x, w, b = (_f64(*s, seed=20 + k).requires_grad_() for k, s in enumerate([(1, 5), (3, 5), (3,)]))
    assert tl.gradcheck(linear, (x, w, b))
    y = _f64(4, 5, seed=30).requires_grad_()
    assert tl.gradcheck(lambda t: t.logsumexp(1) * 2 + t.logsumexp(0, keepdim=True).sum(), (y,))
    b.grad = None  # gradcheck's own backward passes left theirs
    linear(x, w, b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), np.ones(3))
    linear(x, w, b).sum().backward()  # the view of the incoming gradient was copied, not kept
    np.testing.assert_allclose(b.grad.numpy(), 2 * np.ones(3))
    assert tl.ones(1, 3).sum().item() == 3.0


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 1, 2, 5), (2, 0, 5)])
@pytest.mark.parametrize("transposed", [False, True])
def test_a_batch_of_sequences_is_one_linear_node(shape, transposed):
    """``(*, in)`` rows go into :class:`Linear` as they are (no reshape nodes around it), laid
    out contiguously or not; values and the three gradients against numpy."""
    from torchlight.tensor.functions.linalg import Linear, linear

    rng = np.random.default_rng(7)
    a, wn, bn = rng.standard_normal(shape), rng.standard_normal((4, 5)), rng.standard_normal(4)
    x = tl.tensor(np.swapaxes(a, 0, 1).copy() if transposed else a, requires_grad=True)
    w, b = tl.tensor(wn, requires_grad=True), tl.tensor(bn, requires_grad=True)
    xi = x.transpose(0, 1) if transposed else x
    y = linear(xi, w, b)
    assert y.shape == shape[:-1] + (4,) and y._history.fn is Linear
    np.testing.assert_allclose(y.detach().numpy(), a @ wn.T + bn)
    gn = rng.standard_normal(y.shape)
    (y * tl.tensor(gn)).sum().backward()
    gx = gn @ wn
    np.testing.assert_allclose(x.grad.numpy(), np.swapaxes(gx, 0, 1) if transposed else gx)
    rows, grows = a.reshape(-1, 5), gn.reshape(-1, 4)
    np.testing.assert_allclose(w.grad.numpy(), grows.T @ rows, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), grows.sum(0), atol=1e-12)


def test_a_batch_of_sequences_through_linear_gradchecks_and_guards_its_input():
    from torchlight.tensor.functions.linalg import linear

    x = _f64(2, 3, 5, seed=50).requires_grad_()
    w, b = _f64(4, 5, seed=51).requires_grad_(), _f64(4, seed=52).requires_grad_()
    assert tl.gradcheck(linear, (x, w, b))
    # create_graph: with L = Σ (x Wᵀ)², dL/dx = 2 (x Wᵀ) W is differentiable again, and
    # S = Σ dL/dx ⊙ V has dS/dW = 2 W (XᵀV + VᵀX) over the rows X of x and V of v
    v = _f64(2, 3, 5, seed=53)
    (linear(x, w) ** 2).sum().backward(create_graph=True)
    w.grad = None
    (x.grad * v).sum().backward()
    xr, vr, wn = x.detach().numpy().reshape(-1, 5), v.numpy().reshape(-1, 5), w.detach().numpy()
    np.testing.assert_allclose(w.grad.numpy(), 2 * wn @ (xr.T @ vr + vr.T @ xr))
    h = x * 1
    y = linear(h, w, b)  # the saved input is h itself: writing it before backward is caught
    with tl.no_grad():
        h[0, 0, 0] = 5.0
    with pytest.raises(tl.autograd.AutogradError, match="modified"):
        y.sum().backward()


# --- gradients of chained basic indices and of size-1 broadcasts -------------------------------


def _chained_cases(x):
    """Sums of chained basic reads of ``x`` (3, 4, 5): rows of rows, negative ints, a None, a
    slice after an int, a 0-d int64 index tensor, a numpy int, and a prefix with a slice (which
    must not be chained)."""
    rows = [x[i] for i in range(3)]
    yield rows[1][2][3] * 3
    yield rows[-1][-2][0] + rows[0][1][4] * 2
    yield (rows[2][None, 1, 2:4] * tl.tensor([1.0, -1.0], dtype=x.dtype)).sum()
    yield (rows[0][:, 1] ** 2).sum()
    yield rows[1][tl.tensor(3)][np.int64(2)] * 5
    yield (x[:, 1][2][1:3] * 4).sum()


def test_gradients_of_chained_basic_indices_match_numpy():
    a = np.random.default_rng(4).standard_normal((3, 4, 5))
    x = tl.tensor(a, requires_grad=True)
    loss = sum(_chained_cases(x))
    loss.backward()
    want = np.zeros_like(a)
    want[1, 2, 3] += 3
    want[-1, -2, 0] += 1
    want[0, 1, 4] += 2
    want[2, 1, 2:4] += [1.0, -1.0]
    want[0, :, 1] += 2 * a[0, :, 1]
    want[1, 3, 2] += 5
    want[2, 1, 1:3] += 4
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


def test_reading_one_element_of_each_row_builds_one_dense_gradient(monkeypatch):
    """``for i, row in enumerate(x): s = s + row[t[i]]`` (a CRF's gold path): each row's
    gradient reaches ``x`` as the part at ``(i, t[i])``, not as zeros of a row's size."""
    from torchlight.tensor.functions.index import IndexedGradient

    built = []
    dense = IndexedGradient.dense
    monkeypatch.setattr(IndexedGradient, "dense", lambda self: built.append(1) or dense(self))
    x = tl.tensor(np.random.default_rng(9).standard_normal((6, 4)), requires_grad=True)
    picks = tl.tensor([3, 0, 2, 2, 1, 0])
    s = tl.zeros(1, dtype=x.dtype)
    for i, row in enumerate(x):
        s = s + row[picks[i]] * (i + 1)
    s.backward()
    want = np.zeros((6, 4))
    want[np.arange(6), picks.numpy()] = np.arange(1, 7)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    assert len(built) == 1  # x's first part, once a second one arrives


def test_a_retained_row_gradient_is_dense_when_only_a_part_of_it_was_read():
    x = tl.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    row = x[1]
    row.retain_grad()
    (row[2] * 7).backward()
    np.testing.assert_array_equal(row.grad.numpy(), [0.0, 0.0, 7.0])
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 0.0, 0.0], [0.0, 0.0, 7.0]])


def test_chained_index_gradient_is_differentiable_twice():
    a = np.random.default_rng(5).standard_normal((2, 3))
    x = tl.tensor(a, requires_grad=True)
    (x[1][2] ** 3).backward(create_graph=True)
    g = x.grad
    np.testing.assert_allclose(g.detach().numpy()[1, 2], 3 * a[1, 2] ** 2)
    x.grad = None
    g.sum().backward()
    want = np.zeros_like(a)
    want[1, 2] = 6 * a[1, 2]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize(
    "shapes", [((1,), ()), ((1, 5), (5,)), ((1, 1), (1,)), ((1, 3, 1), (3, 1))]
)
def test_adding_a_size_one_broadcast_back_is_a_view_with_the_right_gradient(shapes):
    big, small = shapes
    a = tl.tensor(np.random.default_rng(6).standard_normal(big), requires_grad=True)
    b = tl.tensor(np.random.default_rng(7).standard_normal(small), requires_grad=True)
    w = tl.tensor(np.random.default_rng(8).standard_normal(big))
    ((a + b) * w).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), w.numpy().reshape(small), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), w.numpy(), rtol=1e-12)
    b.grad = None
    (((a + b) * w).sum() ** 2).backward(create_graph=True)  # sum_to recorded as a reshape
    gb = b.grad
    b.grad = None
    gb.sum().backward()  # gb = 2 s w (s the sum), so d(sum gb)/db sums to 2 (sum w)^2
    np.testing.assert_allclose(b.grad.numpy().sum(), 2 * w.numpy().sum() ** 2, rtol=1e-12)


# --- the "broadcast" capability: operands handed over as they are ---------------------------


@pytest.mark.parametrize("capable", [True, False], ids=["broadcast", "expanded-by-core"])
def test_broadcast_ops_and_gradients_with_and_without_the_capability(capable, monkeypatch):
    """A backend with ``broadcast`` gets each zip's operands as they are; one without it gets
    them expanded to the output's shape by the core. Values and gradients agree with numpy."""
    from torchlight.tensor.backend.numpy import NumpyBackend

    if not capable:
        monkeypatch.setattr(NumpyBackend, "capabilities", NumpyBackend.capabilities - {"broadcast"})
    shapes = []
    real, real_new = NumpyBackend.zip, NumpyBackend.zip_new
    monkeypatch.setattr(
        NumpyBackend,
        "zip",
        lambda self, op, a, b, out: (
            shapes.append((a.shape, b.shape, out.shape)) or real(self, op, a, b, out)
        ),
    )

    def zip_new(self, op, a, b, dtype):  # a result numpy allocates: its shape once made
        made = real_new(self, op, a, b, dtype)
        shapes.append((a.shape, b.shape, made[1].shape))
        return made

    monkeypatch.setattr(NumpyBackend, "zip_new", zip_new)
    rng = np.random.default_rng(10)
    a_np, b_np, c_np = (rng.standard_normal(s) for s in [(1, 5), (4, 5), (4, 1)])
    a, b, c = (tl.tensor(v, requires_grad=True) for v in (a_np, b_np, c_np))
    y = (a + b) * c - 2.0
    assert_close(y, (a_np + b_np) * c_np - 2.0)
    y.sum().backward()
    assert_close(a.grad, np.broadcast_to(c_np, (4, 5)).sum(0, keepdims=True))
    assert_close(c.grad, (a_np + b_np).sum(1, keepdims=True))
    first = shapes[0]  # a + b
    assert first == (((1, 5), (4, 5), (4, 5)) if capable else ((4, 5), (4, 5), (4, 5)))


# --- gradient formulas on the raw ops -------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_product_quotient_exp_log_gradients_match_numpy(layout):
    """Mul, Div, exp and log compute their gradients on the raw ops in a plain backward, and as
    recorded ops under create_graph: both against the hand derivation."""
    m = Maker(5)
    a_np, a = m.build((3, 4), layout)
    b_np, b = m.build((3, 4), layout)
    b_np = np.abs(b_np) + 0.5
    b = tl.tensor(b_np).requires_grad_()
    a.requires_grad_()
    ((a * b).exp().sum() + (a / b).sum() + b.log().sum()).backward()
    e = np.exp(a_np * b_np)
    assert_close(a.grad, e * b_np + 1 / b_np)
    assert_close(b.grad, e * a_np - a_np / b_np**2 + 1 / b_np)
    a.grad = b.grad = None
    (a * b / 2.0).sum().backward(create_graph=True)  # a.grad = b/2, b.grad = a/2: recorded
    a.grad.sum().backward()  # d(Σ b/2)/db = 1/2, added to b.grad
    assert_close(b.grad, a_np / 2 + 0.5)


def test_a_seed_of_another_dtype_gives_gradients_of_the_leaves_dtypes():
    """PyTorch casts a backward seed to the tensor's dtype: a float32 leaf gets a float32 grad."""
    x = tl.ones(3, requires_grad=True)
    w = tl.full((3,), 2.0, requires_grad=True)
    (x * w).exp().backward(tl.ones(3, dtype=tl.float64))
    assert x.grad.dtype is tl.float32 and w.grad.dtype is tl.float32
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2.0) * np.ones(3), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), np.exp(2.0) * np.ones(3), rtol=1e-6)
