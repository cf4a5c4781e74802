"""The routing table (``routing``): ``explain`` names the kernel each case runs, the kernel named
gives numpy's answer through the tensor API, the table's thresholds are where the routes switch,
and ``format_table`` prints every row."""

import subprocess
import sys

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.numba import backend as B
from torchlight.backends.numba import routing
from torchlight.backends.numba.routing import TABLE, explain, format_table
from torchlight.tensor.errors import BackendError
from torchlight.tensor.storage import TensorData

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def kernels_only():
    """A device whose backend runs every elementwise op on numba kernels (no numpy ufuncs)."""
    tl.register_backend("numba-routing", B.NumbaBackend(numpy_ufuncs=False))
    return "numba-routing"


def nb(a, device="numba"):
    return tl.tensor(a, device=device)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_float_row_broadcast_add_is_numpy_by_measurement():
    # the decision the table documents: a small float broadcast add runs numpy's ufunc
    a, b = f32(3, 4), f32(4)
    assert explain("add", nb(a), nb(b)) == "numpy"
    np.testing.assert_array_equal((nb(a) + nb(b)).numpy(), a + b)
    rule = next(r for r in TABLE if r.family == "zip" and r.kernels == ("numpy",))
    assert "(3,4)+(4,)" in rule.why


def test_float_row_broadcast_add_without_ufuncs_is_the_strided_kernel(kernels_only):
    a, b = f32(3, 4), f32(4)
    assert explain("add", nb(a, kernels_only), nb(b, kernels_only)) == "_elementwise.zip_strided"
    np.testing.assert_array_equal((nb(a, kernels_only) + nb(b, kernels_only)).numpy(), a + b)


@pytest.mark.parametrize("op", ["lt", "eq"])
def test_compare_routes_to_the_compare_kernels(kernels_only, op):
    a, b = f32(5, 6), f32(5, 6)
    b[0] = a[0]
    x, y = nb(a, kernels_only), nb(b, kernels_only)
    assert explain(op, x, y) == "_elementwise.cmp_flat"
    assert explain(op, x.t(), y.t()) == "_elementwise.cmp_strided"
    fn, ufunc = {"lt": (lambda p, q: p < q, np.less), "eq": (lambda p, q: p == q, np.equal)}[op]
    np.testing.assert_array_equal(fn(x.t(), y.t().contiguous()).numpy(), ufunc(a.T, b.T))


def test_fused_maps_run_numba_flat_or_strided():
    a = f32(6, 7)
    x = nb(a)
    assert explain("gelu", x) == "_flat32.map32"  # float32 gelu: the libm-free loop at any size
    assert explain("gelu", x.double()) == "_packed.map"  # small and packed
    assert explain("silu", x) == "_packed.map"
    big = nb(f32(routing.PACKED_MAX))
    assert explain("gelu", big.double()) == "_elementwise.map_flat"
    assert explain("silu", big) == "numpy"  # its exp per value loses to numpy's SIMD
    assert explain("gelu", x.t()[1:]) == "_elementwise.map_strided"
    assert explain("exp", x) == "numpy"
    got = x.t()[1:].sigmoid().numpy()
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-a.T[1:])), rtol=1e-6)


def test_large_float32_ops_take_flat32_from_its_thresholds():
    n = routing.FLAT_MIN
    x = nb(f32(n))
    assert explain("exp", x) == "_flat32.map32"
    assert explain("exp", x[1:]) == "numpy"  # one element short of FLAT_MIN
    assert explain("exp", nb(f32(2 * n))[::2]) == "numpy"  # not contiguous
    y = nb(f32(routing.FLAT_ZIP_MIN))
    assert explain("add", y, y) == "_flat32.zip32"
    assert explain("add", y[1:], y[1:]) == "numpy"
    assert explain("gelu_tanh_back", x, x) == "_flat32.zip32"  # compute-bound: the lower threshold


def test_bias_add_over_tiles_from_tile_zip_min():
    rows = routing.TILE_ZIP_MIN // 256
    a, b = f32(rows, 256), f32(256)
    assert explain("add", nb(a), nb(b)) == "_tiled.zip_tiles"
    assert explain("add", nb(a[: rows - 1]), nb(b)) == "numpy"
    np.testing.assert_array_equal((nb(a) + nb(b)).numpy(), a + b)


def test_where_over_tiles_and_strided():
    mask = RNG.random((64, 64)) < 0.5
    x = f32(2, 64, 64)
    c, xv, fill = nb(mask), nb(x), nb(np.float32(-1.0))
    assert explain("where", c, xv, fill) == "_tiled.where_tiles"
    assert explain("where", c, xv.transpose(1, 2), fill) == "_elementwise.where_strided"
    got = tl.where(c, xv.transpose(1, 2), fill).numpy()
    np.testing.assert_array_equal(got, np.where(mask, x.transpose(0, 2, 1), np.float32(-1.0)))


