"""The kit's test of the optional ``fill`` capability: ``out[...] = value`` where the storage lives.

A mixin of :class:`~torchlight.testing.BackendConformance` (which supplies ``be`` and ``_need``);
it skips when the backend does not declare ``fill``. The contract takes a contiguous or a 1-D
``out`` and a Python number of ``out``'s dtype kind; here ``out`` is an offset view (contiguous,
or every other element of a row) filled with a sentinel, so a kernel that writes past its end or
between its elements is caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from .catalog import ALL
from .strategies import empty_view, outside_untouched, read

__all__ = ["FillConformance"]

#: per dtype, values a program writes (``zeros``, ``x[:, 0] = 14``, ``y[n:] = -1``, a mask)
VALUES = {
    "float32": (0.0, -1.5, 3.0e38),
    "float64": (0.0, 2.5, -1.0e300),
    "int64": (0, -1, 2**62),
    "bool": (False, True),
}


class FillConformance:
    """``fill`` tests; mixed into ``BackendConformance``."""

    @pytest.mark.parametrize("dtype", ALL)
    @pytest.mark.parametrize("shape", [(3, 4), (7,), (), (0,)])
    def test_fill_contiguous(self, dtype, shape):
        """Capability ``fill``: every element of a contiguous view takes the value, nothing
        outside it changes."""
        self._need("fill")
        for value in VALUES[dtype]:
            out = empty_view(self.be, shape, dtype, "offset")
            self.be.fill(out, value)
            want = np.full(shape, value, dtype=read(self.be, out).dtype)
            np.testing.assert_array_equal(read(self.be, out), want, err_msg=f"{dtype} {value}")
            assert outside_untouched(self.be, out, dtype), f"fill {dtype} wrote outside out"

    @pytest.mark.parametrize("dtype", ALL)
    def test_fill_strided_row(self, dtype):
        """Capability ``fill`` on a 1-D view with a step (``x[:, 0] = 14``'s column): the
        elements in between keep their values."""
        self._need("fill")
        whole = empty_view(self.be, (5, 2), dtype, "contiguous")
        column = type(whole)(whole.storage, (5,), (2,), 0)
        value = VALUES[dtype][1]
        self.be.fill(column, value)
        got = read(self.be, whole)
        np.testing.assert_array_equal(got[:, 0], np.full(5, value, dtype=got.dtype))
        assert outside_untouched(self.be, column, dtype), f"fill {dtype} wrote between the steps"
