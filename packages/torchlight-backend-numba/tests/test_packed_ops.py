"""The packed elementwise ops and sums (``_packed``; the "packed" rows of ``routing.TABLE``): ops
whose numpy form is several passes, on operands that are all C-contiguous and none broadcast,
run as one compiled call that takes storages and offsets. They agree with a float64 numpy
reference at any offset, write only ``out``'s elements, run on the serial and the parallel
compilations, are remembered per op and dtype only for packed calls, and every other layout
keeps its earlier route."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
from torchlight.backends.numba import backend as B
from torchlight.backends.numba import routing
from torchlight.backends.numba.backend import NumbaBackend
from torchlight.tensor.backend.numpy_ops import MAP, ZIP
from torchlight.tensor.indexing import contiguous_strides
from torchlight.tensor.storage import TensorData

BK = NumbaBackend()
ZIP_OPS = sorted(routing._PACKED_ZIP_ANY | routing._PACKED_ZIP_SMALL)
MAP_OPS = sorted(routing._PACKED_MAP_SMALL)


def _in_buffer(x, offset):
    """``x`` copied into a larger NaN buffer at ``offset``: a C-contiguous TensorData with an offset."""
    buf = np.full(x.size + offset + 3, np.nan, x.dtype)
    buf[offset : offset + x.size] = x.reshape(-1)
    return buf, TensorData(buf, x.shape, contiguous_strides(x.shape), offset)


def _reference(family, op, *xs):
    """The numpy backend's formula on float64 copies (its own tests hold it to hand derivations)."""
    xs = [x.astype(np.float64) for x in xs]
    out = np.empty_like(xs[0])
    (MAP if family == "map" else ZIP)[op](*xs, out)
    return out


def _check(family, op, shape, dtype, offsets, seed):
    if op in routing._FLAT_ANY_SIZE:
        dtype = np.float64  # in float32 these run _flat32's libm-free loops at every size
    rng = np.random.default_rng(seed)
    xs = [
        (rng.standard_normal(shape) * 3).astype(dtype) for _ in range(1 if family == "map" else 2)
    ]
    if op in ("sigmoid_back", "tanh_back"):
        xs[0] = np.tanh(xs[0])  # their first operand is the forward's output
    views = [_in_buffer(x, o)[1] for x, o in zip(xs, offsets)]
    obuf, out = _in_buffer(np.zeros(shape, dtype), offsets[-1])
    assert routing.route(family, op, views, out)[0] == f"_packed.{family}"
    (BK.map if family == "map" else BK.zip)(op, *views, out)
    n = out.size
    got = obuf[offsets[-1] : offsets[-1] + n].reshape(shape)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, _reference(family, op, *xs), rtol=tol, atol=tol)
    # only out's elements are written
    assert np.isnan(obuf[: offsets[-1]]).all() and np.isnan(obuf[offsets[-1] + n :]).all()


shapes = st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple)
offsets3 = st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5))


@settings(max_examples=40, deadline=None)
@given(
    shape=shapes, dtype=st.sampled_from([np.float32, np.float64]), offsets=offsets3, data=st.data()
)
def test_packed_zip_and_map_match_float64_numpy(shape, dtype, offsets, data):
    op = data.draw(st.sampled_from(ZIP_OPS))
    _check("zip", op, shape, dtype, offsets, abs(hash((shape, offsets, op))) % 2**32)
    op = data.draw(st.sampled_from(MAP_OPS))
    _check("map", op, shape, dtype, offsets[1:], abs(hash((shape, offsets, op))) % 2**32)


@pytest.mark.parametrize("op", ZIP_OPS)
def test_every_packed_zip_op_on_both_compilations(path, op):
    _check("zip", op, (5, 9), np.float32, (1, 2, 3), 0)


@pytest.mark.parametrize("op", MAP_OPS)
def test_every_packed_map_op_on_both_compilations(path, op):
    _check("map", op, (5, 9), np.float64, (2, 1), 1)


