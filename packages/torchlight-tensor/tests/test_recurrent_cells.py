"""``gru_cell_gates`` / ``lstm_cell_gates``: the fused cells against finite differences, a numpy
re-derivation of PyTorch's gate equations and the composite fallback a backend without the
``gru_cell`` / ``lstm_cell`` capabilities gets; gate blocks given as transposed or sliced views."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.backend.numpy import NumpyBackend
from torchlight.tensor.functions.recurrent import gru_cell_gates, lstm_cell_gates

rng = np.random.default_rng(11)
N, H = 4, 3


def _sig(v):
    return 0.5 * (1 + np.tanh(v / 2))


def _np_gru(gi, gh, h):
    r = _sig(gi[:, :H] + gh[:, :H])
    z = _sig(gi[:, H : 2 * H] + gh[:, H : 2 * H])
    n = np.tanh(gi[:, 2 * H :] + r * gh[:, 2 * H :])
    return (1 - z) * n + z * h


def _np_lstm(gi, gh, c):
    a = gi + gh
    i, f, g, o = (
        _sig(a[:, :H]),
        _sig(a[:, H : 2 * H]),
        np.tanh(a[:, 2 * H : 3 * H]),
        _sig(a[:, 3 * H :]),
    )
    c = f * c + i * g
    return o * np.tanh(c), c


def _leaf(shape, layout, dtype=tl.float64):
    """A leaf and the view of it that the cell gets: packed, transposed or step-sliced."""
    r, c = shape
    if layout == "contiguous":
        return tl.tensor(rng.standard_normal((r, c)), dtype=dtype, requires_grad=True), lambda t: t
    if layout == "permuted":
        return tl.tensor(
            rng.standard_normal((c, r)), dtype=dtype, requires_grad=True
        ), lambda t: t.t()
    big = tl.tensor(rng.standard_normal((r + 1, 2 * c)), dtype=dtype, requires_grad=True)
    return big, lambda t: t[1:, ::2]


LAYOUTS = ["contiguous", "permuted", "sliced"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gru_gradcheck_and_oracle(layout):
    (a, va), (b, vb), (h, vh) = (
        _leaf((N, 3 * H), layout),
        _leaf((N, 3 * H), LAYOUTS[1]),
        _leaf((N, H), layout),
    )
    assert tl.gradcheck(lambda x, y, z: gru_cell_gates(va(x), vb(y), vh(z)), (a, b, h))
    got = gru_cell_gates(va(a), vb(b), vh(h)).detach().numpy()
    want = _np_gru(*(v(t).detach().numpy() for v, t in ((va, a), (vb, b), (vh, h))))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_lstm_gradcheck_and_oracle(layout):
    (a, va), (b, vb), (c, vc) = (
        _leaf((N, 4 * H), layout),
        _leaf((N, 4 * H), LAYOUTS[2]),
        _leaf((N, H), layout),
    )

    def f(x, y, z):  # both outputs, weighted differently, so a mix-up of dh' and dc' shows
        hn, cn = lstm_cell_gates(va(x), vb(y), vc(z))
        return hn - 2.0 * cn

    assert tl.gradcheck(f, (a, b, c))
    hn, cn = lstm_cell_gates(va(a), vb(b), vc(c))
    want_h, want_c = _np_lstm(*(v(t).detach().numpy() for v, t in ((va, a), (vb, b), (vc, c))))
    np.testing.assert_allclose(hn.detach().numpy(), want_h, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cn.detach().numpy(), want_c, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_fused_equals_composite(monkeypatch, cell):
    gates = 3 if cell == "gru" else 4
    gi = tl.tensor(rng.standard_normal((N, gates * H)) * 3, dtype=tl.float32, requires_grad=True)
    gh = tl.tensor(rng.standard_normal((N, gates * H)) * 3, dtype=tl.float32, requires_grad=True)
    s = tl.tensor(rng.standard_normal((N, H)), dtype=tl.float32, requires_grad=True)
    gs = [tl.tensor(rng.standard_normal((N, H)), dtype=tl.float32) for _ in range(2)]

    def run():
        for t in (gi, gh, s):
            t.grad = None
        if cell == "gru":
            outs = (gru_cell_gates(gi, gh, s),)
        else:
            outs = lstm_cell_gates(gi, gh, s)
        sum(((o * g).sum() for o, g in zip(outs, gs)), tl.tensor(0.0)).backward()
        return [o.detach().numpy().copy() for o in outs] + [
            t.grad.numpy().copy() for t in (gi, gh, s)
        ]

    fused = run()
    monkeypatch.setattr(
        NumpyBackend, "capabilities", NumpyBackend.capabilities - {"gru_cell", "lstm_cell"}
    )
    composite = run()
    for a, b in zip(fused, composite):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_saturated_gates_are_finite():
    big = tl.tensor(
        np.where(rng.standard_normal((N, 4 * H)) > 0, 500.0, -500.0),
        dtype=tl.float32,
        requires_grad=True,
    )
    h, c = lstm_cell_gates(big, big * 0, tl.ones(N, H))
    (h.sum() + c.sum()).backward()
    assert np.isfinite(h.detach().numpy()).all() and np.isfinite(big.grad.numpy()).all()
    g = gru_cell_gates(big[:, : 3 * H], big[:, : 3 * H] * 0, tl.ones(N, H))
    assert np.isfinite(g.detach().numpy()).all()


def test_bad_shapes_and_dtypes_are_explained():
    with pytest.raises(tl.ShapeError, match=r"gi must have shape \(4, 9\)"):
        gru_cell_gates(tl.zeros(4, 8), tl.zeros(4, 9), tl.zeros(4, 3))
    with pytest.raises(tl.ShapeError, match="2-D"):
        lstm_cell_gates(tl.zeros(4, 12), tl.zeros(4, 12), tl.zeros(3))
    with pytest.raises(TypeError, match="one float dtype"):
        lstm_cell_gates(tl.zeros(4, 12), tl.zeros(4, 12, dtype=tl.float64), tl.zeros(4, 3))
