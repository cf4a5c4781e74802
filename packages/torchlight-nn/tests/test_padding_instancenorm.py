"""Reflect/replicate/circular padding against numpy.pad, convolution padding modes, and instance
norm against a numpy re-derivation."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F

NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(1, 2), (2, 0, 1, 3), (0, 3, 2, 2)])
def test_pad_modes_against_numpy(mode, pad):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    widths = [(0, 0)] * 4
    for k in range(len(pad) // 2):
        widths[3 - k] = (pad[2 * k], pad[2 * k + 1])
    np.testing.assert_array_equal(
        A(F.pad(T(x), pad, mode=mode)), np.pad(x, widths, mode=NP_MODE[mode])
    )
    xt = T(x.transpose(0, 1, 3, 2).copy()).transpose(2, 3)  # a strided view
    np.testing.assert_array_equal(
        A(F.pad(xt, pad, mode=mode)), np.pad(x, widths, mode=NP_MODE[mode])
    )
    assert tl.gradcheck(lambda a: F.pad(a, pad, mode=mode), (T(x[:1, :1], True),))


def test_padding_modules_and_errors():
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    np.testing.assert_array_equal(
        A(nn.ReflectionPad2d((1, 2, 2, 1))(T(x))),
        np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="reflect"),
    )
    np.testing.assert_array_equal(
        A(nn.ReplicationPad1d(3)(T(x[0]))), np.pad(x[0], ((0, 0), (0, 0), (3, 3)), "edge")
    )
    np.testing.assert_array_equal(
        A(nn.CircularPad2d(1)(T(x))), np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), "wrap")
    )
    with pytest.raises(ValueError, match="reflect"):
        nn.ReflectionPad1d(4)(T(x))  # reflection needs padding < size
    with pytest.raises(ValueError, match="mode"):
        F.pad(T(x), (1, 1), mode="mirror")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_mode(mode):
    rng = np.random.default_rng(1)
    conv = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    x = rng.standard_normal((1, 2, 5, 6))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=NP_MODE[mode])
    want = A(F.conv2d(T(xp), conv.weight, conv.bias))
    np.testing.assert_allclose(A(conv(T(x))), want, atol=1e-12)
    assert conv(T(x)).shape == (1, 3, 5, 8)
    c1 = nn.Conv1d(1, 1, 3, padding=1, padding_mode=mode).double()
    assert c1(T(rng.standard_normal((2, 1, 7)))).shape == (2, 1, 7)
    with pytest.raises(ValueError):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")


def test_instance_norm_values_and_running_stats():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5, 6)) * 2 + 1
    mu = x.mean((2, 3), keepdims=True)
    var = x.var((2, 3), keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(A(nn.InstanceNorm2d(4)(T(x))), ref, atol=1e-10)
    m = nn.InstanceNorm2d(4, affine=True, track_running_stats=True).double()
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    with tl.no_grad():
        m.weight.copy_(T(w))
        m.bias.copy_(T(b))
    np.testing.assert_allclose(A(m(T(x))), ref * w[:, None, None] + b[:, None, None], atol=1e-10)
    unbiased = x.reshape(3, 4, -1).var(-1, ddof=1).mean(0)
    np.testing.assert_allclose(A(m.running_mean), 0.1 * x.mean((2, 3)).mean(0), atol=1e-12)
    np.testing.assert_allclose(A(m.running_var), 0.9 + 0.1 * unbiased, atol=1e-12)
    assert m.num_batches_tracked.item() == 1
    assert sorted(m.state_dict()) == [
        "bias",
        "num_batches_tracked",
        "running_mean",
        "running_var",
        "weight",
    ]
    m.eval()  # now the running statistics normalise
    rm, rv = A(m.running_mean), A(m.running_var)
    want = (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5) * w[:, None, None] + b[
        :, None, None
    ]
    np.testing.assert_allclose(A(m(T(x))), want, atol=1e-10)
    assert nn.InstanceNorm1d(4).state_dict() == {}
    assert nn.InstanceNorm1d(4)(T(x[0, :, 0])).shape == (4, 6)  # unbatched (C, L)
    assert tl.gradcheck(lambda a: F.instance_norm(a), (T(x[:1, :2, :3, :3], True),))
