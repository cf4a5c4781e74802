"""Layout and indexing ops whose backward has two paths: straight on the backend's views when no graph is
recorded (a plain ``backward()``), and as recorded ops under ``create_graph=True``.

Each case is a linear map ``y = A x`` (unfold, cat, stack, roll, basic and advanced indexing,
``index_select``, ``gather``, ``embedding``, the rows' negative log-likelihood). With ``f(x) = ½ Σ w·y²`` the
gradient is ``Aᵀ(w ⊙ A x)``, computed here by hand in numpy (the oracle of the view path), and
the Hessian ``Aᵀ diag(w) A`` is constant, so the second derivative along ``v`` equals the
gradient at ``x = v``: the graph path's second backward must give it.
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.extension import nll_rows

RNG = np.random.default_rng(7)


def _windows(a, dim, size, step):
    """numpy's unfold: windows of ``size`` every ``step`` along ``dim``, as a new last axis."""
    count = (a.shape[dim] - size) // step + 1
    idx = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    return np.moveaxis(np.take(a, idx, axis=dim), dim + 1, -1)


def _unfold_adjoint(g, shape, dim, size, step):
    """Aᵀ g for the unfold: each window element added back to its position."""
    out = np.zeros(shape)
    count = g.shape[dim]
    for i in range(count):
        for k in range(size):
            src = np.take(np.take(g, k, axis=-1), i, axis=dim)
            target = [slice(None)] * len(shape)
            target[dim] = i * step + k
            out[tuple(target)] += src
    return out


# (name, forward on one input, forward in numpy, Aᵀ in numpy, input shape)
CASES = [
    (
        "unfold-overlapping",
        lambda x: x.unfold(1, 3, 1),
        lambda a: _windows(a, 1, 3, 1),
        lambda g, s: _unfold_adjoint(g, s, 1, 3, 1),
        (2, 6, 3),
    ),
    (
        "unfold-disjoint",
        lambda x: x.unfold(2, 2, 2),
        lambda a: _windows(a, 2, 2, 2),
        lambda g, s: _unfold_adjoint(g, s, 2, 2, 2),
        (2, 3, 6),
    ),
    (
        "unfold-gaps",
        lambda x: x.unfold(0, 2, 3),
        lambda a: _windows(a, 0, 2, 3),
        lambda g, s: _unfold_adjoint(g, s, 0, 2, 3),
        (8, 3),
    ),
    (
        "cat",
        lambda x: tl.cat([x[:, 1:], x, x[:, :1]], 1),
        lambda a: np.concatenate([a[:, 1:], a, a[:, :1]], 1),
        lambda g, s: _cat_adjoint(g),
        (3, 4),
    ),
    (
        "stack",
        lambda x: tl.stack([x, x.t(), 2 * x], 1),
        lambda a: np.stack([a, a.T, 2 * a], 1),
        lambda g, s: g[:, 0] + g[:, 1].T + 2 * g[:, 2],
        (3, 3),
    ),
    (
        "roll",
        lambda x: x.roll((1, -2), (0, 1)),
        lambda a: np.roll(a, (1, -2), (0, 1)),
        lambda g, s: np.roll(g, (-1, 2), (0, 1)),
        (3, 5),
    ),
    (
        "basic-index",
        lambda x: x[1:, ::2],
        lambda a: a[1:, ::2],
        lambda g, s: _placed(g, s, (slice(1, None), slice(None, None, 2))),
        (3, 5),
    ),
    (
        "index_select",
        lambda x: x.index_select(1, tl.tensor([4, 0, 4, 2])),
        lambda a: a[:, [4, 0, 4, 2]],
        lambda g, s: _added(g, s, (slice(None), [4, 0, 4, 2])),
        (3, 5),
    ),
    (
        "gather",
        lambda x: x.gather(1, tl.tensor(GATHER)),
        lambda a: np.take_along_axis(a, np.array(GATHER), 1),
        lambda g, s: _added(g, s, (np.arange(3)[:, None], np.array(GATHER))),
        (3, 5),
    ),
    (
        "gather-one-column",  # one index per row: no position can repeat
        lambda x: x.gather(1, tl.tensor([[4], [0], [4]])),
        lambda a: a[[0, 1, 2], [4, 0, 4]][:, None],
        lambda g, s: _added(g[:, 0], s, ([0, 1, 2], [4, 0, 4])),
        (3, 5),
    ),
    (
        "nll-rows",
        lambda x: nll_rows(x, tl.tensor([4, 0, 4])),
        lambda a: -a[[0, 1, 2], [4, 0, 4]],
        lambda g, s: _added(-g, s, ([0, 1, 2], [4, 0, 4])),
        (3, 5),
    ),
    (
        "nll-rows-weighted-strided",  # x.t() is a non-contiguous (3, 5) view
        lambda x: nll_rows(x.t(), tl.tensor([1, 0, 1]), tl.tensor([0.5, 2.0, 0.0], dtype=x.dtype)),
        lambda a: -a.T[[0, 1, 2], [1, 0, 1]] * [0.5, 2.0, 0.0],
        lambda g, s: _added(-g * [0.5, 2.0, 0.0], s[::-1], ([0, 1, 2], [1, 0, 1])).T,
        (5, 3),
    ),
    (
        "advanced-index",
        lambda x: x[tl.tensor([2, 0, 2]), tl.tensor([1, 3, 1])],
        lambda a: a[[2, 0, 2], [1, 3, 1]],
        lambda g, s: _added(g, s, ([2, 0, 2], [1, 3, 1])),
        (3, 5),
    ),
    (
        "embedding",
        lambda x: tl.embedding(tl.tensor([[1, 1], [0, 2]]), x),
        lambda a: a[np.array([[1, 1], [0, 2]])],
        lambda g, s: _added(g, s, (np.array([[1, 1], [0, 2]]),)),
        (3, 5),
    ),
    (
        "embedding-strided-index",  # the index tensor is a transposed (non-contiguous) view
        lambda x: tl.embedding(tl.tensor([[1, 0, 2], [1, 2, 2]]).t(), x),
        lambda a: a[np.array([[1, 0, 2], [1, 2, 2]]).T],
        lambda g, s: _added(g, s, (np.array([[1, 0, 2], [1, 2, 2]]).T,)),
        (3, 5),
    ),
]
GATHER = [[0, 0, 4], [3, 1, 3], [2, 2, 2]]  # repeated positions: their gradients add up


