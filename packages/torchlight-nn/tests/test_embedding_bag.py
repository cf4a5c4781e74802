"""EmbeddingBag against a numpy loop over the bags."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def A(t):
    return t.detach().numpy()


def np_bags(w, idx, starts, mode, psw=None, pad=None):
    ends = list(starts[1:]) + [len(idx)]
    out = []
    for s, e in zip(starts, ends):
        sel = [i for i in range(s, e) if pad is None or idx[i] != pad]
        rows = w[idx[sel]] * (psw[sel, None] if psw is not None else 1)
        if not sel:
            out.append(np.zeros(w.shape[1]))
        else:
            out.append({"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode])
    return np.stack(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_offsets_2d_and_padding(mode):
    rng = np.random.default_rng(0)
    bag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2).double()
    w = A(bag.weight)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2])
    starts = np.array([0, 4, 4, 8])  # the third bag is empty, the last holds only padding
    got = bag(tl.tensor(idx), tl.tensor(starts))
    np.testing.assert_allclose(A(got), np_bags(w, idx, starts, mode, pad=2), atol=1e-12)
    two_d = rng.integers(0, 10, (3, 4))
    got = bag(tl.tensor(two_d))
    np.testing.assert_allclose(
        A(got), np_bags(w, two_d.ravel(), np.arange(0, 12, 4), mode, pad=2), atol=1e-12
    )
    last = nn.EmbeddingBag(10, 3, mode=mode, include_last_offset=True).double()
    got = last(tl.tensor(idx), tl.tensor([0, 4, 9]))
    np.testing.assert_allclose(A(got), np_bags(A(last.weight), idx, [0, 4], mode), atol=1e-12)


def test_embedding_bag_per_sample_weights_and_gradient():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 2))
    idx, starts = np.array([0, 5, 5, 1]), np.array([0, 3])
    psw = rng.standard_normal(4)
    wt = tl.tensor(w, requires_grad=True)
    out = F.embedding_bag(
        tl.tensor(idx), wt, tl.tensor(starts), mode="sum", per_sample_weights=tl.tensor(psw)
    )
    np.testing.assert_allclose(A(out), np_bags(w, idx, starts, "sum", psw), atol=1e-12)
    out.sum().backward()
    want = np.zeros_like(w)
    np.add.at(want, idx, psw[:, None] * np.ones((1, 2)))
    np.testing.assert_allclose(A(wt.grad), want, atol=1e-12)
    assert tl.gradcheck(
        lambda m: F.embedding_bag(tl.tensor(idx), m, tl.tensor(starts), mode="max"),
        (tl.tensor(w, requires_grad=True),),
    )
    with pytest.raises(NotImplementedError):
        F.embedding_bag(
            tl.tensor(idx), wt, tl.tensor(starts), mode="mean", per_sample_weights=tl.tensor(psw)
        )
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(tl.tensor(idx), wt)
    pre = nn.EmbeddingBag.from_pretrained(tl.tensor(w))
    assert not pre.weight.requires_grad and pre.mode == "mean"
