"""The parallel (``prange`` across threads) compilations of every kernel family.

The conformance kit's inputs (~1k elements) run the serial compilations (below
``PARALLEL_MIN``); here ``PARALLEL_MIN = 0`` forces the parallel ones on inputs large enough to
split into several blocks/rows per thread, compared with the cpu backend.
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.numba import _jit


@pytest.fixture(autouse=True)
def force_parallel(monkeypatch):
    monkeypatch.setattr(_jit, "PARALLEL_MIN", 0)


def both(fn, *arrays, grad=False, tol=1e-5):
    out = []
    for dev in ("numba", "cpu"):
        ts = [tl.tensor(a, device=dev, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        r = fn(*ts)
        rs = list(r) if isinstance(r, tuple) else [r]
        if grad:
            rs[0].sum().backward() if rs[0].ndim else rs[0].backward()
            rs += [t.grad for t in ts if t.grad is not None]
        out.append([np.asarray(v.detach().to("cpu").numpy(), dtype=np.float64) for v in rs])
    for got, want in zip(*out):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


rng = np.random.default_rng(0)
X = rng.standard_normal((96, 40, 33)).astype(np.float32)  # 126720 elements, several blocks
Y = rng.standard_normal((40, 33)).astype(np.float32)
I = rng.integers(-50, 50, size=(96, 40, 33))


def test_elementwise_flat_strided_broadcast_compare_where():
    both(lambda x, y: (x * y + x.exp().tanh()).gelu(), X, Y)
    both(lambda x: x.permute(2, 0, 1)[::2].sigmoid() + 1, X)
    both(lambda x, y: tl.where(x > y, x, y * 2), X, Y)
    both(lambda i: (i * 3 - i.abs()).maximum(i) + (i > 0).long(), I)


def test_reductions():
    for dim in (0, 1, 2, (0, 2), None):
        both(lambda x, d=dim: x.sum(d), X)
        both(lambda x, d=dim: x.amax(d), X)
        both(lambda i, d=dim: i.sum(d), I)
    both(lambda x: x.argmax(1), X)
    both(lambda x: x.reshape(-1).sum(), np.concatenate([X.reshape(-1)] * 2))  # split path


def test_matmul_index_and_fused_with_grad():
    both(lambda a, b: a @ b, I[:, :8, :16], I[:, :16, :8])
    idx = rng.integers(0, 96, size=300)
    both(lambda x, i: x.index_select(0, i), X, idx, grad=True)
    gidx = rng.integers(0, 40, size=(96, 40, 33))
    both(lambda x, i: x.gather(1, i), X, gidx, grad=True)
    both(lambda x: x.softmax(-1) * x.log_softmax(0), X, grad=True)
    # dw/db sum 3840 rows: numba accumulates in float64, numpy in float32 (pairwise)
    both(lambda x, w: tl.layer_norm(x, (33,), w[0], w[1]), X, Y[:2], grad=True, tol=2e-4)


def test_windows_col2im_and_max_pool_gradient():
    """The ``windows`` kernels split the planes (batch × channels) across threads."""
    from torchlight.tensor.functions.windows import unfold_windows, window_max

    img = rng.standard_normal((6, 5, 14, 13)).astype(np.float32)
    weights = rng.standard_normal((12, 11, 3, 3)).astype(np.float32)
    both(lambda x, w: unfold_windows(x, (3, 3), (1, 1), (1, 1)) * w, img, weights, grad=True)
    both(lambda x: window_max(x.relu(), (3, 3), (2, 2), (1, 1), (6, 6)), img, grad=True)
