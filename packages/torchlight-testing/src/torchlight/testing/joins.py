"""The kit's test of the optional ``join`` capability: ``cat`` and ``stack`` in one call.

A mixin of :class:`~torchlight.testing.BackendConformance` (which supplies ``be``, ``P`` and
``_need``); it skips when the backend does not declare ``join``. The reference is
``np.concatenate`` / ``np.stack`` of the inputs' logical values. Inputs come in every layout
(contiguous, offset, permuted, sliced, broadcast), in every dtype, along every dimension, with an
empty input among them; ``out`` is an offset view filled with a sentinel, so a kernel that writes
past its end is caught.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from .catalog import ALL, sample
from .strategies import LAYOUTS, empty_view, make_view, outside_untouched, read

__all__ = ["JoinConformance"]

#: sizes along the joined dim of the ``cat`` inputs: an empty one and a single slice included
CAT_SIZES = (2, 0, 1, 3)


class JoinConformance:
    """``join`` tests; mixed into ``BackendConformance``."""

    def _join_case(self, dtype, dim, new_dim, layout):
        """Inputs in ``layout``, their logical values, and the numpy reference of the join."""
        rng = np.random.default_rng(zlib.crc32(repr(("join", dtype, dim, new_dim)).encode()))
        shape = self.P.shape
        views, values = [], []
        for n in (1, 1, 1) if new_dim else CAT_SIZES:
            size = shape if new_dim else shape[:dim] + (n,) + shape[dim + 1 :]
            td, logical = make_view(self.be, sample(rng, size, dtype), layout)
            views.append(td)
            values.append(logical)
        want = np.stack(values, dim) if new_dim else np.concatenate(values, dim)
        return views, want

    @pytest.mark.parametrize("new_dim", [False, True], ids=["cat", "stack"])
    @pytest.mark.parametrize("dtype", ALL)
    def test_join(self, dtype, new_dim):
        """Capability ``join``: ``cat`` along every dim, ``stack`` at every position, of inputs in
        every layout, equals numpy's and writes nothing outside ``out``."""
        self._need("join")
        be = self.be
        ndim = len(self.P.shape) + new_dim
        for dim in range(ndim):
            for layout in LAYOUTS:
                views, want = self._join_case(dtype, dim, new_dim, layout)
                out = empty_view(be, want.shape, dtype, "offset")
                be.join(views, dim, out, new_dim)
                what = f"join {'stack' if new_dim else 'cat'} {dtype} dim={dim} inputs {layout}"
                np.testing.assert_array_equal(read(be, out), want, err_msg=what)
                assert outside_untouched(be, out, dtype), what + ": wrote outside out"
