"""Conv1d/Conv2d against a loop-based numpy reference, plus float64 gradchecks."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def np_conv2d(x, w, b, stride, padding, dilation, groups):
    """Direct definition: y[n,o,i,j] = b[o] + sum_{c,p,q} w[o,c,p,q] x_pad[n, g*Cg + c, i*s + p*d, j*s + q*d]."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    y = np.zeros((n, o, ho, wo))
    for oc in range(o):
        g = oc // og
        for i in range(ho):
            for j in range(wo):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * sh : i * sh + dh * (kh - 1) + 1 : dh,
                    j * sw : j * sw + dw * (kw - 1) + 1 : dw,
                ]
                y[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    if b is not None:
        y += b[None, :, None, None]
    return y


CASES = [
    dict(stride=1, padding=0, dilation=1, groups=1),
    dict(stride=2, padding=1, dilation=1, groups=1),
    dict(stride=1, padding=2, dilation=2, groups=1),
    dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
    dict(stride=1, padding=1, dilation=1, groups=4),
]


@pytest.mark.parametrize("kw", CASES)
def test_conv2d_matches_numpy(kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6))
    conv = nn.Conv2d(4, 8, (3, 2), bias=True, dtype=tl.float64, **kw)
    y = conv(tl.tensor(x))
    two = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    ref = np_conv2d(
        x,
        conv.weight.detach().numpy(),
        conv.bias.detach().numpy(),
        two(kw["stride"]),
        two(kw["padding"]),
        two(kw["dilation"]),
        kw["groups"],
    )
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-10, atol=1e-12)


def test_conv1d_matches_numpy_via_2d_reference():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 11))
    conv = nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2, dtype=tl.float64)
    y = conv(tl.tensor(x))
    ref = np_conv2d(
        x[:, :, None, :],
        conv.weight.detach().numpy()[:, :, None, :],
        conv.bias.detach().numpy(),
        (1, 2),
        (0, 2),
        (1, 2),
        2,
    )[:, :, 0, :]
    np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-10, atol=1e-12)


def test_conv_padding_same_and_valid():
    x = tl.randn(1, 2, 9, dtype=tl.float64)
    conv = nn.Conv1d(2, 3, 4, padding="same", dilation=2, dtype=tl.float64)
    y = conv(x)
    assert y.shape == (1, 3, 9)
    # 'same' with total padding 6 splits 3 left / 3 right
    ref = np_conv2d(
        x.numpy()[:, :, None, :],
        conv.weight.detach().numpy()[:, :, None, :],
        conv.bias.detach().numpy(),
        (1, 1),
        (0, 3),
        (1, 2),
        1,
    )[:, :, 0, :]
    np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-10)
    assert nn.Conv1d(2, 3, 4, padding="valid")(tl.randn(1, 2, 9)).shape == (1, 3, 6)
    with pytest.raises(ValueError):
        nn.Conv1d(2, 3, 4, padding="same", stride=2)


def test_conv_unbatched_and_no_bias():
    conv = nn.Conv2d(3, 5, 3, padding=1, bias=False)
    assert conv.bias is None
    assert [n for n, _ in conv.named_parameters()] == ["weight"]
    x = tl.randn(3, 6, 6)
    np.testing.assert_allclose(
        conv(x).to_numpy(), conv(x.unsqueeze(0)).squeeze(0).to_numpy(), rtol=1e-6
    )


@pytest.mark.parametrize("kw", [CASES[1], CASES[2], CASES[3]])
def test_conv2d_gradcheck(kw):
    tl.manual_seed(0)
    x = tl.randn(1, 4, 5, 4, dtype=tl.float64, requires_grad=True)
    w = tl.randn(4, 4 // kw["groups"], 2, 2, dtype=tl.float64, requires_grad=True)
    b = tl.randn(4, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(lambda x, w, b: F.conv2d(x, w, b, **kw), (x, w, b))


def test_conv1d_gradcheck():
    x = tl.randn(2, 2, 7, dtype=tl.float64, requires_grad=True)
    w = tl.randn(4, 1, 3, dtype=tl.float64, requires_grad=True)
    b = tl.randn(4, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2), (x, w, b)
    )


def test_conv_errors_name_the_problem():
    conv = nn.Conv2d(3, 4, 3)
    with pytest.raises(tl.ShapeError, match="3 input channels|channels"):
        conv(tl.randn(1, 2, 5, 5))
    with pytest.raises(tl.ShapeError, match="larger than the padded input"):
        conv(tl.randn(1, 3, 2, 2))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)


def test_conv_default_init_bounds():
    tl.manual_seed(0)
    conv = nn.Conv2d(8, 16, 3, groups=2)
    fan_in = 4 * 9
    bound = 1 / math.sqrt(fan_in)
    w = conv.weight.detach().numpy()
    assert w.shape == (16, 4, 3, 3)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(conv.bias.detach().numpy()).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound


def test_conv_repr():
    assert repr(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)) == (
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)"
    )
