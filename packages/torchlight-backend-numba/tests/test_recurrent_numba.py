"""The numba backend's fused GRU/LSTM cells through autograd: finite differences in float64 on
strided gate blocks, and nn.GRU / nn.LSTM equal to the cpu backend (values and gradients), on
both the serial and the parallel compilations, through the whole-sequence kernels and, at a
hidden size they decline, through the core's step loop. (The kernels' contract itself is checked by the
conformance kit in ``test_conformance_numba.py``.)"""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.backends.numba import _jit
from torchlight.backends.numba._recurrent import takes_layer
from torchlight.tensor.functions.recurrent import gru_cell_gates, lstm_cell_gates


@pytest.fixture(params=["serial", "parallel"])
def path(request, monkeypatch):
    which = "par" if request.param == "parallel" else "ser"
    monkeypatch.setattr(_jit.Kernel, "pick", lambda self, work, minimum=None: getattr(self, which))
    return request.param


def test_gradcheck_strided(path):
    rng = np.random.default_rng(2)
    n, h = 3, 4

    def leaf(*shape):
        return tl.tensor(
            rng.standard_normal(shape), dtype=tl.float64, device="numba", requires_grad=True
        )

    gi_t, gh, s = leaf(3 * h, n), leaf(n, 6 * h), leaf(n, h)  # gi transposed, gh step-sliced
    assert tl.gradcheck(lambda a, b, c: gru_cell_gates(a.t(), b[:, ::2], c), (gi_t, gh, s))
    gi_t, gh = leaf(4 * h, n), leaf(n, 8 * h)

    def lstm(a, b, c):
        hn, cn = lstm_cell_gates(a.t(), b[:, 1::2], c)
        return hn - 2.0 * cn

    assert tl.gradcheck(lstm, (gi_t, gh, s))


@pytest.mark.parametrize("hidden", [6, 64], ids=["whole-sequence", "declined"])
@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_module_matches_cpu(path, cls, hidden):
    gates = 4 if cls is nn.LSTM else 3
    # the batch of 3 and one step's product h W_hhᵀ decide whether the kernel takes the layer
    if takes_layer(3, gates * hidden, hidden) != (hidden == 6):
        pytest.skip("TORCHLIGHT_NUMBA_SEQUENCE_MAX_WORK moved the threshold this test straddles")
    tl.manual_seed(1)
    cpu = cls(4, hidden, num_layers=2, batch_first=True)
    dev = cls(4, hidden, num_layers=2, batch_first=True).to("numba")
    dev.load_state_dict(cpu.state_dict())
    x = tl.randn(3, 5, 4)
    results = []
    for mod, inp in ((cpu, x), (dev, x.to("numba"))):
        out, state = mod(inp)
        hn = state[0] if cls is nn.LSTM else state
        ((out * out).sum() + hn.sum()).backward()
        results.append(
            [out.detach().numpy(), hn.detach().numpy()] + [p.grad.numpy() for p in mod.parameters()]
        )
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
