import numpy as np
import pytest

import torchlight as tl
from torchlight.data import DataLoader, TensorDataset, synthetic


@pytest.mark.parametrize("name", synthetic.NAMES)
def test_shapes_dtypes_and_determinism(name):
    ds = getattr(synthetic, name)(n=101, seed=3)
    assert isinstance(ds, TensorDataset) and len(ds) == 101
    x, y = ds.tensors
    assert x.shape == (101, 2) and x.dtype == tl.float32
    assert y.shape == (101,) and y.dtype == tl.int64
    assert set(y.tolist()) <= {0, 1}
    again = getattr(synthetic, name)(n=101, seed=3).tensors
    assert again[0].tolist() == x.tolist() and again[1].tolist() == y.tolist()
    assert getattr(synthetic, name)(n=101, seed=4).tensors[0].tolist() != x.tolist()


@pytest.mark.parametrize("name", synthetic.NAMES)
def test_both_classes_present(name):
    _, y = synthetic.make_arrays(name, 400, seed=0)
    assert 0 < y.sum() < 400


@pytest.mark.parametrize(
    "name, rule",
    [
        ("simple", lambda x: x[:, 0] < 0.5),
        ("diag", lambda x: x[:, 0] + x[:, 1] < 0.5),
        ("split", lambda x: (x[:, 0] < 0.2) | (x[:, 0] > 0.8)),
        ("xor", lambda x: (x[:, 0] < 0.5) != (x[:, 1] < 0.5)),
        ("circle", lambda x: ((x - 0.5) ** 2).sum(1) > 0.1),
    ],
)
def test_labels_follow_the_documented_rule(name, rule):
    x, y = synthetic.make_arrays(name, 500, seed=1)
    assert ((x >= 0) & (x <= 1)).all()
    np.testing.assert_array_equal(y, rule(x.astype(np.float64)).astype(np.int64))


def test_balanced_sets_and_noise():
    for name in ("spiral", "moons"):
        _, y = synthetic.make_arrays(name, 201, seed=0)
        assert y.sum() in (100, 101)
    clean, _ = synthetic.make_arrays("moons", 50, seed=0, noise=0.0)
    noisy, _ = synthetic.make_arrays("moons", 50, seed=0, noise=0.3)
    assert not np.allclose(clean, noisy)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown synthetic dataset"):
        synthetic.make_arrays("swirl")
    with pytest.raises(ValueError):
        synthetic.make_arrays("xor", n=0)
    with pytest.raises(ValueError):
        synthetic.make_arrays("moons", noise=-1.0)


def test_feeds_a_loader():
    xb, yb = next(iter(DataLoader(synthetic.xor(64, seed=0), batch_size=16, shuffle=True, seed=0)))
    assert xb.shape == (16, 2) and yb.shape == (16,)
