"""Packed sequences: packing against a numpy construction, and recurrent layers on packed input
against running every sequence on its own (the unpacked path, no padding involved)."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    unpack_sequence,
)


def A(t):
    return t.detach().numpy()


def test_pack_and_pad_round_trip_against_numpy():
    rng = np.random.default_rng(0)
    lengths = [3, 5, 1, 4]
    x = rng.standard_normal((4, 5, 2))
    p = pack_padded_sequence(tl.tensor(x), lengths, batch_first=True, enforce_sorted=False)
    order = np.argsort(-np.array(lengths), kind="stable")
    want = np.concatenate(
        [x[order][[b for b in range(4) if lengths[order[b]] > t], t] for t in range(5)]
    )
    np.testing.assert_array_equal(A(p.data), want)
    assert p.batch_sizes.tolist() == [4, 3, 3, 2, 1]
    assert p.sorted_indices.tolist() == order.tolist()
    padded, lens = pad_packed_sequence(p, batch_first=True, padding_value=-7.0, total_length=6)
    assert lens.tolist() == lengths and padded.shape == (4, 6, 2)
    for b, n in enumerate(lengths):
        np.testing.assert_array_equal(A(padded)[b, :n], x[b, :n])
        assert np.all(A(padded)[b, n:] == -7.0)
    seqs = [tl.tensor(x[b, :n]) for b, n in enumerate(lengths)]
    assert all(
        np.array_equal(A(u), A(s))
        for u, s in zip(unpack_sequence(pack_sequence(seqs, False)), seqs)
    )
    with pytest.raises(ValueError, match="decreasing"):
        pack_padded_sequence(tl.tensor(x), lengths, batch_first=True)
    with pytest.raises(ValueError, match="total_length"):
        pad_packed_sequence(p, total_length=3)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_rnn_on_packed_input_matches_each_sequence_alone(cls, bidirectional):
    rng = np.random.default_rng(1)
    tl.manual_seed(0)
    rnn = cls(3, 4, num_layers=2, bidirectional=bidirectional, batch_first=True).double()
    lengths = [2, 5, 3]
    x = rng.standard_normal((3, 5, 3))
    packed = pack_padded_sequence(tl.tensor(x), lengths, batch_first=True, enforce_sorted=False)
    out, state = rnn(packed)
    assert isinstance(out, PackedSequence)
    padded, lens = pad_packed_sequence(out, batch_first=True)
    h_n = state[0] if cls is nn.LSTM else state
    for b, n in enumerate(lengths):
        alone_out, alone_state = rnn(tl.tensor(x[b, :n]))  # unbatched (L, I): no padding at all
        alone_h = alone_state[0] if cls is nn.LSTM else alone_state
        np.testing.assert_allclose(A(padded)[b, :n], A(alone_out), atol=1e-12)
        assert np.all(A(padded)[b, n:] == 0)
        np.testing.assert_allclose(A(h_n)[:, b], A(alone_h), atol=1e-12)
        if cls is nn.LSTM:
            np.testing.assert_allclose(A(state[1])[:, b], A(alone_state[1]), atol=1e-12)
    # an initial state in the caller's batch order is used per sequence
    dirs = 2 if bidirectional else 1
    h0 = tl.tensor(rng.standard_normal((2 * dirs, 3, 4)))
    hx = (h0, h0 * 0.5) if cls is nn.LSTM else h0
    _, state = rnn(packed, hx)
    b = 0
    alone_hx = (h0[:, b], h0[:, b] * 0.5) if cls is nn.LSTM else h0[:, b]
    _, alone_state = rnn(tl.tensor(x[b, : lengths[b]]), alone_hx)
    got = state[0] if cls is nn.LSTM else state
    want = alone_state[0] if cls is nn.LSTM else alone_state
    np.testing.assert_allclose(A(got)[:, b], A(want), atol=1e-12)
    # gradients flow to the inputs of the real steps only
    xt = tl.tensor(x, requires_grad=True)
    out, _ = rnn(pack_padded_sequence(xt, lengths, batch_first=True, enforce_sorted=False))
    out.data.sum().backward()
    g = A(xt.grad)
    assert np.all(g[0, 2:] == 0) and np.all(g[2, 3:] == 0) and np.abs(g[1]).sum() > 0
