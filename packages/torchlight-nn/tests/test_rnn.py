"""GRU/LSTM (cells and multi-layer modules) against numpy references; BPTT gradchecks."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn


def sig(v):
    return 1 / (1 + np.exp(-v))


def np_gru_cell(x, h, wih, whh, bih, bhh):
    gi, gh = x @ wih.T + bih, h @ whh.T + bhh
    H = h.shape[-1]
    r = sig(gi[:, :H] + gh[:, :H])
    z = sig(gi[:, H : 2 * H] + gh[:, H : 2 * H])
    n = np.tanh(gi[:, 2 * H :] + r * gh[:, 2 * H :])
    return (1 - z) * n + z * h


def np_lstm_cell(x, h, c, wih, whh, bih, bhh):
    g = x @ wih.T + bih + h @ whh.T + bhh
    H = h.shape[-1]
    i, f, gg, o = (
        sig(g[:, :H]),
        sig(g[:, H : 2 * H]),
        np.tanh(g[:, 2 * H : 3 * H]),
        sig(g[:, 3 * H :]),
    )
    c = f * c + i * gg
    return o * np.tanh(c), c


def params(mod, sfx):
    p = dict(mod.named_parameters())
    return [p[n + sfx].detach().numpy() for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


def np_rnn(mod, x, lstm):
    """Multi-layer, possibly bidirectional reference; x is (T, N, I)."""
    T, N = x.shape[:2]
    H, dirs = mod.hidden_size, 2 if mod.bidirectional else 1
    hs, cs, inp = [], [], x
    for layer in range(mod.num_layers):
        outs = []
        for d in range(dirs):
            w = params(mod, f"_l{layer}" + ("_reverse" if d else ""))
            h, c = np.zeros((N, H)), np.zeros((N, H))
            seq = [None] * T
            for t in range(T) if d == 0 else reversed(range(T)):
                if lstm:
                    h, c = np_lstm_cell(inp[t], h, c, *w)
                else:
                    h = np_gru_cell(inp[t], h, *w)
                seq[t] = h
            outs.append(np.stack(seq))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), np.stack(cs)


def test_gru_cell_matches_numpy():
    cell = nn.GRUCell(3, 4, dtype=tl.float64)
    rng = np.random.default_rng(0)
    x, h = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    out = cell(tl.tensor(x), tl.tensor(h))
    ref = np_gru_cell(x, h, *(p.detach().numpy() for p in cell.parameters()))
    np.testing.assert_allclose(out.to_numpy(), ref, rtol=1e-10)
    assert cell(tl.tensor(x[0])).shape == (4,)  # unbatched, h0 = 0


def test_lstm_cell_matches_numpy():
    cell = nn.LSTMCell(3, 4, dtype=tl.float64)
    rng = np.random.default_rng(1)
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    h1, c1 = cell(tl.tensor(x), (tl.tensor(h), tl.tensor(c)))
    rh, rc = np_lstm_cell(x, h, c, *(p.detach().numpy() for p in cell.parameters()))
    np.testing.assert_allclose(h1.to_numpy(), rh, rtol=1e-10)
    np.testing.assert_allclose(c1.to_numpy(), rc, rtol=1e-10)


@pytest.mark.parametrize("lstm", [False, True])
@pytest.mark.parametrize(
    "layers,bidir,batch_first", [(1, False, False), (2, False, True), (2, True, True)]
)
def test_rnn_modules_match_numpy(lstm, layers, bidir, batch_first):
    cls = nn.LSTM if lstm else nn.GRU
    mod = cls(
        3, 4, num_layers=layers, bidirectional=bidir, batch_first=batch_first, dtype=tl.float64
    )
    x = np.random.default_rng(2).standard_normal((5, 2, 3))  # (T, N, I)
    inp = tl.tensor(x.transpose(1, 0, 2) if batch_first else x)
    out, state = mod(inp)
    ref_out, ref_h, ref_c = np_rnn(mod, x, lstm)
    if batch_first:
        ref_out = ref_out.transpose(1, 0, 2)
    np.testing.assert_allclose(out.to_numpy(), ref_out, rtol=1e-10, atol=1e-12)
    h = state[0] if lstm else state
    np.testing.assert_allclose(h.to_numpy(), ref_h, rtol=1e-10, atol=1e-12)
    if lstm:
        np.testing.assert_allclose(state[1].to_numpy(), ref_c, rtol=1e-10, atol=1e-12)
    D = 2 if bidir else 1
    assert out.shape[-1] == 4 * D and h.shape == (layers * D, 2, 4)


def test_parameter_names_shapes_and_init():
    tl.manual_seed(0)
    lstm = nn.LSTM(3, 8, num_layers=2, bidirectional=True)
    names = dict((n, p.shape) for n, p in lstm.named_parameters())
    assert names["weight_ih_l0"] == (32, 3) and names["weight_hh_l0"] == (32, 8)
    assert names["weight_ih_l1"] == (32, 16) and names["bias_hh_l1_reverse"] == (32,)
    assert list(names)[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    bound = 1 / math.sqrt(8)
    for p in lstm.parameters():
        a = p.detach().numpy()
        assert np.abs(a).max() <= bound
    assert [n for n, _ in nn.GRU(2, 3, bias=False).named_parameters()] == [
        "weight_ih_l0",
        "weight_hh_l0",
    ]


def test_initial_state_and_unbatched_input():
    gru = nn.GRU(3, 4, num_layers=2, dtype=tl.float64)
    x = tl.randn(5, 3, dtype=tl.float64)
    h0 = tl.randn(2, 4, dtype=tl.float64)
    out, h = gru(x, h0)
    out_b, h_b = gru(x.unsqueeze(1), h0.unsqueeze(1))
    np.testing.assert_allclose(out.to_numpy(), out_b.squeeze(1).to_numpy())
    np.testing.assert_allclose(h.to_numpy(), h_b.squeeze(1).to_numpy())
    np.testing.assert_allclose(out.to_numpy()[-1], h.to_numpy()[-1])
    with pytest.raises(tl.ShapeError, match="input_size"):
        gru(tl.randn(5, 2, 4, dtype=tl.float64))
    with pytest.raises(tl.ShapeError, match="hidden size"):
        gru(x.unsqueeze(1), tl.randn(1, 1, 4, dtype=tl.float64))


def test_gru_gradcheck_three_steps():
    gru = nn.GRU(2, 3, dtype=tl.float64)
    x = tl.randn(3, 1, 2, dtype=tl.float64, requires_grad=True)
    h0 = tl.randn(1, 1, 3, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x, h0, w: gru(x, h0)[0], (x, h0, gru.weight_hh_l0))
    assert tl.gradcheck(lambda wi, bh: gru(x, h0)[1], (gru.weight_ih_l0, gru.bias_hh_l0))


def test_lstm_gradcheck_three_steps():
    lstm = nn.LSTM(2, 2, batch_first=True, dtype=tl.float64)
    x = tl.randn(1, 3, 2, dtype=tl.float64, requires_grad=True)
    h0 = tl.randn(1, 1, 2, dtype=tl.float64, requires_grad=True)
    c0 = tl.randn(1, 1, 2, dtype=tl.float64, requires_grad=True)

    def f(x, h0, c0, w):
        out, (h, c) = lstm(x, (h0, c0))
        return out.sum() + (c * 2).sum()

    assert tl.gradcheck(f, (x, h0, c0, lstm.weight_hh_l0))
    assert tl.gradcheck(lambda wi, b: lstm(x)[0], (lstm.weight_ih_l0, lstm.bias_ih_l0))


def test_cells_gradcheck():
    cell = nn.GRUCell(2, 2, dtype=tl.float64)
    x = tl.randn(2, 2, dtype=tl.float64, requires_grad=True)
    h = tl.randn(2, 2, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x, h, w: cell(cell(x, h), h), (x, h, cell.weight_ih))
    lc = nn.LSTMCell(2, 2, dtype=tl.float64)
    assert tl.gradcheck(lambda x, h, w: lc(x, (h, h))[1], (x, h, lc.bias_hh))


def test_repr():
    assert (
        repr(nn.GRU(3, 4, num_layers=2, batch_first=True))
        == "GRU(3, 4, num_layers=2, batch_first=True)"
    )
