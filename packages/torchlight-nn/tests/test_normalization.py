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


def _np_bn_grads(x, gamma, g, eps=1e-5):
    """The hand derivation of the train-mode gradient (the module docstring's formula), float64."""
    axes = (0,) + tuple(range(2, x.ndim))
    s = (1, -1) + (1,) * (x.ndim - 2)
    xc = x - x.mean(axis=axes, keepdims=True)
    r = 1 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    xhat = xc * r
    gh = g * gamma.reshape(s)
    dx = r * (
        gh - gh.mean(axis=axes, keepdims=True) - xhat * (gh * xhat).mean(axis=axes, keepdims=True)
    )
    return dx, (g * xhat).sum(axis=axes), g.sum(axis=axes)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_batchnorm_train_gradients_match_the_hand_derivation(shape, layout):
    """One node (BatchNormTraining) for the whole train-mode expression, on packed and permuted
    inputs, against the formula written out in numpy."""
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal(shape) * 3 + 2
    g_np = rng.standard_normal(shape)
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    if layout == "contiguous":
        x = tl.tensor(x_np, requires_grad=True)
        view = x
    else:  # the channels stored last, seen through a permutation (a strided input)
        order = (0,) + tuple(range(2, len(shape))) + (1,)
        x = tl.tensor(np.ascontiguousarray(x_np.transpose(order)), requires_grad=True)
        back = [order.index(k) for k in range(len(shape))]
        view = x.permute(*back)
    w, b = tl.tensor(gamma, requires_grad=True), tl.tensor(beta, requires_grad=True)
    y = F.batch_norm(view, None, None, w, b, training=True)
    assert y.grad_fn.__name__ == "BatchNormTraining"  # one node
    (y * tl.tensor(g_np)).sum().backward()
    dx, dw, db = _np_bn_grads(x_np, gamma, g_np)
    got = x.grad.numpy() if layout == "contiguous" else x.grad.permute(*back).numpy()
    np.testing.assert_allclose(got, dx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), db, rtol=1e-10)


def test_batchnorm_train_without_affine_or_with_weight_only():
    rng = np.random.default_rng(5)
    x_np, g_np = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2, 3))
    for gamma in (None, rng.standard_normal(2)):
        x = tl.tensor(x_np, requires_grad=True)
        w = None if gamma is None else tl.tensor(gamma, requires_grad=True)
        (F.batch_norm(x, None, None, w, None, training=True) * tl.tensor(g_np)).sum().backward()
        dx, dw, _ = _np_bn_grads(x_np, np.ones(2) if gamma is None else gamma, g_np)
        np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-9, atol=1e-12)
        if w is not None:
            np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-10)


def test_batchnorm_train_second_derivative_matches_finite_differences():
    """create_graph through the train-mode node: d/dx of Σ (∂L/∂x)² against central
    differences of the first gradient (computed in float64)."""
    rng = np.random.default_rng(6)
    x_np, c_np = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    gamma = np.array([1.5, -0.7])

    def first_grad(values):
        x = tl.tensor(values, requires_grad=True)
        y = F.batch_norm(x, None, None, tl.tensor(gamma), None, training=True)
        (y * tl.tensor(c_np)).sum().backward(create_graph=True)
        return x

    x = first_grad(x_np)
    penalty = (x.grad * x.grad).sum()
    gx = x.grad.detach().numpy().copy()
    x.grad = None
    penalty.backward()
    h, want = 1e-6, np.zeros_like(x_np)
    for i in np.ndindex(x_np.shape):
        up, down = x_np.copy(), x_np.copy()
        up[i] += h
        down[i] -= h
        fu, fd = first_grad(up).grad.detach().numpy(), first_grad(down).grad.detach().numpy()
        want[i] = ((fu * fu).sum() - (fd * fd).sum()) / (2 * h)
    np.testing.assert_allclose(gx, _np_bn_grads(x_np, gamma, c_np)[0], rtol=1e-9)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-7)


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