def _sum_reference(x, dims):
    return x.astype(np.float64).sum(dims, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple),
    dtype=st.sampled_from([np.float32, np.float64]),
    offsets=st.tuples(st.integers(0, 5), st.integers(0, 5)),
    data=st.data(),
)
def test_packed_sum_over_the_last_dims(shape, dtype, offsets, data):
    nd = len(shape)
    d0 = data.draw(st.integers(0, nd - 1))
    dims = tuple(range(d0, nd))  # the last dims: rows
    rng = np.random.default_rng(abs(hash((shape, dims))) % 2**32)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    _, a = _in_buffer(x, offsets[0])
    want = _sum_reference(x, dims)
    obuf, out = _in_buffer(np.zeros(want.shape, dtype), offsets[1])
    routing.clear_routes()
    with mock.patch.object(routing, "PACKED_SUM_MIN", 1):  # every size, not only from 4096
        assert routing.route("reduce", "sum", (a,), out, dims=dims)[0] == "_packed.sum"
        BK.reduce("sum", a, dims, out)
    routing.clear_routes()
    got = obuf[offsets[1] : offsets[1] + want.size].reshape(want.shape)
    # accumulated in float64: only the final rounding to the dtype
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(x).sum())
    assert np.isnan(obuf[: offsets[1]]).all() and np.isnan(obuf[offsets[1] + want.size :]).all()


def test_other_layouts_and_dtypes_keep_their_routes():
    x = tl.tensor(
        np.random.default_rng(2).standard_normal((64, 128)).astype(np.float32), device="numba"
    )
    row = tl.tensor(np.ones(128, np.float32), device="numba")
    assert routing.explain("tanh_back", x, x) == "_packed.zip"
    assert routing.explain("tanh_back", x, row) == "numpy"  # broadcast: not packed
    assert routing.explain("tanh_back", x.t(), x.t()) == "numpy"  # transposed
    assert routing.explain("sigmoid", x[:, ::2]) == "numpy"  # strided
    assert routing.explain("sum", x, dim=(0, 1)) == "_packed.sum"
    assert routing.explain("sum", x.t(), dim=0) == "numpy.reduce"
    assert routing.explain("sum", x, dim=0) == "numpy.reduce"  # columns: numpy's reduce
    assert routing.explain("sum", x.view(8, 8, 128), dim=(0, 2)) == "numpy.reduce"  # not rows
    assert routing.explain("sum", x[:4, :32], dim=1) == "numpy.reduce"  # below PACKED_SUM_MIN
    assert routing.explain("sum", x.double(), dim=1) == "_packed.sum"
    assert routing.explain("sum", x.long(), dim=1) == "numpy.reduce"  # ints: numpy
    assert routing.explain("prod", x, dim=1) == "numpy.reduce"
    assert routing.explain("add", x, x) == "numpy"  # one ufunc pass: numpy's as fast


