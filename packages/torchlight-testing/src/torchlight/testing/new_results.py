"""The kit's test of the optional ``new_result`` capability: a map or zip op computed into
storage the backend allocates itself (``map_new``, ``zip_new``).

A mixin of :class:`~torchlight.testing.BackendConformance` (which supplies ``be`` and ``_need``);
it skips when the backend does not declare ``new_result``, and for the ops its
``new_result_ops`` does not name. A backend may decline a call (``None``); what it does not
decline must hold exactly what ``map`` / ``zip`` write into a new
contiguous ``out`` of the same dtype (bit for bit: the core takes either path for the same op),
close to the kit's numpy reference, as storage of the result's element count with a handle the
kernels read as that storage.
"""

from __future__ import annotations

import numpy as np
import pytest

from torchlight.tensor.backend.protocol import MAP_OPS, ZIP_OPS
from torchlight.tensor.storage import TensorData

from .catalog import MAP_CATALOG, ZIP_CATALOG, sample, tolerance
from .fused import _f64, _rng
from .strategies import empty_view, make_view, read

__all__ = ["NewResultConformance"]

_MAP_CASES = [(op, dt) for op in MAP_OPS for dt in MAP_CATALOG[op].dtypes]
_ZIP_CASES = [(op, dt) for op in ZIP_OPS for dt in ZIP_CATALOG[op].dtypes]
#: input layouts: a result allocated for a permuted or stepped input is still row-major
_MAP_LAYOUTS = ("contiguous", "permuted", "sliced")
#: (a, b) layouts, broadcast operands among them (a row against a full matrix)
_ZIP_LAYOUTS = (("contiguous", "contiguous"), ("permuted", "permuted"), ("sliced", "broadcast"))
_SHAPE = (3, 5)


def _dtype(name):
    from torchlight.tensor import dtypes

    return dtypes.as_dtype(name)


class NewResultConformance:
    """``new_result`` tests; mixed into ``BackendConformance``."""

    def _check_made(self, made, want_view, shape, out_dtype, spec, reference, what):
        """``made`` holds what ``want_view`` holds, close to ``reference``, as contiguous
        storage of ``shape``'s element count with a working handle."""
        storage, handle = made
        got = TensorData(storage, shape)
        got.cache = handle  # what the core keeps: kernels read the view through it
        np.testing.assert_array_equal(read(self.be, got), read(self.be, want_view), err_msg=what)
        # the same storage seen through a view without the handle: the same values
        np.testing.assert_array_equal(
            read(self.be, TensorData(storage, shape)), read(self.be, want_view), err_msg=what
        )
        if out_dtype in ("int64", "bool"):
            np.testing.assert_array_equal(read(self.be, got), reference, err_msg=what)
        else:
            rtol, atol = tolerance(out_dtype, spec)
            np.testing.assert_allclose(
                read(self.be, got).astype(np.float64), reference, rtol=rtol, atol=atol, err_msg=what
            )
        # the handle is a view of the storage: values written through the storage show in it
        before = read(self.be, got)
        after = ~before if before.dtype == np.bool_ else before + 1
        self.be.map("copy", make_view(self.be, after)[0], TensorData(storage, shape))
        np.testing.assert_array_equal(read(self.be, got), after, err_msg=f"{what}: handle")
        if "host_memory" in self.be.capabilities:
            assert storage.ndim == 1 and storage.size == int(np.prod(shape)), what

    @pytest.mark.parametrize(("op", "dtype"), _MAP_CASES)
    def test_map_new(self, op, dtype):
        """Capability ``new_result``: ``map_new`` gives ``map``'s values in new storage, on every
        input layout (or declines)."""
        self._need("new_result")
        if op not in self.be.new_result_ops:
            pytest.skip(f"{op!r} is not in the backend's new_result_ops")
        be, spec = self.be, MAP_CATALOG[op]
        out_dtype = spec.out or dtype
        for k, layout in enumerate(_MAP_LAYOUTS):
            x = sample(_rng("map_new", op, dtype, k), _SHAPE, dtype, spec.domain)
            a, xv = make_view(be, x, layout)
            made = be.map_new(op, a, _dtype(out_dtype))
            if made is None:
                continue  # declined: the core allocates and calls map
            want = empty_view(be, _SHAPE, out_dtype, "contiguous")
            be.map(op, a, want)
            what = f"map_new {op} {dtype} {layout}"
            self._check_made(made, want, _SHAPE, out_dtype, spec, spec.ref(_f64(xv)), what)

    @pytest.mark.parametrize(("op", "dtype"), _ZIP_CASES)
    def test_zip_new(self, op, dtype):
        """Capability ``new_result``: ``zip_new`` gives ``zip``'s values in new storage, on every
        layout of the operands, broadcast ones included (or declines)."""
        self._need("new_result")
        if op not in self.be.new_result_ops:
            pytest.skip(f"{op!r} is not in the backend's new_result_ops")
        be, spec = self.be, ZIP_CATALOG[op]
        out_dtype = spec.out or dtype
        for k, (la, lb) in enumerate(_ZIP_LAYOUTS):
            rng = _rng("zip_new", op, dtype, k)
            x = sample(rng, _SHAPE, dtype, spec.domain)
            y = sample(rng, _SHAPE, dtype, spec.second or spec.domain)
            a, xv = make_view(be, x, la)
            b, yv = make_view(be, y, lb, dim=0)
            made = be.zip_new(op, a, b, _dtype(out_dtype))
            if made is None:
                continue
            want = empty_view(be, _SHAPE, out_dtype, "contiguous")
            be.zip(op, a, b, want)
            what = f"zip_new {op} {dtype} {la} {lb}"
            self._check_made(
                made, want, _SHAPE, out_dtype, spec, spec.ref(_f64(xv), _f64(yv)), what
            )

    def test_declines_another_dtype(self):
        """Capability ``new_result``: asked for a dtype the op does not produce from its inputs
        (a float64 sum of float32 operands), the backend declines or gives that dtype."""
        self._need("new_result")
        be = self.be
        a, xv = make_view(be, np.arange(15, dtype=np.float32).reshape(_SHAPE))
        made = be.zip_new("add", a, a, _dtype("float64"))
        if made is not None:
            got = TensorData(made[0], _SHAPE)
            assert read(be, got).dtype == np.float64
            np.testing.assert_array_equal(read(be, got), (xv + xv).astype(np.float64))
