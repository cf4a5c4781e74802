"""GPU-sized launches, checked under the simulator: 256-thread blocks, 64-thread row blocks and a
grid capped at 3 blocks, on sizes that are not multiples of any of them (so the last block is
partial and grid-stride loops go round more than once). Runs in a subprocess because the launch
sizes are read when the backend is imported; needs numba-cuda (the simulator), not a GPU. It runs
with the rest of the simulator session (``nox -s conformance``, ``NUMBA_ENABLE_CUDASIM=1``) and is
skipped in other pytest processes, so CI pays its minute of simulated threads once."""

import os
import subprocess
import sys

import pytest

from torchlight.backends.cuda.spec import _numba_cuda_installed

pytestmark = [
    pytest.mark.skipif(not _numba_cuda_installed(), reason="numba-cuda is not installed"),
    pytest.mark.skipif(
        os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
        reason="runs in the simulator session (NUMBA_ENABLE_CUDASIM=1 pytest, nox -s conformance)",
    ),
]

_CODE = r"""
import numpy as np
import torchlight as tl
from torchlight.backends.cuda import _launch
assert (_launch.BLOCK, _launch.ROW_BLOCK, _launch.MAX_BLOCKS) == (256, 64, 3), (_launch.BLOCK, _launch.ROW_BLOCK)
rng = np.random.default_rng(0)
def T(a):
    return tl.tensor(a, device="cuda")
def close(got, want, tol=1e-5):
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)

x = rng.standard_normal(1000).astype(np.float32)                 # 4 blocks needed, 3 launched
close(T(x).exp(), np.exp(x))
a = rng.standard_normal((7, 143)).astype(np.float32)
b = rng.standard_normal((143,)).astype(np.float32)
close(T(a) * T(b), a * b)                                          # broadcast: strided kernel
close(T(a).permute(1, 0) + 1.0, a.T + 1.0)
close(T(a).sum(1), a.sum(1), 1e-4)                                 # rows of 143 > 64 threads
close(T(a).amax(0), a.max(0))                                      # 143 outputs > 3 blocks
close(T(a).argmax(1), a.argmax(1))
close(T(a).softmax(-1), np.exp(a) / np.exp(a).sum(-1, keepdims=True))
close(T(a).log_softmax(0), a - np.log(np.exp(a).sum(0, keepdims=True)))
w = rng.standard_normal(143).astype(np.float32)
mu = a.mean(-1, keepdims=True); r = 1 / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
close(tl.layer_norm(T(a), (143,), T(w), T(w)), (a - mu) * r * w + w, 1e-4)
m1 = rng.standard_normal((3, 33, 17)).astype(np.float32)
m2 = rng.standard_normal((17, 70)).astype(np.float32)
close(T(m1) @ T(m2), m1 @ m2, 1e-4)                                # edges off the 64x64 tile
idx = rng.integers(0, 7, 40)                                       # 40 x 143 elements: 8 grid strides
close(T(a).index_select(0, T(idx)), a[idx])
src = rng.standard_normal((40, 143)).astype(np.float32)
want = np.zeros((7, 143), np.float32); np.add.at(want, idx, src)
at = tl.tensor(a, device="cuda", requires_grad=True)
at.index_select(0, T(idx)).backward(T(src))                         # put_add with atomics
close(at.grad, want, 1e-4)
g = rng.integers(0, 143, (7, 40))
ag = tl.tensor(a, device="cuda", requires_grad=True)
ag.gather(1, T(g)).backward(T(src.T[:7].copy()))                    # scatter_add
want = np.zeros_like(a); np.add.at(want, (np.arange(7)[:, None], g), src.T[:7])
close(ag.grad, want, 1e-4)
from torchlight.backends.cuda.backend import CudaBackend
from torchlight.tensor.storage import TensorData
be = CudaBackend()                                                  # fused cross-entropy, rows of 143
tg = rng.integers(0, 143, 7); wt = np.ones(7, np.float32); wt[2] = 0
D = lambda h: TensorData(be.from_numpy(h), h.shape)
ce_loss, ce_lse, ce_dx = D(np.zeros(7, np.float32)), D(np.zeros(7, np.float32)), D(np.zeros_like(a))
be.cross_entropy(D(a), D(tg), D(wt), ce_loss, ce_lse)
lse = np.log(np.exp(a.astype(np.float64)).sum(1))
np.testing.assert_allclose(be.to_numpy(ce_lse), lse - a.max(1), rtol=1e-5)  # saved: log Σ exp(x - max)
np.testing.assert_allclose(be.to_numpy(ce_loss), wt * (lse - a[np.arange(7), tg]), rtol=1e-5, atol=1e-5)
be.cross_entropy_backward(D(a), D(tg), D(wt), ce_lse, D(np.ones(7, np.float32)), ce_dx)
want = np.exp(a - lse[:, None]); want[np.arange(7), tg] -= 1; want *= wt[:, None]
np.testing.assert_allclose(be.to_numpy(ce_dx), want, rtol=1e-4, atol=1e-6)
print("ok")
"""


def test_gpu_sized_launches_under_the_simulator():
    env = dict(
        os.environ,
        NUMBA_ENABLE_CUDASIM="1",
        TORCHLIGHT_CUDA_BLOCK="256",
        TORCHLIGHT_CUDA_ROW_BLOCK="64",
        TORCHLIGHT_CUDA_MAX_BLOCKS="3",
    )
    proc = subprocess.run(
        [sys.executable, "-c", _CODE], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]