def test_a_remembered_row_sum_is_not_taken_for_columns_of_the_same_dims():
    """The short key holds the dims, not the rank: a 1-D sum over dim 0 is one row, a 2-D sum
    over dim 0 is columns, and the second must not run the first's kernel (it once did, and
    wrote one value of 64: a whole program's losses turned NaN)."""
    rng = np.random.default_rng(5)
    flat = rng.standard_normal(routing.PACKED_SUM_MIN * 2)
    grid = rng.standard_normal((routing.PACKED_SUM_MIN // 32, 64))
    for _ in range(2):  # the second round runs on remembered routes
        np.testing.assert_allclose(tl.tensor(flat, device="numba").sum(0).item(), flat.sum())
        got = tl.tensor(grid, device="numba").sum(0).numpy()
        np.testing.assert_allclose(got, grid.sum(0), rtol=1e-12, atol=1e-12)
        got = tl.tensor(grid, device="numba").sum(1).numpy()  # rows again
        np.testing.assert_allclose(got, grid.sum(1), rtol=1e-12, atol=1e-12)


def test_packed_bounds():
    small = tl.tensor(np.zeros(routing.PACKED_MAX - 1, np.float64), device="numba")
    large = tl.tensor(np.zeros(routing.PACKED_MAX, np.float64), device="numba")
    assert routing.explain("silu", small) == "_packed.map"
    assert routing.explain("silu", large) == "numpy"
    assert routing.explain("silu_back", small, small) == "_packed.zip"
    assert routing.explain("silu_back", large, large) == "numpy"
    assert routing.explain("sigmoid_back", large, large) == "_packed.zip"  # arithmetic: any size
    huge = tl.tensor(np.zeros(routing.COLS_NUMBA_MIN, np.float32), device="numba")
    assert routing.explain("tanh_back", huge, huge) == "_packed.zip"
    assert routing.explain("sum", huge) == "_reduce.reduce_split"


def test_without_numpy_ufuncs_the_general_kernels_run():
    x = TensorData(np.ones(12, np.float32), (3, 4))
    out = TensorData(np.empty(12, np.float32), (3, 4))
    assert routing.route("zip", "tanh_back", (x, x), out, numpy_ufuncs=False)[0] == (
        "_elementwise.zip_flat"
    )
    assert routing.route("map", "sigmoid", (x,), out, numpy_ufuncs=False)[0] == (
        "_elementwise.map_flat"
    )
    s = TensorData(np.empty(3, np.float32), (3, 1))
    assert routing.route("reduce", "sum", (x,), s, numpy_ufuncs=False, dims=(1,))[0] == (
        "_reduce.reduce_kernel"
    )


def test_remembered_packed_routes_are_launched_directly_and_only_for_packed_calls(monkeypatch):
    """After one packed call, the next packed call of the op and dtypes launches the kernel
    without asking the table (``PACKED_SMALL``), with the same bits; after one call of another
    layout went to numpy, the next such call goes there without asking; the first call of each
    kind asks."""
    routing.clear_routes()
    rng = np.random.default_rng(3)
    y = np.tanh(rng.standard_normal((16, 32))).astype(np.float32)
    g = rng.standard_normal((16, 32)).astype(np.float32)
    ty, tg = tl.tensor(y, device="numba"), tl.tensor(g, device="numba")
    want = g * (1 - y.astype(np.float64) ** 2)
    out = tl.empty(16, 32, device="numba")
    asked = []
    real = routing.route
    monkeypatch.setattr(B, "route", lambda *args, **kw: asked.append(args[:2]) or real(*args, **kw))
    f = np.dtype(np.float32)
    for _ in range(2):  # the second round is answered by PACKED_SMALL
        BK.zip("tanh_back", ty.t()._td, tg.t()._td, out.t()._td)  # transposed: numpy's route
        np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=2e-6)
        BK.zip("tanh_back", ty._td, tg._td, out._td)
        np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=2e-6)
        s = tl.empty(16, 1, device="numba")
        BK.reduce("sum", ty._td, (1,), s._td)
        np.testing.assert_allclose(s.numpy()[:, 0], y.astype(np.float64).sum(1), rtol=1e-6)
        assert ("zip", "tanh_back", f, f) not in routing.NUMPY_SMALL  # never by op and dtype alone
    assert asked == [("zip", "tanh_back"), ("zip", "tanh_back"), ("reduce", "sum")]
    bound = min(routing.FLAT_MIN, routing.FLAT_ZIP_MIN, routing.TILE_ZIP_MIN)
    lo, hi, code, kernel, numpy_below = routing.PACKED_SMALL[("zip", "tanh_back", f, f)]
    assert (lo, hi, code, numpy_below) == (0, bound, routing.ZIP_CODES["tanh_back"], bound)
    assert kernel is not None
    tiny = tl.empty(4, 1, device="numba")  # below PACKED_SUM_MIN: numpy for every layout
    BK.reduce("sum", ty[:4, :8]._td, (1,), tiny._td)
    assert routing.NUMPY_SMALL[("reduce", "sum", f, f, (1,))] == routing.PACKED_SUM_MIN
    np.testing.assert_allclose(tiny.numpy()[:, 0], y[:4, :8].sum(1), rtol=1e-6)
    first = out.numpy().copy()
    monkeypatch.setattr(B, "route", real)  # the table's own launch gives the same bits
    B._LAUNCH["_packed.zip"](BK, "tanh_back", (ty._td, tg._td), out._td, code)
    np.testing.assert_array_equal(out.numpy(), first)


def test_tanh_and_sigmoid_gradients_through_autograd():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 7)).astype(np.float32)
    for name, grad in (
        ("tanh", lambda v: 1 - np.tanh(v) ** 2),
        ("sigmoid", lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2),
    ):
        x = tl.tensor(a, device="numba", requires_grad=True)
        getattr(x, name)().sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), grad(a.astype(np.float64)), rtol=1e-6, atol=1e-7)
        assert routing.explain(f"{name}_back", x.detach(), x.detach()) == "_packed.zip"
