"""BatchNorm and LayerNorm against numpy references; running statistics; gradchecks."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def np_bn_train(x, gamma, beta, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(
        shape
    ) + beta.reshape(shape)
    m = x.size // x.shape[1]
    return y, mean, var * m / (m - 1)


@pytest.mark.parametrize(
    "cls,shape",
    [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)), (nn.BatchNorm2d, (2, 3, 4, 5))],
)
def test_batchnorm_train_and_running_stats(cls, shape):
    rng = np.random.default_rng(0)
    bn = cls(3, momentum=0.2, dtype=tl.float64)
    with tl.no_grad():
        bn.weight.copy_(tl.tensor(rng.standard_normal(3)))
        bn.bias.copy_(tl.tensor(rng.standard_normal(3)))
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(3):
        x = rng.standard_normal(shape) * 2 + 1
        y = bn(tl.tensor(x))
        ref, mean, uvar = np_bn_train(x, bn.weight.detach().numpy(), bn.bias.detach().numpy(), 1e-5)
        np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-10, atol=1e-12)
        rm, rv = 0.8 * rm + 0.2 * mean, 0.8 * rv + 0.2 * uvar
        np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-12)
        np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-12)
        assert bn.num_batches_tracked.item() == step + 1
    bn.eval()
    x = rng.standard_normal(shape)
    s = (1, -1) + (1,) * (len(shape) - 2)
    ref = (x - rm.reshape(s)) / np.sqrt(rv.reshape(s) + 1e-5) * bn.weight.detach().numpy().reshape(
        s
    ) + bn.bias.detach().numpy().reshape(s)
    np.testing.assert_allclose(bn(tl.tensor(x)).to_numpy(), ref, rtol=1e-10)
    assert bn.num_batches_tracked.item() == 3  # eval does not count


def test_batchnorm_cumulative_average_when_momentum_none():
    bn = nn.BatchNorm1d(2, momentum=None, dtype=tl.float64)
    xs = [np.random.default_rng(i).standard_normal((5, 2)) for i in range(3)]
    for x in xs:
        bn(tl.tensor(x))
    np.testing.assert_allclose(
        bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], axis=0), rtol=1e-12
    )
    np.testing.assert_allclose(
        bn.running_var.numpy(), np.mean([x.var(0, ddof=1) for x in xs], axis=0), rtol=1e-12
    )


def test_batchnorm_buffers_and_state_dict():
    bn = nn.BatchNorm2d(4)
    assert list(bn.state_dict()) == [
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    assert bn.num_batches_tracked.dtype is tl.int64
    bn2 = nn.BatchNorm2d(4, affine=False, track_running_stats=False)
    assert list(bn2.state_dict()) == []
    y = bn2.eval()(tl.randn(3, 4, 2, 2))  # no running stats: batch statistics even in eval
    np.testing.assert_allclose(y.to_numpy().mean(axis=(0, 2, 3)), 0, atol=1e-5)
    assert bn.to(tl.float64).num_batches_tracked.dtype is tl.int64


def test_batchnorm_errors():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(tl.randn(1, 3))
    with pytest.raises(ValueError, match="2D or 3D"):
        nn.BatchNorm1d(3)(tl.randn(2, 3, 4, 5))
    with pytest.raises(tl.ShapeError, match="channels"):
        nn.BatchNorm2d(3)(tl.randn(2, 4, 3, 3))


def test_batchnorm_gradcheck_train_mode():
    x = tl.randn(4, 2, 3, dtype=tl.float64, requires_grad=True)
    w = tl.randn(2, dtype=tl.float64, requires_grad=True)
    b = tl.randn(2, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    x4 = tl.randn(2, 2, 2, 3, dtype=tl.float64, requires_grad=True)
    bn = nn.BatchNorm2d(2, dtype=tl.float64)
    assert tl.gradcheck(lambda x: bn(x), (x4,))
    bn.eval()
    assert tl.gradcheck(lambda x: bn(x), (x4,))


def test_layernorm_matches_numpy_and_gradcheck():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4))
    ln = nn.LayerNorm((3, 4), dtype=tl.float64)
    with tl.no_grad():
        ln.weight.copy_(tl.tensor(rng.standard_normal((3, 4))))
        ln.bias.copy_(tl.tensor(rng.standard_normal((3, 4))))
    mu = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * ln.weight.detach().numpy() + ln.bias.detach().numpy()
    np.testing.assert_allclose(ln(tl.tensor(x)).to_numpy(), ref, rtol=1e-10, atol=1e-12)
    xt = tl.tensor(x[:, :2, :3].copy(), requires_grad=True)
    ln2 = nn.LayerNorm(3, dtype=tl.float64)
    assert tl.gradcheck(lambda x, w, b: F.layer_norm(x, (3,), w, b), (xt, ln2.weight, ln2.bias))
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)"
