"""Float matmul through BLAS from numba's threads (``_blas.py``) against numpy's ``@``: row and
column blocks, batch entries, transposed / sliced / broadcast operands read in place or packed, an
output without unit-stride columns, and the layout rule ``blas_strides``."""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.numba import _blas
from torchlight.backends.numba import backend as numba_backend
from torchlight.tensor.backend.registry import get_backend


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def split_everything(request, monkeypatch):
    """Every product above the JIT loop's size goes through gemm_kernel, split when possible."""
    if request.param > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs 2 numba threads")
    monkeypatch.setattr(_blas, "SPLIT_MIN", 0)
    before = numba.get_num_threads()
    numba.set_num_threads(request.param)
    yield
    numba.set_num_threads(before)


def _t(a):
    return tl.tensor(a, device="numba")


@pytest.mark.parametrize(
    "xs, ys",
    [
        ((70, 50), (50, 30)),  # rows split
        ((30, 50), (50, 70)),  # columns split (more columns than rows)
        ((4, 60, 50), (4, 50, 20)),  # batch entries
        ((1, 60, 50), (1, 50, 20)),  # one batch entry: rows split
        ((1, 20, 50), (1, 50, 61)),  # one batch entry: columns split, uneven
        ((3, 2, 1, 40), (3, 2, 40, 50)),  # one row per entry
        ((1, 500), (500, 30)),  # one row: columns split
        ((500, 30), (30, 1)),  # one column: rows split
        ((3, 40, 50), (50, 60)),  # broadcast weight (batch stride 0)
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_equals_numpy(split_everything, xs, ys, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)
    got = (_t(x) @ _t(y)).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(
        got,
        x @ y,
        rtol=2e-5 if dtype == np.float32 else 1e-12,
        atol=1e-4 if dtype == np.float32 else 1e-11,
    )


def test_transposed_and_sliced_operands(split_everything):
    """Transposed views go to BLAS as they are ("T"); views with no unit stride are packed."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 80, 60))
    b = rng.standard_normal((3, 50, 60))
    ta, tb = _t(a), _t(b)
    np.testing.assert_allclose(
        (ta @ tb.transpose(1, 2)).numpy(), a @ b.transpose(0, 2, 1), rtol=1e-12
    )
    np.testing.assert_allclose(
        (ta.transpose(1, 2) @ ta).numpy(), a.transpose(0, 2, 1) @ a, rtol=1e-12
    )
    c = rng.standard_normal((90, 100))
    tc = _t(c)
    # atol: an entry near 0 after cancellation differs by an ulp of the products between BLAS builds
    np.testing.assert_allclose(
        (tc[::2, ::3].t() @ tc[::2, 1::2]).numpy(),
        c[::2, ::3].T @ c[::2, 1::2],
        rtol=1e-12,
        atol=1e-13,
    )
    np.testing.assert_allclose(
        (tc[5:45, 10:70] @ tc[20:80, 3:13]).numpy(), c[5:45, 10:70] @ c[20:80, 3:13], rtol=1e-12
    )


def test_output_without_unit_stride_columns(split_everything):
    """The backend contract allows any ``out`` view; a transposed one goes through a temporary."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((40, 30)), rng.standard_normal((30, 50))
    be = get_backend("numba")
    a, b = _t(x), _t(y)
    holder = tl.zeros(50, 40, device="numba", dtype=tl.float64)
    out = holder.t()  # (40, 50) with strides (1, 40)
    be.matmul(a._td, b._td, out._td)
    np.testing.assert_allclose(holder.numpy().T, x @ y, rtol=1e-12)


@pytest.mark.parametrize(
    "rows, cols, rs, cs, expect",
    [
        (4, 5, 5, 1, (5, 1)),  # C-contiguous
        (4, 5, 8, 1, (8, 1)),  # row-sliced: leading dim 8
        (4, 5, 1, 4, (1, 4)),  # transposed (column-major)
        (4, 5, 10, 2, None),  # no unit stride: packed
        (4, 5, 0, 1, None),  # broadcast rows
        (4, 5, -5, 1, None),  # flipped
        (1, 5, 0, 1, (5, 1)),  # one row: its stride does not matter
        (1, 5, 0, 3, (1, 3)),  # one row, strided columns: column-major
        (4, 1, 1, 0, (1, 4)),  # one column, unit rows
        (4, 1, 7, 0, (7, 1)),  # one column, strided rows
        (1, 1, 0, 0, (1, 1)),
    ],
)
def test_blas_strides(rows, cols, rs, cs, expect):
    assert _blas.blas_strides(rows, cols, rs, cs) == expect


def test_without_scipy_matmul_falls_back_to_numpy_with_a_warning(monkeypatch):
    def missing():
        raise ImportError("No module named 'scipy'")

    monkeypatch.setattr(_blas, "_GEMM", {})
    monkeypatch.setattr(_blas, "_load", missing)
    monkeypatch.setattr(numba_backend, "_THREADED_GEMM_MIN", 0)  # small products ask for BLAS too
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((40, 30)), rng.standard_normal((30, 20))
    with pytest.warns(RuntimeWarning, match="fall back to np.matmul"):
        got = (_t(x) @ _t(y)).numpy()
    np.testing.assert_allclose(got, x @ y, rtol=1e-12)
    np.testing.assert_allclose((_t(x) @ _t(y)).numpy(), x @ y, rtol=1e-12)  # warned once only


def test_loading_the_backend_caps_blas_at_one_thread():
    """Loading the backend (before any product) leaves every BLAS library at one thread: small
    products go through ``np.matmul``, and a second pool spinning there held the core numba's
    next parallel loop needed (a LeNet step 3.4x slower at two threads than at one)."""
    script = (
        "import numpy, threadpoolctl\n"
        "def blas(): return sorted({p['num_threads'] for p in threadpoolctl.threadpool_info()"
        " if p['user_api'] == 'blas'})\n"
        "before = blas()\n"
        "from torchlight.tensor.backend.registry import get_backend\n"
        "get_backend('numba')\n"
        "print(before, blas())\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    before, after = out.stdout.split("] [")
    assert before == "[2", out.stdout  # the check below means something: BLAS started at two
    assert after.strip() == "1]", out.stdout
