"""``BackendConformance``: the one place where backend behaviour is specified.

A backend package runs the whole kit with three lines::

    from torchlight.testing import BackendConformance

    class TestNumbaConformance(BackendConformance):
        backend_name = "numba"          # the entry-point name
        size_profile = "small"          # or "tiny" for slow execution models

The tests call the backend's primitives directly on ``TensorData`` views in every layout
(:mod:`.strategies`) and compare with float64 numpy references (:mod:`.catalog`); a few more go
through the public tensor API on the device (fallback paths, autograd, a short training run).
Each test names the op, dtype and layout that failed. :mod:`torchlight.testing.bounds` feeds every indexing
primitive out-of-range indices (the bounds-safety guarantee of the contract).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchlight.tensor.backend.protocol import API_VERSION, MAP_OPS, REDUCE_OPS, ZIP_OPS, Backend
from torchlight.tensor.backend.registry import backend_status, get_backend
from torchlight.tensor.backend.threads import get_num_threads
from torchlight.tensor.storage import TensorData

from .bounds import BoundsConformance
from .catalog import (
    ALL,
    FLOAT,
    MAP_CATALOG,
    REDUCE_CATALOG,
    ZIP_CATALOG,
    check_catalog_complete,
    sample,
    tolerance,
)
from .fills import FillConformance
from .fused import FusedConformance, _f64, _rng
from .joins import JoinConformance
from .new_results import NewResultConformance
from .nll import NLLConformance
from .profiles import resolve_profile
from .sequences import SequenceConformance
from .strategies import (
    LAYOUTS,
    OUT_LAYOUTS,
    broadcastable_pair,
    empty_view,
    make_view,
    outside_untouched,
    read,
)
from .windows import WindowsConformance

__all__ = ["BackendConformance"]

EDGE_SHAPES = ((), (1,), (0,), (2, 0, 3), (1, 1, 1))
_MAP_CASES = [(op, dt) for op in MAP_OPS for dt in MAP_CATALOG[op].dtypes]
_ZIP_CASES = [(op, dt) for op in ZIP_OPS for dt in ZIP_CATALOG[op].dtypes]
_BASIC = ("float32", "float64", "int64")  # the dtypes of the expanded broadcasting property
#: operand shapes of the ``broadcast`` capability's test: a row, a column, a scalar each side,
#: missing leading dims, both operands smaller than ``out``, and equal shapes
_BROADCAST_PAIRS = [
    ((1, 5), (4, 5)),
    ((4, 5), (4, 1)),
    ((), (3, 4)),
    ((2, 3, 4), ()),
    ((4,), (3, 4)),
    ((2, 1, 4), (3, 1)),
    ((3, 4), (3, 4)),
]
_RED_CASES = [(op, dt) for op in REDUCE_OPS for dt in REDUCE_CATALOG[op].dtypes]
_ZIP_LAYOUTS = [  # (a, b, out)
    ("contiguous", "contiguous", "contiguous"),
    ("offset", "permuted", "contiguous"),
    ("sliced", "broadcast", "contiguous"),
    ("permuted", "sliced", "offset"),
    ("broadcast", "contiguous", "permuted"),
    ("contiguous", "offset", "sliced"),
    ("broadcast", "broadcast", "contiguous"),
]


def assert_close(got, want, dtype, spec=None, what=""):
    """Compare a backend's result with a float64 (or exact) reference, naming the case."""
    assert got.shape == tuple(want.shape), f"{what}: shape {got.shape} != {tuple(want.shape)}"
    if dtype in ("int64", "bool"):
        np.testing.assert_array_equal(got, np.asarray(want).astype(got.dtype), err_msg=what)
    else:
        rtol, atol = tolerance(dtype, spec)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol, err_msg=what)