def _placed(g, shape, index):
    out = np.zeros(shape)
    out[index] = g
    return out


def _added(g, shape, index):
    out = np.zeros(shape)
    np.add.at(out, index, g)
    return out


def _cat_adjoint(g):
    out = np.zeros((3, 4))
    out[:, 1:] += g[:, :3]
    out += g[:, 3:7]
    out[:, :1] += g[:, 7:]
    return out


def _loss(fn, x, w):
    y = fn(x)
    return (w * y * y).sum() / 2


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_view_path_and_graph_path_agree_with_the_hand_gradient(case):
    _, fn, fn_np, adjoint, shape = case
    a, v = RNG.normal(size=shape), RNG.normal(size=shape)
    w_np = RNG.uniform(0.5, 2.0, size=fn_np(a).shape)
    w = tl.tensor(w_np)
    want = adjoint(w_np * fn_np(a), shape)
    hessian_v = adjoint(w_np * fn_np(v), shape)  # f is quadratic: H v = grad f(v)

    x = tl.tensor(a, requires_grad=True)
    _loss(fn, x, w).backward()  # no graph recorded: the view path
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)

    x = tl.tensor(a, requires_grad=True)
    _loss(fn, x, w).backward(create_graph=True)  # recorded: the graph path
    g = x.grad
    assert g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    x.grad = None
    (g * tl.tensor(v)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), hessian_v, rtol=1e-12, atol=1e-12)


def test_unfold_gradient_on_a_strided_gradient():
    # the view path writes into windows of a fresh zero tensor from a non-contiguous gradient
    a = RNG.normal(size=(4, 7))
    x = tl.tensor(a, requires_grad=True)
    y = x.unfold(1, 3, 2)  # (4, 3, 3)
    g = RNG.normal(size=(3, 3, 4))
    y.backward(tl.tensor(g).permute(2, 0, 1))
    np.testing.assert_allclose(
        x.grad.numpy(), _unfold_adjoint(g.transpose(2, 0, 1), (4, 7), 1, 3, 2), atol=1e-12
    )
