"""Adaptive max pooling, unfold/fold and gumbel_softmax against numpy definitions."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def np_adaptive_max(x, sizes):
    nd = len(sizes)
    spatial = x.shape[-nd:]
    out = np.empty(x.shape[:-nd] + tuple(sizes))
    for idx in np.ndindex(*sizes):
        sl = tuple(
            slice((i * L) // m, -(-((i + 1) * L) // m)) for i, L, m in zip(idx, spatial, sizes)
        )
        out[(...,) + idx] = x[(...,) + sl].max(axis=tuple(range(-nd, 0)))
    return out


@pytest.mark.parametrize("size", [(1, 1), (2, 3), (3, 5), (7, 4), (None, 2)])
def test_adaptive_max_pool2d(size):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 5))
    sizes = tuple(s if o is None else o for s, o in zip((7, 5), size))
    np.testing.assert_array_equal(A(nn.AdaptiveMaxPool2d(size)(T(x))), np_adaptive_max(x, sizes))
    np.testing.assert_array_equal(
        A(F.adaptive_max_pool1d(T(x[:, :, 0]), 3)), np_adaptive_max(x[:, :, 0], (3,))
    )
    xt = T(x[:1, :1], True)
    F.adaptive_max_pool2d(xt, (2, 2)).sum().backward()
    want = np.zeros(
        (7, 5)
    )  # each bin's maximum gets gradient 1 (bins may overlap: then it adds up)
    for i in range(2):
        for j in range(2):
            r0, r1, c0, c1 = (
                (i * 7) // 2,
                -(-((i + 1) * 7) // 2),
                (j * 5) // 2,
                -(-((j + 1) * 5) // 2),
            )
            block = x[0, 0, r0:r1, c0:c1]
            r, c = np.unravel_index(np.argmax(block), block.shape)
            want[r0 + r, c0 + c] += 1
    np.testing.assert_array_equal(A(xt.grad)[0, 0], want)
    with pytest.raises(NotImplementedError):
        nn.AdaptiveMaxPool2d(2, return_indices=True)(T(x))


def np_unfold(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.empty((n, c * k[0] * k[1], oh * ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[
                :,
                :,
                i * s[0] : i * s[0] + d[0] * (k[0] - 1) + 1 : d[0],
                j * s[1] : j * s[1] + d[1] * (k[1] - 1) + 1 : d[1],
            ]
            cols[:, :, i * ow + j] = patch.reshape(n, -1)
    return cols


@pytest.mark.parametrize(
    "k, d, p, s",
    [
        ((2, 2), (1, 1), (0, 0), (1, 1)),
        ((3, 2), (1, 2), (1, 0), (2, 1)),
        ((2, 3), (2, 1), (1, 2), (1, 3)),
    ],
)
def test_unfold_and_fold_are_adjoint_and_match_numpy(k, d, p, s):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 7))
    cols = np_unfold(x, k, d, p, s)
    np.testing.assert_allclose(A(nn.Unfold(k, d, p, s)(T(x))), cols, atol=1e-12)
    c = rng.standard_normal(cols.shape)
    folded = A(nn.Fold((6, 7), k, d, p, s)(T(c)))
    assert folded.shape == x.shape
    # <unfold(x), c> == <x, fold(c)>: fold is the adjoint of unfold
    assert abs((cols * c).sum() - (x * folded).sum()) < 1e-9
    assert tl.gradcheck(lambda t: F.fold(t, (6, 7), k, d, p, s), (T(c[:1], True),))


def test_gumbel_softmax():
    tl.manual_seed(0)
    logits = T(np.log([0.1, 0.6, 0.3]))
    draws = np.stack([A(F.gumbel_softmax(logits, tau=0.5, hard=True)) for _ in range(3000)])
    assert np.all(draws.sum(1) == 1) and set(np.unique(draws)) == {0.0, 1.0}
    np.testing.assert_allclose(
        draws.mean(0), [0.1, 0.6, 0.3], atol=0.03
    )  # Gumbel-max samples the softmax
    soft = A(F.gumbel_softmax(T(np.zeros((5, 4))), tau=2.0))
    np.testing.assert_allclose(soft.sum(-1), 1.0) and np.all(soft > 0)
    lg = T(np.zeros((2, 3)), True)
    tl.manual_seed(1)
    y = F.gumbel_softmax(lg, hard=True, dim=0)
    assert np.all(A(y).sum(0) == 1)
    (
        y * T(np.arange(6.0).reshape(2, 3))
    ).sum().backward()  # straight-through: the soft sample's gradient
    assert lg.grad is not None and np.abs(A(lg.grad)).sum() > 0
