"""``recurrent_layer``: a GRU or LSTM layer over a whole sequence as one autograd node, against a
numpy re-derivation of the forward recursion, finite differences (``gradcheck``) and the
step-by-step graph of fused cells it replaces; both directions, strided inputs, bad input. The
tests of an unpacked layer (``path``) run twice: through the backend's ``cell_sequence``
capability (all steps in one call) and with it hidden, through the core's loop of one cell call
per step."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.functions.recurrent import (
    gru_cell_gates,
    lstm_cell_gates,
    recurrent_layer,
)

rng = np.random.default_rng(5)
T, N, H = 4, 3, 2
GATES = {"gru": 3, "lstm": 4}


def _sig(v):
    return 0.5 * (1 + np.tanh(v / 2))


def _np_layer(kind, gi, h, c, w, b, reverse, sizes=None):
    """Every step's ``h`` (and ``c``) in time order, from PyTorch's gate equations; with
    ``sizes`` (a packed batch) rows from ``sizes[t]`` on keep their state through step ``t``."""
    hs, cs = [None] * T, [None] * T
    for t in reversed(range(T)) if reverse else range(T):
        h_prev, c_prev = h, c
        gh = h @ w.T + b
        if kind == "gru":
            r = _sig(gi[t, :, :H] + gh[:, :H])
            z = _sig(gi[t, :, H : 2 * H] + gh[:, H : 2 * H])
            n = np.tanh(gi[t, :, 2 * H :] + r * gh[:, 2 * H :])
            h = (1 - z) * n + z * h
        else:
            a = gi[t] + gh
            i, f, o = _sig(a[:, :H]), _sig(a[:, H : 2 * H]), _sig(a[:, 3 * H :])
            c = f * c + i * np.tanh(a[:, 2 * H : 3 * H])
            h = o * np.tanh(c)
        if sizes is not None:
            keep = np.arange(N)[:, None] >= sizes[t]
            h = np.where(keep, h_prev, h)
            c = None if c is None else np.where(keep, c_prev, c)
        hs[t], cs[t] = h, c
    return np.stack(hs), (np.stack(cs) if kind == "lstm" else None)


def _inputs(kind, dtype=tl.float64):
    g = GATES[kind] * H
    # gi arrives as a strided view (every other column of a wider leaf), as a projection of a
    # batch_first input transposed to time-major would
    wide = tl.tensor(rng.standard_normal((T, N, 2 * g)), dtype=dtype, requires_grad=True)
    h0 = tl.tensor(rng.standard_normal((N, H)), dtype=dtype, requires_grad=True)
    c0 = tl.tensor(rng.standard_normal((N, H)), dtype=dtype, requires_grad=True)
    w = tl.tensor(rng.standard_normal((g, H)), dtype=dtype, requires_grad=True)
    b = tl.tensor(rng.standard_normal(g), dtype=dtype, requires_grad=True)
    return wide, h0, (c0 if kind == "lstm" else None), w, b


def _stepwise(kind, gi, h, c, w, b, reverse):
    """The graph the layer replaces: one linear and one fused cell per step."""
    hs, cs = [None] * T, [None] * T
    for t in reversed(range(T)) if reverse else range(T):
        gh = h @ w.T + b
        if kind == "gru":
            h = gru_cell_gates(gi[t], gh, h)
        else:
            h, c = lstm_cell_gates(gi[t], gh, c)
        hs[t], cs[t] = h, c
    return tl.stack(hs), (tl.stack(cs) if kind == "lstm" else None)


@pytest.fixture(params=["whole sequence", "step loop"])
def path(request, monkeypatch):
    """Runs a test through the default backend's ``cell_sequence`` and again without it."""
    be = tl.ones(1).backend
    assert "cell_sequence" in be.capabilities
    if request.param == "step loop":
        monkeypatch.setattr(be, "capabilities", be.capabilities - {"cell_sequence"})
    return request.param


