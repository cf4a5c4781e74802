"""The float matmul split over numba's threads (``_blas.py``) against one ``np.matmul``: 2-D
row slices, batch slices, strided operands, and shapes too small to split."""

import numba
import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.numba import _blas

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")


@pytest.fixture
def split_everything(monkeypatch):
    monkeypatch.setattr(_blas, "SPLIT_MIN", 0)
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    yield
    numba.set_num_threads(before)


@pytest.mark.parametrize("xs, ys", [
    ((7, 5), (5, 3)),            # rows split
    ((4, 6, 5), (4, 5, 2)),      # batch split
    ((1, 6, 5), (1, 5, 2)),      # one batch entry: rows split
    ((3, 2, 1, 4), (3, 2, 4, 5)),  # one row, batch of 3
    ((1, 5), (5, 3)),            # nothing to split
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_equals_one_call(split_everything, xs, ys, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)
    out = np.full(np.broadcast_shapes(xs[:-2], ys[:-2]) + (xs[-2], ys[-1]), np.nan, dtype)
    _blas.matmul(x, y, out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_split_through_the_backend_on_strided_views(split_everything):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 8, 6))
    b = rng.standard_normal((3, 5, 6))
    ta = tl.tensor(a, device="numba").transpose(1, 2)  # (3, 6, 8), strided
    tb = tl.tensor(b, device="numba")                   # used as (3, 6, 5) below
    got = (ta.transpose(1, 2) @ tb.transpose(1, 2)).numpy()
    np.testing.assert_allclose(got, a @ b.transpose(0, 2, 1), rtol=1e-12)
    c = rng.standard_normal((6, 4))
    got2d = (ta[0].t() @ tl.tensor(c, device="numba")).numpy()  # (8, 6) transposed view @ (6, 4)
    np.testing.assert_allclose(got2d, a[0] @ c, rtol=1e-12)
