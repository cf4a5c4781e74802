"""Tensors stay on the device: counting host<->device transfers over a full MLP training step.

``transfers.counting(trace=True)`` records every copy with its call site. The backend itself only
copies in ``from_numpy``/``to_numpy``, and kernels never receive host arrays (``launch`` refuses
them), so every transfer seen here was asked for by the caller. The core keeps the hot path on
the device: scalar operands and ``zeros`` are written with the backend's ``fill`` capability,
index bounds come from the record made when the index left the host, and the loss handles its
targets with device ops. A step then moves nothing but the loss value that is read.
"""

import collections

import numpy as np
import pytest

import torchlight as tl
from torchlight import nn
from torchlight.backends.cuda import transfers
from torchlight.backends.cuda.spec import SPEC
from torchlight.tensor import dtypes

_F64 = dtypes.as_dtype("float64")

pytestmark = pytest.mark.skipif(
    not SPEC.is_available(), reason=f"cuda backend unavailable here: {SPEC.why_unavailable()}"
)


def _make(optimizer):
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to("cuda")
    x = tl.tensor(rng.standard_normal((12, 8)).astype(np.float32), device="cuda")
    y = tl.tensor(rng.integers(0, 3, 12), device="cuda")
    opt = (
        tl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        if optimizer == "sgd"
        else tl.optim.Adam(model.parameters(), lr=1e-2)
    )

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step()  # the first step creates optimizer state
    return step


def _sites(log):
    """(direction, innermost torchlight frame) for each transfer, to name offenders."""
    out = collections.Counter()
    for direction, _nbytes, frames in log:
        out[(direction, frames[-1] if frames else "?")] += 1
    return dict(out)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_zero_transfers_training_step(optimizer):
    step = _make(optimizer)
    with transfers.counting(trace=True) as c:
        loss = step()
    assert (c.h2d, c.d2h) == (0, 0), _sites(c.log)
    with transfers.counting() as c2:
        value = loss.item()
    assert (c2.h2d, c2.d2h, c2.d2h_bytes) == (0, 1, 4) and np.isfinite(value)


def test_zero_transfers_fused_cross_entropy():
    """The fused kernels read and write device views only: a forward and backward over strided
    operands (transposed logits, a stride-0 upstream gradient) moves nothing."""
    from torchlight.backends.cuda.backend import CudaBackend
    from torchlight.tensor.storage import TensorData

    be = CudaBackend()
    n, c = 6, 5
    rng = np.random.default_rng(0)
    x = TensorData(be.from_numpy(rng.standard_normal((c, n))), (c, n)).permute((1, 0))
    target = TensorData(be.from_numpy(rng.integers(0, c, n)), (n,))
    weight = TensorData(be.from_numpy(np.ones(n)), (n,))
    g = TensorData(be.from_numpy(np.ones(1)), (1,)).expand((n,))
    with transfers.counting(trace=True) as c_:
        loss, lse = TensorData(be.empty(n, _F64), (n,)), TensorData(be.empty(n, _F64), (n,))
        dx = TensorData(be.empty(n * c, _F64), (n, c))
        be.cross_entropy(x, target, weight, loss, lse)
        be.cross_entropy_backward(x, target, weight, lse, g, dx)
    assert (c_.h2d, c_.d2h) == (0, 0), _sites(c_.log)
    assert np.all(np.isfinite(be.to_numpy(loss))) and np.allclose(be.to_numpy(dx).sum(1), 0)


def test_zero_transfers_label_smoothing_with_class_weights():
    """The composite path of ``cross_entropy`` (label smoothing) keeps the targets on the device
    too, with class weights and ignored entries: the one thing that crosses is the flag that
    says no target outside [0, C) is a real one (1 byte; PyTorch asserts on the device)."""
    rng = np.random.default_rng(1)
    x = tl.tensor(rng.standard_normal((8, 5)), device="cuda", requires_grad=True)
    y = rng.integers(0, 5, 8)
    y[2] = -100
    target = tl.tensor(y, device="cuda")
    w = tl.tensor(rng.uniform(0.5, 2.0, 5), device="cuda")

    def step():
        loss = nn.functional.cross_entropy(x, target, weight=w, label_smoothing=0.1)
        loss.backward()
        return loss

    step()  # the first backward caches its seed gradient (ones) on the device
    with transfers.counting(trace=True) as c:
        loss = step()
    assert (c.h2d, c.d2h, c.d2h_bytes) == (0, 1, 1), _sites(c.log)
    assert np.isfinite(loss.item()) and x.grad.shape == (8, 5)


def test_kernels_refuse_host_arrays():
    from torchlight.backends.cuda import _launch
    from torchlight.tensor.errors import BackendError

    with pytest.raises(BackendError, match="hidden host->device copy"):
        _launch.launch(None, 1, 1, np.zeros(3))


def test_counting_scopes_nest_and_report_bytes():
    with transfers.counting() as outer:
        x = tl.tensor(np.arange(6, dtype=np.float64), device="cuda")
        with transfers.counting() as inner:
            x.numpy()
            x[1:5:2].numpy()  # strided: packed on the device, then one copy of 2 elements
    assert (outer.h2d, outer.h2d_bytes, outer.d2h) == (1, 48, 2)
    assert (inner.h2d, inner.d2h, inner.d2h_bytes) == (0, 2, 48 + 16)


def test_zero_transfers_dropout_step():
    """Dropout masks are drawn on the device (the ``random`` capability): a training step of a
    model with dropout uploads nothing, and the masks really drop (about p of the elements)."""
    rng = np.random.default_rng(2)
    model = nn.Sequential(nn.Linear(8, 64), nn.Dropout(0.5), nn.Linear(64, 3)).to("cuda")
    x = tl.tensor(rng.standard_normal((16, 8)).astype(np.float32), device="cuda")
    y = tl.tensor(rng.integers(0, 3, 16), device="cuda")
    opt = tl.optim.SGD(model.parameters(), lr=0.1)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step()
    with transfers.counting(trace=True) as c:
        step()
        hidden = model[1](model[0](x))
    assert (c.h2d, c.d2h) == (0, 0), _sites(c.log)
    dropped = float((hidden.detach().numpy() == 0).mean())
    assert 0.4 < dropped < 0.6, dropped
