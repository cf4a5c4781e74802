"""The kit's test of the optional ``nll`` capability: an unweighted ``nll_loss``'s forward in
one call, ``out = (Σ_i x[i, target_i]) / divisor``.

A mixin of :class:`~torchlight.testing.BackendConformance` (which supplies ``be``, ``P`` and
``_need``); it skips when the backend does not declare ``nll``. The reference is the float64 sum
of the picked values over the divisor (``-N``, a mean; ``-1``, a sum). Log-probabilities come in
every layout (a broadcast one repeats a row), targets packed or strided, one row or many, and
``out`` is a 0-d view inside a buffer of sentinels, so a kernel that writes past it is caught.
Out-of-range targets are the bounds tests' (:mod:`torchlight.testing.bounds`).
"""

from __future__ import annotations

import numpy as np
import pytest

from .catalog import FLOAT, sample, tolerance
from .fused import _rng
from .strategies import LAYOUTS, empty_view, make_view, outside_untouched, read

__all__ = ["NLLConformance"]


class NLLConformance:
    """``nll`` tests; mixed into ``BackendConformance``."""

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_nll(self, dtype):
        """Capability ``nll``: the picked log-probabilities' sum over the divisor matches the
        float64 reference on every layout, for one row and many, and writes only ``out``."""
        self._need("nll")
        be = self.be
        R, C = self.P.rows
        for n in (1, R):
            rng = _rng("nll", dtype, n)
            values = sample(rng, (n, C), dtype)
            tv = rng.integers(0, C, size=n)
            for layout in LAYOUTS:
                x, xv = make_view(be, values, layout)
                for t_layout in ("contiguous", "sliced"):
                    t, _ = make_view(be, tv, t_layout)
                    for divisor in (-float(n), -1.0):
                        out = empty_view(be, (), dtype, "offset")
                        be.nll(x, t, out, divisor)
                        what = f"nll {dtype} n={n} x={layout} target={t_layout} divisor={divisor}"
                        want = xv.astype(np.float64)[np.arange(n), tv].sum() / divisor
                        rtol, atol = tolerance(dtype)
                        # a sum of n values: its rounding grows with n
                        np.testing.assert_allclose(
                            read(be, out), want, rtol=rtol * n, atol=atol * n, err_msg=what
                        )
                        assert outside_untouched(be, out, dtype), what + ": wrote outside out"
                        np.testing.assert_array_equal(read(be, x), xv, err_msg=what)