def test_reductions():
    m = f32(2048, 512)
    x = nb(m)
    assert explain("sum", x, dim=0) == "_reduce.reduce_cols"
    assert explain("sum", x) == "_reduce.reduce_split"
    assert explain("sum", x, dim=1) == "_reduce.reduce_kernel"
    narrow = f32(routing.COLS_NUMBA_MIN // (routing.COLS_MIN - 1) + 1, routing.COLS_MIN - 1)
    assert explain("sum", nb(narrow), dim=0) == "_reduce.reduce_kernel"
    assert explain("argmax", x, dim=-1) == "_reduce.arg_kernel"
    np.testing.assert_allclose(
        x.sum(dim=0).numpy(), m.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4
    )
    np.testing.assert_array_equal(x.argmax(dim=-1).numpy(), m.argmax(axis=-1))


def test_cast_copy_is_copyto():
    x = nb(f32(3, 4))
    assert explain("copy", x) == "numpy"
    v = x._td
    out = tl.zeros(3, 4, dtype=tl.float64, device="numba")._td
    assert routing.route("map", "copy", (v,), out)[0] == "np.copyto"


def test_undefined_ops_and_wrong_devices_raise():
    xi = nb(np.arange(6, dtype=np.int64))
    with pytest.raises(BackendError, match="not defined for dtype int64"):
        routing.route("map", "exp", (xi._td,), xi._td, numpy_ufuncs=False)
    with pytest.raises(BackendError, match="mixed dtypes"):
        xf = nb(np.arange(6.0))
        routing.route("zip", "add", (xi._td, xf._td), xf._td)
    with pytest.raises(BackendError, match="move them with"):
        explain("add", tl.ones(2), tl.ones(2))


def test_every_kernel_in_the_table_has_a_launcher():
    assert {k for r in TABLE for k in r.kernels} == set(B._LAUNCH)
    assert {r.family for r in TABLE} == {"map", "zip", "where", "reduce"}


def test_the_table_prints():
    text = format_table()
    for rule in TABLE:
        assert all(k in text for k in rule.kernels) and rule.why in text
    assert f"TILE_ZIP_MIN = {routing.TILE_ZIP_MIN}" in text
    run = subprocess.run(
        [sys.executable, "-m", "torchlight.backends.numba.routing"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.strip() == text


def test_remembered_routes_give_the_same_answers_and_tiled_plans_are_made_per_call():
    """``route`` remembers a decision per call signature, except for kernels whose plan holds
    the operands' memory (``_tiled``): a second call with other tensors of the same layout must
    compute with *those* tensors. A stale tiled plan would add the first bias again."""
    n = routing.TILE_ZIP_MIN // 256 + 3
    for _ in range(2):  # the second round runs on remembered routes
        a, b1, b2 = f32(n, 256), f32(256), f32(256)
        assert explain("add", nb(a), nb(b1)) == "_tiled.zip_tiles"
        np.testing.assert_array_equal((nb(a) + nb(b1)).numpy(), a + b1)
        np.testing.assert_array_equal((nb(a) + nb(b2)).numpy(), a + b2)
        x, y = f32(64, 784), f32(64, 784)
        np.testing.assert_array_equal((nb(x) * nb(y)).numpy(), x * y)
        np.testing.assert_allclose(nb(x).sum(0).numpy(), x.sum(0), rtol=1e-5, atol=1e-4)
    assert routing._ROUTES
    assert not any(hit[0].startswith("_tiled.") for hit in routing._ROUTES.values())


def test_small_sums_over_rows_run_the_packed_or_numpys_reduce_and_large_ones_the_numba_kernel():
    rows = routing.COLS_NUMBA_MIN // 512
    assert explain("sum", nb(f32(rows - 1, 512)), dim=0) == "numpy.reduce"
    assert explain("sum", nb(f32(rows, 512)), dim=0) == "_reduce.reduce_cols"
    x = f32(rows - 1, 512)
    np.testing.assert_allclose(nb(x).sum(0).numpy(), x.sum(0), rtol=1e-5, atol=1e-3)


def test_small_reductions_and_every_max_run_numpys_reduce():
    small = f32(64, 64)
    for op in ("sum", "prod", "max", "min"):
        want = "_packed.sum" if op == "sum" else "numpy.reduce"  # a packed float sum: _packed
        assert explain(op, nb(small), dim=1) == want
        assert explain(op, nb(small.T.copy()).transpose(0, 1), dim=0) == "numpy.reduce"
    big = f32(2048, 512)
    assert explain("max", nb(big), dim=1) == "numpy.reduce"
    assert explain("min", nb(big)) == "numpy.reduce"
    assert explain("sum", nb(big), dim=1) == "_reduce.reduce_kernel"
    np.testing.assert_array_equal(nb(big).max(dim=1).values.numpy(), big.max(axis=1))
    np.testing.assert_allclose(nb(small).sum(1).numpy(), small.sum(1), rtol=1e-5, atol=1e-5)


def test_without_numpy_ufuncs_reductions_run_the_numba_kernels():
    x = f32(8, 8)
    v, out = TensorData(x.reshape(-1).copy(), (8, 8)), TensorData(np.empty(8, np.float32), (8, 1))
    for op in ("sum", "max"):
        assert routing.route("reduce", op, (v,), out, numpy_ufuncs=True, dims=(1,))[0] == (
            "numpy.reduce"  # 64 values: below PACKED_SUM_MIN
        )
        assert routing.route("reduce", op, (v,), out, numpy_ufuncs=False, dims=(1,))[0] == (
            "_reduce.reduce_kernel"
        )


def test_small_elementwise_ops_remember_numpy_by_op_and_dtype():
    a, b = nb(f32(3, 4)), nb(f32(4))
    assert explain("add", a, b) == "numpy"
    assert routing._SMALL_ROUTES[("zip", "add", np.dtype(np.float32), np.dtype(np.float32))][0] == (
        "numpy"
    )
    assert explain("silu", a.t()) == "numpy"  # another layout, another route
    assert explain("silu", a) == "_packed.map"  # its plan is an op code, asked per layout
    assert explain("gelu", a) == "_flat32.map32"  # likewise
    assert not any(k[1] in ("silu", "gelu") for k in routing._SMALL_ROUTES)
    big = nb(f32(routing.FLAT_MIN))
    assert explain("exp", big) == "_flat32.map32"  # the remembered small hit never answers this
    np.testing.assert_allclose((a + b).numpy(), a.numpy() + b.numpy())


def test_small_reductions_remember_numpy_by_op_dtype_and_dims():
    x = f32(6, 5)
    a = nb(x)
    for dim in (0, 1):
        for _ in range(2):  # the second call is answered by the short key
            np.testing.assert_allclose(a.prod(dim).numpy(), x.prod(dim), rtol=1e-6)
            np.testing.assert_array_equal(a.amax(dim).numpy(), x.max(dim))
            np.testing.assert_allclose(a.sum(dim).numpy(), x.sum(dim), rtol=1e-5, atol=1e-6)
    f = np.dtype(np.float32)
    assert routing._SMALL_ROUTES[("reduce", "prod", f, f, (0,))] == ("numpy.reduce", (0,))
    assert routing._SMALL_ROUTES[("reduce", "max", f, f, (1,))] == ("numpy.reduce", (1,))
    # a float sum has a packed row: its route depends on the layout, never on the short key
    assert not any(k[:2] == ("reduce", "sum") for k in routing._SMALL_ROUTES)
    np.testing.assert_array_equal(a.argmax(1).numpy(), x.argmax(1))  # the arg kernel: not kept
    assert not any(k[0] == "reduce" and k[1] == "argmax" for k in routing._SMALL_ROUTES)


def test_remembered_numpy_routes_are_asked_directly_below_their_size(kernels_only, monkeypatch):
    """A small op that routed to numpy once goes straight to the numpy backend (``NUMPY_SMALL``)
    with the same answer; a large one of the same op and dtype still asks the table, and a
    backend built with ``numpy_ufuncs=False`` never takes the shortcut."""
    x, y = f32(3, 4), f32(3, 4)
    a, b = nb(x), nb(y)
    np.testing.assert_array_equal((a * b).numpy(), x * y)  # routed: remembered
    f = np.dtype(np.float32)
    bound = min(routing.FLAT_MIN, routing.FLAT_ZIP_MIN, routing.TILE_ZIP_MIN)
    assert routing.NUMPY_SMALL[("zip", "mul", f, f)] == bound
    np.testing.assert_allclose(a.prod(1).numpy(), x.prod(1), rtol=1e-6)
    assert routing.NUMPY_SMALL[("reduce", "prod", f, f, (1,))] == routing.COLS_NUMBA_MIN
    asked = []
    real = routing.route
    monkeypatch.setattr(B, "route", lambda *args, **kw: asked.append(args[0]) or real(*args, **kw))
    np.testing.assert_array_equal((a * b).numpy(), x * y)
    np.testing.assert_allclose(a.prod(1).numpy(), x.prod(1), rtol=1e-6)
    assert asked == []  # both answered by the shortcut
    big = f32(bound)
    np.testing.assert_array_equal((nb(big) * nb(big)).numpy(), big * big)
    assert asked == ["zip"]
    k = nb(x, kernels_only)
    np.testing.assert_allclose((k * nb(y, kernels_only)).numpy(), x * y, rtol=1e-6)
    assert asked[-1] == "zip" and len(asked) == 2  # the kernels-only backend asked the table