class BackendConformance(
    FusedConformance,
    JoinConformance,
    FillConformance,
    NewResultConformance,
    NLLConformance,
    SequenceConformance,
    WindowsConformance,
    BoundsConformance,
):
    """Subclass with ``backend_name`` (and optionally ``size_profile``); pytest collects it."""

    backend_name: str = "numpy"
    size_profile: str = "small"

    # --- fixtures ----------------------------------------------------------------------------
    @property
    def be(self):
        """The backend under test, ``get_backend(backend_name)``."""
        return get_backend(self.backend_name)

    @property
    def P(self):
        """The :class:`SizeProfile` of this run (``size_profile``, or ``$TORCHLIGHT_CONFORMANCE_PROFILE``)."""
        return resolve_profile(self.size_profile)

    def _settings(self):
        return settings(
            max_examples=self.P.examples,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )

    def _layout_cases(self):
        s = self.P.shape
        cases = [(s, lay, "contiguous") for lay in LAYOUTS]
        cases += [(s, "contiguous", lay) for lay in OUT_LAYOUTS[1:]]
        cases += [(s, "permuted", "sliced")]
        cases += [(e, "contiguous", "contiguous") for e in EDGE_SHAPES] + [
            ((1,), "offset", "offset")
        ]
        return cases

    def _need(self, capability):
        if capability not in self.be.capabilities:
            pytest.skip(f"backend {self.backend_name!r} does not offer {capability!r}")

    # --- the contract's surface ------------------------------------------------------------
    def test_protocol_surface(self):
        """The backend implements every primitive of the protocol and declares the core's ``API_VERSION``."""
        be = self.be
        assert isinstance(be, Backend), "the backend misses a primitive of the Backend protocol"
        assert be.API_VERSION == API_VERSION
        assert isinstance(be.name, str) and isinstance(be.capabilities, frozenset)
        rows = {name: status for name, status, _ in backend_status()}
        assert rows.get(self.backend_name) == "available", rows

    def test_catalog_is_complete(self):
        """Every op of ``MAP_OPS``/``ZIP_OPS``/``REDUCE_OPS`` has a numpy reference in the kit's catalogue."""
        assert check_catalog_complete() == []

    @pytest.mark.parametrize("dtype", ALL)
    def test_storage_roundtrip(self, dtype):
        """``from_numpy`` then ``to_numpy`` gives back the same values, for every dtype."""
        be = self.be
        x = sample(_rng("rt", dtype), self.P.shape, dtype)
        td = TensorData(be.from_numpy(x.reshape(-1)), x.shape)
        np.testing.assert_array_equal(read(be, td), x)
        empty = be.empty(7, _dt(dtype))
        assert read(be, TensorData(empty, (7,))).dtype == x.dtype
        for shape in EDGE_SHAPES:
            v = sample(_rng("rt", shape), shape, dtype)
            assert read(be, TensorData(be.from_numpy(v.reshape(-1)), shape)).shape == shape

    def test_host_memory_promise(self):
        """``host_memory``: storage is a 1-D host ndarray, ``to_numpy`` views it, and another
        host-memory backend's kernels (the cpu reference) work on it and vice versa."""
        self._need("host_memory")
        be = self.be
        x = np.arange(12.0).reshape(3, 4)
        storage = be.from_numpy(x.reshape(-1))
        assert isinstance(storage, np.ndarray) and storage.ndim == 1, type(storage)
        td = TensorData(storage, (3, 4))
        view = be.to_numpy(td)
        assert np.shares_memory(view, storage), "to_numpy must return a view of the storage"
        ref = get_backend("numpy")  # the built-in reference (whatever "cpu" names)
        out = TensorData(be.empty(12, _dt("float64")), (3, 4))
        ref.zip("add", td, td, out)  # the reference backend reads and writes this backend's storage
        np.testing.assert_array_equal(read(be, out), 2 * x)
        ref_td = TensorData(ref.from_numpy((x + 1).reshape(-1)), (3, 4))
        be.zip("mul", ref_td, td, out)  # and this backend reads the reference backend's storage
        np.testing.assert_array_equal(read(be, out), (x + 1) * x)

    @pytest.mark.parametrize("shape", [(3, 4), (5,), (), (0, 3), (2, 1, 3)])
    def test_empty_handle(self, shape):
        """``empty_handle``: storage like ``empty``'s for ``shape``'s element count, and a handle
        that kernels given the view (handle in its ``cache``) read and write as the storage."""
        self._need("empty_handle")
        be = self.be
        storage, handle = be.empty_handle(shape, _dt("float64"))
        n = int(np.prod(shape))
        x = np.arange(n, dtype=np.float64).reshape(shape) - 2.0
        src = TensorData(be.from_numpy(x.reshape(-1)), shape)
        out = TensorData(storage, shape)
        out.cache = handle
        be.map("neg", src, out)
        np.testing.assert_array_equal(read(be, out), -x)
        # the same storage seen through a view the core built itself (no handle): same values
        np.testing.assert_array_equal(read(be, TensorData(storage, shape)), -x)
        be.zip("mul", out, out, out)  # in place through the handle
        np.testing.assert_array_equal(read(be, TensorData(storage, shape)), x * x)
        if self.be.capabilities & {"host_memory"}:
            assert isinstance(storage, np.ndarray) and storage.ndim == 1 and storage.size == n

    def test_threads(self):
        """``threads``: ``set_num_threads(n)`` accepts 1 and more than the cores, and a product
        computed after each gives the reference's values (the count changes speed, never values)."""
        self._need("threads")
        be = self.be
        a = np.arange(64 * 48, dtype=np.float64).reshape(64, 48) / 100.0
        b = np.cos(np.arange(48 * 32, dtype=np.float64)).reshape(48, 32)
        want = a @ b
        try:
            for n in (1, 2, 1024):
                be.set_num_threads(n)
                out = TensorData(be.empty(64 * 32, _dt("float64")), (64, 32))
                be.matmul(
                    TensorData(be.from_numpy(a.reshape(-1)), (64, 48)),
                    TensorData(be.from_numpy(b.reshape(-1)), (48, 32)),
                    out,
                )
                np.testing.assert_allclose(read(be, out), want, rtol=1e-12)
        finally:
            be.set_num_threads(get_num_threads())

    # --- map ---------------------------------------------------------------------------------
    @pytest.mark.parametrize("op,dtype", _MAP_CASES)
    def test_map(self, op, dtype):
        """Each unary op matches its numpy reference on every input and output layout."""
        be, spec = self.be, MAP_CATALOG[op]
        out_dtype = spec.out or dtype
        for k, (shape, lay, out_lay) in enumerate(self._layout_cases()):
            x = sample(_rng(op, dtype, k), shape, dtype, spec.domain)
            a, xv = make_view(be, x, lay)
            out = empty_view(be, shape, out_dtype, out_lay)
            be.map(op, a, out)
            what = f"map {op} {dtype} shape={shape} in={lay} out={out_lay}"
            assert_close(read(be, out), spec.ref(_f64(xv)), out_dtype, spec, what)
            assert outside_untouched(be, out, out_dtype), f"{what}: wrote outside the out view"

    @pytest.mark.parametrize("src", ALL)
    @pytest.mark.parametrize("dst", ALL)
    def test_copy_casts(self, src, dst):
        """``copy`` into an ``out`` of another dtype casts as numpy does."""
        be = self.be
        for k, (shape, lay, out_lay) in enumerate(self._layout_cases()):
            x = sample(_rng("cast", src, dst, k), shape, src)
            a, xv = make_view(be, x, lay)
            out = empty_view(be, shape, dst, out_lay)
            be.map("copy", a, out)
            assert_close(
                read(be, out),
                xv.astype(_dt(dst).np),
                dst,
                None,
                f"copy {src}->{dst} {shape} {lay}->{out_lay}",
            )
            assert outside_untouched(be, out, dst)

    def test_map_large_values_are_stable(self):
        """``sigmoid``, ``tanh``, ``softplus`` and ``silu`` stay finite and correct for inputs up to ±1e4."""
        be = self.be
        for dtype in FLOAT:
            x = np.array([-1e4, -800.0, -80.0, -20.0, 0.0, 20.0, 80.0, 800.0, 1e4], dtype=dtype)
            for op in ("sigmoid", "tanh", "softplus", "silu"):
                out = empty_view(be, x.shape, dtype)
                with np.errstate(all="ignore"):
                    be.map(op, make_view(be, x)[0], out)
                got = read(be, out)
                assert np.all(np.isfinite(got)), f"{op} {dtype} overflowed: {got}"
                assert_close(
                    got, MAP_CATALOG[op].ref(_f64(x)), dtype, MAP_CATALOG[op], f"{op} {dtype} large"
                )

    # --- zip ---------------------------------------------------------------------------------
    @pytest.mark.parametrize("op,dtype", _ZIP_CASES)
    def test_zip(self, op, dtype):
        """Each binary op matches its numpy reference on every layout, broadcast inputs included."""
        be, spec = self.be, ZIP_CATALOG[op]
        out_dtype = spec.out or dtype
        s = self.P.shape
        cases = [(s,) + c for c in _ZIP_LAYOUTS] + [
            (e, "contiguous", "contiguous", "contiguous") for e in EDGE_SHAPES
        ]
        for k, (shape, la, lb, lo) in enumerate(cases):
            rng = _rng(op, dtype, k)
            x = sample(rng, shape, dtype, spec.domain)
            y = sample(rng, shape, dtype, spec.second or spec.domain)
            a, xv = make_view(be, x, la)
            b, yv = make_view(be, y, lb, dim=len(shape) - 1 if shape else None)
            out = empty_view(be, shape, out_dtype, lo)
            be.zip(op, a, b, out)
            what = f"zip {op} {dtype} shape={shape} a={la} b={lb} out={lo}"
            assert_close(read(be, out), spec.ref(_f64(xv), _f64(yv)), out_dtype, spec, what)
            assert outside_untouched(be, out, out_dtype), f"{what}: wrote outside the out view"

    @pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum"])
    @pytest.mark.parametrize("layout", ["contiguous", "sliced", "permuted"])
    def test_zip_in_place(self, op, layout):
        """``out`` aliasing the first operand, as ``add_`` and gradient accumulation do."""
        be, spec = self.be, ZIP_CATALOG[op]
        rng = _rng("inplace", op, layout)
        x = sample(rng, self.P.shape, "float32")
        y = sample(rng, self.P.shape[-1:], "float32")
        a, xv = make_view(be, x, layout)
        b = make_view(be, y)[0].expand(self.P.shape)
        be.zip(op, a, b, a)
        assert_close(
            read(be, a), spec.ref(_f64(xv), _f64(y)), "float32", spec, f"in-place {op} {layout}"
        )

    def _zip_on_broadcast_shapes(self, cases, expand):
        """Property test (hypothesis): ``zip`` of an op and dtype drawn from ``cases`` on operands
        of random shapes that broadcast together, in random layouts, matches numpy; the
        operands expanded to the output's shape first (``expand``, the contract) or as they are
        (the ``broadcast`` capability)."""
        be = self.be

        @self._settings()
        @given(st.data())
        def run(data):
            sa, sb = data.draw(broadcastable_pair(max_dims=4, max_side=5))
            shape = np.broadcast_shapes(sa, sb)
            op, dtype = data.draw(st.sampled_from(cases))
            spec = ZIP_CATALOG[op]
            la, lb = data.draw(st.sampled_from(LAYOUTS)), data.draw(st.sampled_from(LAYOUTS))
            rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
            a, xv = make_view(be, sample(rng, sa, dtype, spec.domain), la)
            b, yv = make_view(be, sample(rng, sb, dtype, spec.second or spec.domain), lb)
            out_dtype = spec.out or dtype
            out = empty_view(be, shape, out_dtype, data.draw(st.sampled_from(OUT_LAYOUTS)))
            be.zip(op, *((a.expand(shape), b.expand(shape)) if expand else (a, b)), out)
            want = spec.ref(np.broadcast_to(_f64(xv), shape), np.broadcast_to(_f64(yv), shape))
            what = f"{op} {dtype} {sa}x{sb} {la}/{lb} expanded={expand}"
            assert_close(read(be, out), want, out_dtype, spec, what)
            assert outside_untouched(be, out, out_dtype), f"{what}: wrote outside the out view"

        run()

    def test_zip_broadcasting_property(self):
        """Property test (hypothesis): binary ops on random broadcast shapes and layouts, the
        operands expanded to the output's shape, match numpy."""
        cases = [(op, dt) for op in ("add", "mul", "sub", "maximum", "lt") for dt in _BASIC]
        self._zip_on_broadcast_shapes(cases, expand=True)

    @pytest.mark.parametrize("op,dtype", _ZIP_CASES)
    def test_zip_broadcast_capability_every_op(self, op, dtype):
        """Capability ``broadcast``: each binary op handed operands of smaller shapes (a row, a
        column, a scalar, missing leading dims, both sides at once) in several layouts matches
        numpy's broadcasting."""
        self._need("broadcast")
        be, spec = self.be, ZIP_CATALOG[op]
        out_dtype = spec.out or dtype
        for k, (sa, sb) in enumerate(_BROADCAST_PAIRS):
            shape = np.broadcast_shapes(sa, sb)
            rng = _rng("broadcast", op, dtype, k)
            la, lb = LAYOUTS[k % 4], LAYOUTS[(k + 1) % 4]  # no "broadcast" layout: kept simple
            a, xv = make_view(be, sample(rng, sa, dtype, spec.domain), la)
            b, yv = make_view(be, sample(rng, sb, dtype, spec.second or spec.domain), lb)
            out = empty_view(be, shape, out_dtype, OUT_LAYOUTS[k % len(OUT_LAYOUTS)])
            be.zip(op, a, b, out)
            want = spec.ref(np.broadcast_to(_f64(xv), shape), np.broadcast_to(_f64(yv), shape))
            what = f"broadcast zip {op} {dtype} {sa}x{sb} {la}/{lb}"
            assert_close(read(be, out), want, out_dtype, spec, what)
            assert outside_untouched(be, out, out_dtype), f"{what}: wrote outside the out view"

    def test_zip_broadcast_capability(self):
        """Capability ``broadcast`` (hypothesis): every binary op handed its operands as they
        are, of random shapes that broadcast to ``out``'s and in random layouts, matches numpy."""
        self._need("broadcast")
        self._zip_on_broadcast_shapes(_ZIP_CASES, expand=False)

    # --- where -------------------------------------------------------------------------------
    @pytest.mark.parametrize("dtype", ALL)
    def test_where(self, dtype):
        """``where`` selects like ``numpy.where`` on every layout."""
        be = self.be
        s = self.P.shape
        cases = [
            (s, "contiguous", "contiguous", "contiguous", "contiguous"),
            (s, "broadcast", "permuted", "sliced", "contiguous"),
            (s, "permuted", "broadcast", "offset", "sliced"),
            (s, "sliced", "contiguous", "broadcast", "permuted"),
        ]
        cases += [(e, "contiguous", "contiguous", "contiguous", "contiguous") for e in EDGE_SHAPES]
        for k, (shape, lc, la, lb, lo) in enumerate(cases):
            rng = _rng("where", dtype, k)
            c, cv = make_view(be, sample(rng, shape, "bool"), lc)
            a, av = make_view(be, sample(rng, shape, dtype), la)
            b, bv = make_view(
                be, sample(rng, shape, dtype), lb, dim=len(shape) - 1 if shape else None
            )
            out = empty_view(be, shape, dtype, lo)
            be.where(c, a, b, out)
            what = f"where {dtype} {shape} cond={lc} a={la} b={lb} out={lo}"
            assert_close(read(be, out), np.where(cv, av, bv), dtype, None, what)
            assert outside_untouched(be, out, dtype), what

    # --- reduce ------------------------------------------------------------------------------
    @pytest.mark.parametrize("op,dtype", _RED_CASES)
    def test_reduce(self, op, dtype):
        """Each reduction matches numpy over single dimensions, pairs and all dimensions, on every
        input layout."""
        be, spec = self.be, REDUCE_CATALOG[op]
        out_dtype = spec.out or dtype
        nd = len(self.P.shape)
        dim_sets = [(d,) for d in range(nd)]
        if not op.startswith("arg"):
            dim_sets += [(0, nd - 1), tuple(range(nd))] + ([(1, 2)] if nd >= 3 else [])
        for dims in dim_sets:
            for lay in LAYOUTS:
                rng = _rng(op, dtype, dims, lay)
                domain = (
                    {"int64": (0, 2)} if op.startswith("arg") and dtype == "int64" else spec.domain
                )
                a, xv = make_view(be, sample(rng, self.P.shape, dtype, domain), lay)
                kept = tuple(1 if d in dims else n for d, n in enumerate(self.P.shape))
                out = empty_view(be, kept, out_dtype)
                be.reduce(op, a, dims, out)
                want = spec.ref(_f64(xv), dims[0] if op.startswith("arg") else dims)
                assert_close(
                    read(be, out),
                    want,
                    out_dtype,
                    spec,
                    f"reduce {op} {dtype} dims={dims} in={lay}",
                )

    @pytest.mark.parametrize("op", REDUCE_OPS)
    def test_reduce_edges(self, op):
        """Reductions over size-1 and empty dimensions give numpy's results."""
        be, spec = self.be, REDUCE_CATALOG[op]
        cases = [
            ((1,), (0,)),
            ((1, 1, 1), (0, 1, 2) if not op.startswith("arg") else (1,)),
            ((3, 1), (1,)),
            ((0, 4), (1,)),
            ((5,), (0,)),
        ]
        if op in ("sum", "prod"):
            cases += [((0,), (0,)), ((3, 0), (1,)), ((2, 0, 3), (0, 2)), ((), ())]
        for shape, dims in cases:
            for dtype in ("float32", "int64"):
                out_dtype = spec.out or dtype
                a, xv = make_view(
                    be, sample(_rng(op, shape, dtype), shape, dtype, spec.domain), "offset"
                )
                kept = tuple(1 if d in dims else n for d, n in enumerate(shape))
                out = empty_view(be, kept, out_dtype)
                be.reduce(op, a, dims, out)
                want = spec.ref(_f64(xv), dims[0] if op.startswith("arg") else dims)
                assert_close(
                    read(be, out),
                    want,
                    out_dtype,
                    spec,
                    f"reduce {op} {dtype} shape={shape} dims={dims}",
                )

    def test_reduce_sum_precision(self):
        """A float32 sum of many same-sign values stays within float32 rounding of the truth."""
        be = self.be
        n = int(np.prod(self.P.shape)) * 8
        x = np.full(n, 0.1, dtype=np.float32)
        out = empty_view(be, (1,), "float32")
        be.reduce("sum", make_view(be, x)[0], (0,), out)
        assert abs(float(read(be, out)[0]) - n * float(np.float32(0.1))) <= 1e-4 * n * 0.1

    # --- matmul ------------------------------------------------------------------------------
    @pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
    def test_matmul(self, dtype):
        """``matmul`` matches numpy on plain, batched, transposed and sliced operands."""
        be = self.be
        B, n, k, m = self.P.matmul
        cases = [  # (a shape, b shape, a layout, b layout, out layout, batch-broadcast a)
            ((n, k), (k, m), "contiguous", "contiguous", "contiguous", False),
            ((B, n, k), (B, k, m), "contiguous", "contiguous", "contiguous", False),
            ((B, n, k), (B, k, m), "permuted", "permuted", "contiguous", False),
            ((B, n, k), (B, k, m), "sliced", "offset", "sliced", False),
            ((B, n, k), (B, k, m), "contiguous", "sliced", "offset", True),
            ((2, B, n, k), (2, B, k, m), "permuted", "contiguous", "contiguous", False),
            ((n, 0), (0, m), "contiguous", "contiguous", "contiguous", False),
            ((0, k), (k, m), "contiguous", "contiguous", "contiguous", False),
            ((1, 1), (1, 1), "offset", "offset", "offset", False),
            ((n, 1), (1, m), "contiguous", "broadcast", "contiguous", False),
        ]
        for i, (sa, sb, la, lb, lo, bcast) in enumerate(cases):
            rng = _rng("matmul", dtype, i)
            x = sample(rng, sa, dtype, {"int64": (-4, 4)} if dtype == "int64" else None)
            y = sample(rng, sb, dtype, {"int64": (-4, 4)} if dtype == "int64" else None)
            if bcast:
                x = np.broadcast_to(x[:1], sa).copy()
            a, xv = make_view(be, x[:1] if bcast else x, la)
            if bcast:
                a = a.expand(sa)
            b, yv = make_view(be, y, lb)
            out_shape = sa[:-1] + (sb[-1],)
            out = empty_view(be, out_shape, dtype, lo)
            be.matmul(a, b, out)
            want = np.matmul(_f64(x), _f64(yv))
            what = f"matmul {dtype} {sa}@{sb} a={la}{' (batch stride 0)' if bcast else ''} b={lb} out={lo}"
            got = read(be, out)
            if dtype == "int64":
                np.testing.assert_array_equal(got, want, err_msg=what)
            else:
                scale = np.matmul(np.abs(_f64(x)), np.abs(_f64(yv)))
                eps = 2e-6 if dtype == "float32" else 1e-14
                assert got.shape == want.shape, what
                assert np.all(np.abs(got - want) <= eps * (scale + 1)), what
            assert outside_untouched(be, out, dtype), what

    # --- indexing ----------------------------------------------------------------------------
    @pytest.mark.parametrize("dtype", ALL)
    def test_take(self, dtype):
        """``take`` (index_select) matches numpy along every dimension."""
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for i, (la, li) in enumerate(
                [
                    ("contiguous", "contiguous"),
                    ("permuted", "offset"),
                    ("sliced", "sliced"),
                    ("broadcast", "broadcast"),
                ]
            ):
                rng = _rng("take", dtype, dim, i)
                a, xv = make_view(be, sample(rng, shape, dtype), la)
                idx = rng.integers(0, shape[dim], size=2 * shape[dim] + 1)  # repeats
                it, iv = make_view(be, idx, li)
                out_shape = shape[:dim] + (len(idx),) + shape[dim + 1 :]
                out = empty_view(be, out_shape, dtype)
                be.take(a, dim, it, out)
                assert_close(
                    read(be, out),
                    np.take(xv, iv, axis=dim),
                    dtype,
                    None,
                    f"take {dtype} dim={dim} a={la} index={li}",
                )
        a, xv = make_view(be, sample(_rng("take0"), shape, dtype), "contiguous")
        out = empty_view(be, (shape[0], 0) + shape[2:], dtype)
        be.take(a, 1, make_view(be, np.zeros(0, np.int64))[0], out)

    @pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
    def test_put_add(self, dtype):
        """``out.index_add_(dim, index, src)``: repeated indices accumulate."""
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for i, (lo, li, ls) in enumerate(
                [
                    ("contiguous", "contiguous", "contiguous"),
                    ("sliced", "offset", "permuted"),
                    ("permuted", "broadcast", "broadcast"),
                    ("offset", "sliced", "sliced"),
                ]
            ):
                rng = _rng("put_add", dtype, dim, i)
                base = sample(rng, shape, dtype)
                out, ov = make_view(be, base, lo)
                idx = rng.integers(0, shape[dim], size=2 * shape[dim] + 1)
                it, iv = make_view(be, idx, li)
                src_shape = shape[:dim] + (len(idx),) + shape[dim + 1 :]
                s, sv = make_view(be, sample(rng, src_shape, dtype), ls)
                be.put_add(out, dim, it, s)
                want = _f64(ov.copy())
                np.add.at(want, (slice(None),) * dim + (iv,), _f64(sv))
                spec = REDUCE_CATALOG["sum"]
                assert_close(
                    read(be, out),
                    want,
                    dtype,
                    spec,
                    f"put_add {dtype} dim={dim} out={lo} index={li} src={ls}",
                )

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_put_add_keeps_non_finite_values_in_their_rows(self, dtype):
        """An ``inf`` or ``nan`` in ``src`` reaches only the row its index names (a kernel that
        adds by a product with a one-hot matrix would spread ``0 · inf = nan`` to every row)."""
        be = self.be
        src = np.ones((4, 3), dtype)
        src[1, 0], src[2, 2] = np.inf, np.nan
        out, _ = make_view(be, np.zeros((5, 3), dtype))
        it, _ = make_view(be, np.array([0, 3, 3, 1], np.int64))
        be.put_add(out, 0, it, make_view(be, src)[0])
        want = np.zeros((5, 3))
        np.add.at(want, np.array([0, 3, 3, 1]), src.astype(np.float64))
        np.testing.assert_array_equal(read(be, out), want.astype(dtype))

    def _check_gather(self, dtype, smaller):
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for i, (la, li) in enumerate(
                [
                    ("contiguous", "contiguous"),
                    ("permuted", "sliced"),
                    ("sliced", "offset"),
                    ("broadcast", "permuted"),
                ]
            ):
                rng = _rng("gather", dtype, dim, i, smaller)
                a, xv = make_view(be, sample(rng, shape, dtype), la)
                ishape = tuple(
                    (max(1, n - 1) if smaller else n) if d != dim else n + 2
                    for d, n in enumerate(shape)
                )
                idx = rng.integers(0, shape[dim], size=ishape)
                it, iv = make_view(be, idx, li)
                out = empty_view(be, ishape, dtype)
                be.gather(a, dim, it, out)
                sub = xv[
                    tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(ishape))
                ]
                want = np.take_along_axis(sub, iv, axis=dim)
                assert_close(
                    read(be, out), want, dtype, None, f"gather {dtype} dim={dim} a={la} index={li}"
                )

    @pytest.mark.parametrize("dtype", ALL)
    def test_gather(self, dtype):
        """``gather`` matches PyTorch's semantics (checked against numpy) along every dimension."""
        self._check_gather(dtype, smaller=False)

    @pytest.mark.parametrize("dtype", ["float32", "int64"])
    def test_gather_index_smaller_than_input(self, dtype):
        """PyTorch allows ``index.size(d) <= input.size(d)`` for ``d != dim`` (the core checks so)."""
        self._check_gather(dtype, smaller=True)

    @pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
    def test_scatter_add(self, dtype):
        """``scatter_add`` accumulates repeated indices, along every dimension."""
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for i, (lo, li, ls) in enumerate(
                [
                    ("contiguous", "contiguous", "contiguous"),
                    ("sliced", "permuted", "offset"),
                    ("permuted", "offset", "sliced"),
                    ("offset", "sliced", "broadcast"),
                ]
            ):
                rng = _rng("scatter_add", dtype, dim, i)
                out, ov = make_view(be, sample(rng, shape, dtype), lo)
                ishape = tuple(max(1, n - 1) if d != dim else n + 2 for d, n in enumerate(shape))
                idx = rng.integers(0, shape[dim], size=ishape)
                it, iv = make_view(be, idx, li)
                sshape = tuple(n + 1 for n in ishape)  # src may be larger than index
                s, sv = make_view(be, sample(rng, sshape, dtype), ls)
                be.scatter_add(out, dim, it, s)
                want = _f64(ov.copy())
                grid = list(np.indices(ishape, sparse=True))
                grid[dim] = iv
                np.add.at(want, tuple(grid), _f64(sv)[tuple(slice(0, n) for n in ishape)])
                assert_close(
                    read(be, out),
                    want,
                    dtype,
                    REDUCE_CATALOG["sum"],
                    f"scatter_add {dtype} dim={dim} out={lo} index={li} src={ls}",
                )

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_gather_and_scatter_add_one_index_per_slice(self, dtype):
        """An index of size 1 along ``dim`` (a loss's picked class per row), on 2-D and 3-D
        operands: ``gather`` reads and ``scatter_add`` adds exactly there (no position repeats)."""
        be = self.be
        for shape in (self.P.shape[:2], self.P.shape):
            for dim in range(len(shape)):
                for i, (la, li) in enumerate(
                    [("contiguous", "contiguous"), ("permuted", "sliced")]
                ):
                    rng = _rng("one-index", dtype, len(shape), dim, i)
                    ishape = tuple(1 if d == dim else n for d, n in enumerate(shape))
                    idx = rng.integers(0, shape[dim], size=ishape)
                    it, iv = make_view(be, idx, li)
                    a, xv = make_view(be, sample(rng, shape, dtype), la)
                    out = empty_view(be, ishape, dtype)
                    be.gather(a, dim, it, out)
                    what = f"{dtype} shape={shape} dim={dim} x={la} index={li}"
                    want = np.take_along_axis(xv, iv, axis=dim)
                    assert_close(read(be, out), want, dtype, None, "gather " + what)
                    be.scatter_add(a, dim, it, out)  # adds each gathered value to itself
                    want = _f64(xv.copy())
                    grid = list(np.indices(ishape, sparse=True))
                    grid[dim] = iv
                    np.add.at(want, tuple(grid), np.take_along_axis(_f64(xv), iv, axis=dim))
                    assert_close(
                        read(be, a), want, dtype, REDUCE_CATALOG["sum"], "scatter_add " + what
                    )

    # --- through the tensor API on the device -------------------------------------------------
    def test_to_device_roundtrip(self):
        """A tensor moved to the backend and back keeps its values exactly."""
        import torchlight as tl

        x = tl.randn(*self.P.shape, dtype=tl.float64)
        y = x.to(self.backend_name)
        assert y.device == getattr(self.be, "device", self.be.name)
        np.testing.assert_array_equal(y.to("cpu").numpy(), x.numpy())
        z = y.permute(2, 0, 1)[1:, ::2]
        np.testing.assert_array_equal(
            z.contiguous().to("cpu").numpy(), x.permute(2, 0, 1)[1:, ::2].numpy()
        )

    def test_to_device_copies(self):
        """``.to(device)`` gives an independent tensor (PyTorch: a copy), never an alias."""
        import torchlight as tl

        x = tl.zeros(4)
        y = x.to(self.backend_name)
        if y is x:
            return  # same device: PyTorch returns the tensor itself
        y.add_(1.0)
        assert x.tolist() == [0.0] * 4, "writing the moved tensor changed the source"

    def test_tensor_ops_match_cpu(self):
        """A sweep of public ops (fused or composite on this backend) against the cpu backend."""
        import torchlight as tl

        rng = _rng("api")
        xs = rng.standard_normal(self.P.shape).astype(np.float32)
        w = rng.standard_normal(self.P.shape[-1:]).astype(np.float32)
        idx = rng.integers(0, self.P.shape[0], size=7)

        def run(device):
            x = tl.tensor(xs, device=device, requires_grad=True)
            wt = tl.tensor(w, device=device, requires_grad=True)
            i = tl.tensor(idx, device=device)
            y = (x * wt + 1).tanh().softmax(-1) + x.log_softmax(1).exp()
            y = tl.layer_norm(y, (y.shape[-1],), wt, None) + x.index_select(0, i).sum(0)
            z = (
                (y @ x.transpose(-1, -2)).relu().amax(-1).sum()
                + x.gelu().mean()
                + tl.where(x > 0, x, wt).sum()
            )
            z.backward()
            return [
                z.detach().to("cpu").numpy(),
                x.grad.to("cpu").numpy(),
                wt.grad.to("cpu").numpy(),
            ]

        for got, want in zip(run(self.backend_name), run("numpy")):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)

    # --- autograd smoke ------------------------------------------------------------------------
    def _mlp_params(self, tl, dtype, seed=0):
        _, d_in, hidden, classes = self.P.mlp
        rng = np.random.default_rng(seed)
        shapes = [(d_in, hidden), (hidden,), (hidden, classes), (classes,)]
        return [
            tl.tensor(
                rng.standard_normal(s) * (0.5 if len(s) == 2 else 0.1),
                dtype=dtype,
                device=self.backend_name,
                requires_grad=True,
            )
            for s in shapes
        ]

    @staticmethod
    def _mlp(x, w1, b1, w2, b2):
        return (x @ w1 + b1).tanh() @ w2 + b2

    def test_gradcheck_mlp(self):
        """Gradients of a small MLP computed on the backend pass :func:`torchlight.gradcheck` (float64)."""
        import torchlight as tl

        params = self._mlp_params(tl, tl.float64)
        rng = np.random.default_rng(1)
        n = self.P.gradcheck_batch
        x = tl.tensor(
            rng.standard_normal((n, self.P.mlp[1])), dtype=tl.float64, device=self.backend_name
        )
        labels = tl.tensor(rng.integers(0, self.P.mlp[3], size=(n, 1)), device=self.backend_name)

        def loss(w1, b1, w2, b2):
            logits = self._mlp(x, w1, b1, w2, b2)
            return (
                -logits.log_softmax(-1).gather(1, labels).mean()
                + tl.layer_norm(logits, (logits.shape[-1],)).square().mean()
            )

        assert tl.gradcheck(loss, params, eps=1e-6, atol=1e-6, rtol=1e-4)

    def test_training_loss_falls(self):
        """A few steps of SGD on a separable problem: the loss falls, and tracks the cpu run."""
        import torchlight as tl

        def train(device):
            n, d_in, _, classes = self.P.mlp
            rng = np.random.default_rng(2)
            centers = rng.standard_normal((classes, d_in)) * 3
            labels = rng.integers(0, classes, size=n)
            xs = centers[labels] + rng.standard_normal((n, d_in))
            x = tl.tensor(xs, dtype=tl.float32, device=device)
            y = tl.tensor(labels.reshape(n, 1), device=device)
            params = [
                p.detach().to(device).requires_grad_()
                for p in self._mlp_params(tl, tl.float32, seed=3)
            ]
            losses = []
            for _ in range(self.P.train_steps):
                loss = -self._mlp(x, *params).log_softmax(-1).gather(1, y).mean()
                for p in params:
                    p.grad = None
                loss.backward()
                with tl.no_grad():
                    for p in params:
                        p.sub_(p.grad * 0.5)
                losses.append(loss.item())
            return losses

        losses = train(self.backend_name)
        assert losses[-1] < 0.5 * losses[0], losses
        np.testing.assert_allclose(losses, train("numpy"), rtol=1e-4, atol=1e-5)


def _dt(name):
    from torchlight.tensor import dtypes

    return dtypes.as_dtype(name)