def _split(kind, states, reverse):
    out = states[:T, 0] if reverse else states[1:, 0]
    return out, (states[:T, 1] if reverse else states[1:, 1]) if kind == "lstm" else None


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_forward_matches_numpy_and_keeps_the_initial_state(kind, reverse, path):
    wide, h0, c0, w, b = _inputs(kind)
    gi = wide[:, :, ::2]
    states = recurrent_layer(kind, gi, h0, c0, w, b, reverse)
    assert states.shape == (T + 1, 1 if kind == "gru" else 2, N, H)
    hs, cs = _split(kind, states, reverse)
    want_h, want_c = _np_layer(
        kind,
        gi.detach().numpy(),
        h0.detach().numpy(),
        None if c0 is None else c0.detach().numpy(),
        w.detach().numpy(),
        b.detach().numpy(),
        reverse,
    )
    np.testing.assert_allclose(hs.detach().numpy(), want_h, rtol=1e-12, atol=1e-12)
    if kind == "lstm":
        np.testing.assert_allclose(cs.detach().numpy(), want_c, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(
        states[T if reverse else 0, 0].detach().numpy(), h0.detach().numpy()
    )


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_gradcheck(kind, reverse, path):
    wide, h0, c0, w, b = _inputs(kind)

    def f(wide, h0, w, b, *c):
        states = recurrent_layer(kind, wide[:, :, ::2], h0, c[0] if c else None, w, b, reverse)
        hs, cs = _split(kind, states, reverse)
        # weigh every step's output and the final states differently, so each path counts
        loss = (hs * tl.arange(1, T + 1, dtype=hs.dtype).reshape(T, 1, 1)).sum()
        loss = loss + (states[T if reverse else 0] ** 2).sum()  # the initial state's slot too
        return loss if cs is None else loss + (cs[0 if reverse else -1] * 3).sum()

    args = (wide, h0, w, b) + ((c0,) if c0 is not None else ())
    assert tl.gradcheck(f, args)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_gradients_equal_the_stepwise_graph(kind, path):
    wide, h0, c0, w, b = _inputs(kind)
    gi = wide[:, :, ::2]
    leaves = [x for x in (wide, h0, c0, w, b) if x is not None]
    seeds = tl.tensor(rng.standard_normal((T, N, H)))

    hs, _ = _split(kind, recurrent_layer(kind, gi, h0, c0, w, b), False)
    (hs * seeds).sum().backward()
    fused = [x.grad.detach().numpy().copy() for x in leaves]
    for x in leaves:
        x.grad = None
    hs, _ = _stepwise(kind, wide[:, :, ::2], h0, c0, w, b, False)
    (hs * seeds).sum().backward()
    for got, x in zip(fused, leaves):
        np.testing.assert_allclose(got, x.grad.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_without_bias_and_without_weight_gradients(path):
    wide, h0, _, w, _ = _inputs("gru")
    w.requires_grad = False
    states = recurrent_layer("gru", wide[:, :, ::2], h0, None, w)
    states[1:].sum().backward()
    assert w.grad is None and wide.grad is not None and h0.grad is not None
    want, _ = _np_layer(
        "gru",
        wide[:, :, ::2].detach().numpy(),
        h0.detach().numpy(),
        None,
        w.detach().numpy(),
        0.0,
        False,
    )
    np.testing.assert_allclose(states[1:, 0].detach().numpy(), want, rtol=1e-12)


def test_twice_differentiating_is_refused():
    wide, h0, _, w, b = _inputs("gru")
    out = recurrent_layer("gru", wide[:, :, ::2], h0, None, w, b)
    with pytest.raises(NotImplementedError, match="create_graph"):
        out.sum().backward(create_graph=True)


def test_bad_input_is_explained():
    wide, h0, c0, w, b = _inputs("lstm")
    gi = wide[:, :, ::2]
    with pytest.raises(ValueError, match="kind must be 'gru' or 'lstm'"):
        recurrent_layer("rnn", gi, h0, c0, w, b)
    with pytest.raises(ValueError, match="c0 is needed"):
        recurrent_layer("lstm", gi, h0, None, w, b)
    with pytest.raises(tl.ShapeError, match=r"gi must have shape \(4, 3, 6\)"):
        recurrent_layer("gru", gi, h0, None, w[:6], b[:6])
    with pytest.raises(tl.ShapeError, match=r"w_hh must have shape \(8, 2\)"):
        recurrent_layer("lstm", gi, h0, c0, w[:, :1], b)
    with pytest.raises(TypeError, match="cast with"):
        recurrent_layer("lstm", gi, h0, c0, w.float(), b)
    with pytest.raises(tl.ShapeError, match=r"gi must be \(T, N, G·H\)"):
        recurrent_layer("lstm", gi[0], h0, c0, w, b)


PACKED = [(3, 3, 2, 1), (3, 1, 1, 0), (2, 2, 2, 2)]  # never increasing; the last: none full


@pytest.mark.parametrize("sizes", PACKED)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_packed_batch_forward_matches_numpy(kind, reverse, sizes):
    """A packed batch: each step runs on the sequences that have it, the others carry their
    state through (forward: the last real state reaches slot T; reverse: h0 until the
    sequence's own last step)."""
    wide, h0, c0, w, b = _inputs(kind)
    gi = wide[:, :, ::2]
    states = recurrent_layer(kind, gi, h0, c0, w, b, reverse, batch_sizes=list(sizes))
    hs, cs = _split(kind, states, reverse)
    np_args = [gi, h0, c0, w, b]
    want_h, want_c = _np_layer(
        kind, *(None if v is None else v.detach().numpy() for v in np_args), reverse, sizes
    )
    np.testing.assert_allclose(hs.detach().numpy(), want_h, rtol=1e-12, atol=1e-12)
    if kind == "lstm":
        np.testing.assert_allclose(cs.detach().numpy(), want_c, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sizes", PACKED[:2])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_packed_batch_gradcheck_and_no_gradient_at_missing_steps(kind, reverse, sizes):
    wide, h0, c0, w, b = _inputs(kind)

    def f(wide, h0, w, b, *c):
        states = recurrent_layer(
            kind, wide[:, :, ::2], h0, c[0] if c else None, w, b, reverse, batch_sizes=sizes
        )
        hs, cs = _split(kind, states, reverse)
        loss = (hs * tl.arange(1, T + 1, dtype=hs.dtype).reshape(T, 1, 1)).sum()
        loss = loss + (states[0 if reverse else T] ** 2).sum()  # the final states
        return loss if cs is None else loss + (cs[0 if reverse else -1] * 3).sum()

    args = (wide, h0, w, b) + ((c0,) if c0 is not None else ())
    assert tl.gradcheck(f, args)
    f(*args).backward()
    g = wide.grad.numpy()
    for t, rows in enumerate(sizes):
        assert np.all(g[t, rows:] == 0), f"gradient reached step {t} of a finished sequence"
        assert np.all(np.abs(g[t, :rows, ::2]).sum(-1) > 0)


def test_packed_batch_sizes_are_checked():
    wide, h0, _, w, b = _inputs("gru")
    gi = wide[:, :, ::2]
    for bad in ([3, 3, 2], [3, 1, 2, 1], [4, 3, 2, 1], [3, 2, 1, -1]):
        with pytest.raises(ValueError, match="batch_sizes must give"):
            recurrent_layer("gru", gi, h0, None, w, b, batch_sizes=bad)
