"""nn.GRU / nn.LSTM / the cells through the fused gate kernels equal the composite path (the
backend's ``gru_cell`` / ``lstm_cell`` capabilities removed): outputs, final states and every
parameter gradient, with batch_first (transposed gate blocks), two layers and both directions."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.autograd.function import History
from torchlight.tensor.backend.numpy import NumpyBackend


def _run(mod, x, lstm):
    mod.zero_grad()
    x.grad = None
    out, state = mod(x)
    hn = state[0] if lstm else state
    loss = (out * out).sum() + (hn * 1.5).sum() + ((state[1] * -0.5).sum() if lstm else 0.0)
    loss.backward()
    vals = [out.detach().numpy().copy(), hn.detach().numpy().copy(), x.grad.numpy().copy()]
    return vals + [p.grad.numpy().copy() for p in mod.parameters()]


@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
@pytest.mark.parametrize("batch_first, bidirectional", [(False, False), (True, True)])
def test_module_fused_equals_composite(monkeypatch, cls, batch_first, bidirectional):
    tl.manual_seed(3)
    mod = cls(5, 4, num_layers=2, batch_first=batch_first, bidirectional=bidirectional)
    x = tl.randn(3, 6, 5, requires_grad=True)
    lstm = cls is nn.LSTM
    fused = _run(mod, x, lstm)
    monkeypatch.setattr(
        NumpyBackend, "capabilities", NumpyBackend.capabilities - {"gru_cell", "lstm_cell"}
    )
    composite = _run(mod, x, lstm)
    for k, (a, b) in enumerate(zip(fused, composite)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{cls.__name__} value #{k}")


@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_packed_input_fused_equals_composite(monkeypatch, cls):
    """A packed batch of unsorted lengths through two bidirectional layers: the fused layer
    (each step on the sequences that have it) equals the masked step-by-step graph, in the
    output, the final states and every gradient."""
    from torchlight.nn.utils.rnn import pack_padded_sequence

    tl.manual_seed(6)
    mod = cls(5, 4, num_layers=2, batch_first=True, bidirectional=True)
    x = tl.randn(4, 6, 5, requires_grad=True)
    lstm = cls is nn.LSTM

    def run():
        mod.zero_grad()
        x.grad = None
        packed = pack_padded_sequence(x, [3, 6, 1, 4], batch_first=True, enforce_sorted=False)
        out, state = mod(packed)
        fused_path = "CellSequence" in {h.fn.__name__ for h in _nodes(out.data)}
        assert fused_path == (("lstm_cell" if lstm else "gru_cell") in x.backend.capabilities)
        hn = state[0] if lstm else state
        loss = (out.data * out.data).sum() + (hn * 1.5).sum()
        if lstm:
            loss = loss + (state[1] * -0.5).sum()
        loss.backward()
        vals = [out.data.detach().numpy().copy(), hn.detach().numpy().copy()]
        return vals + [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in mod.parameters()]

    fused = run()
    monkeypatch.setattr(
        NumpyBackend, "capabilities", NumpyBackend.capabilities - {"gru_cell", "lstm_cell"}
    )
    for k, (a, b) in enumerate(zip(fused, run())):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{cls.__name__} value #{k}")


@pytest.mark.parametrize("cls", [nn.GRUCell, nn.LSTMCell])
def test_cell_fused_equals_composite(monkeypatch, cls):
    tl.manual_seed(4)
    cell = cls(3, 5)
    x = tl.randn(2, 3)
    h0 = tl.randn(2, 5)
    hx = (h0, tl.randn(2, 5)) if cls is nn.LSTMCell else h0

    def run():
        cell.zero_grad()
        out = cell(x, hx)
        out = out[0] - 3 * out[1] if isinstance(out, tuple) else out
        (out * out).sum().backward()
        return [out.detach().numpy().copy()] + [p.grad.numpy().copy() for p in cell.parameters()]

    fused = run()
    monkeypatch.setattr(
        NumpyBackend, "capabilities", NumpyBackend.capabilities - {"gru_cell", "lstm_cell"}
    )
    for a, b in zip(fused, run()):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_lstm_bptt_gradcheck_float64():
    """Backpropagation through time over the fused LSTM steps against finite differences."""
    tl.manual_seed(5)
    mod = nn.LSTM(2, 3, dtype=tl.float64)
    x = tl.randn(4, 2, 2, dtype=tl.float64, requires_grad=True)
    w = mod.weight_hh_l0

    def f(inp, weight):
        mod._parameters["weight_hh_l0"] = weight
        out, (h, c) = mod(inp)
        return out.sum() + c.sum()

    assert tl.gradcheck(f, (x, w))


@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_a_layer_is_one_node_eagerly_and_steps_under_a_trace(cls):
    """Eagerly each direction of a layer is one ``CellSequence`` node; a ``tl.jit.trace`` tape
    (which replays ops, not this Python) records the per-step cells instead, and replays them to
    the eager outputs on new inputs."""
    tl.manual_seed(3)
    rnn = cls(3, 4, num_layers=2, bidirectional=True)
    x = tl.randn(5, 2, 3)
    out = rnn(x)[0]
    names = {h.fn.__name__ for h in _nodes(out)}
    assert "CellSequence" in names and not names & {"FusedGRUCell", "FusedLSTMCell"}
    assert not tl.jit.is_recording()
    # the output is contiguous, as PyTorch's: programs .view it (pos_tagger: lstm_out.view(T, -1))
    single = cls(3, 4)(x)[0]
    assert single.is_contiguous() and single.view(-1, 4).shape == (10, 4)

    tape = tl.jit.trace(lambda x: rnn(x)[0], x)
    ops = {n.fn.__name__ for n in tape.nodes}
    assert "CellSequence" not in ops and ops & {"FusedGRUCell", "FusedLSTMCell"}
    x2 = tl.randn(5, 2, 3)
    np.testing.assert_allclose(tape(x2).numpy(), rnn(x2)[0].detach().numpy(), rtol=1e-6, atol=1e-6)


def _nodes(t):
    """The autograd nodes (``History``) behind ``t``."""
    seen, out, stack = set(), [], [t._history]
    while stack:
        h = stack.pop()
        if h is None or id(h) in seen:
            continue
        seen.add(id(h))
        out.append(h)
        stack.extend(v for v in h.inputs if isinstance(v, History))
    return out
