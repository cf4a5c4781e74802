"""Transposed convolutions against their scatter definition (numpy loops), interpolate against
PyTorch's documented examples and scipy.ndimage, pixel shuffle, channel dropout and padding."""

import itertools

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def np_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation):
    """Scatter definition: y[n, g·O/g + o, p·s + j·d − pad] += x[n, g·C/g + c, p] · w[g·C/g + c, o, j]."""
    n, c, *S = x.shape
    _, og, *k = w.shape
    nd = len(S)
    out = [
        (S[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + output_padding[i] + 1
        for i in range(nd)
    ]
    y = np.zeros((n, og * groups, *out))
    cg = c // groups
    for ci in range(c):
        g = ci // cg
        for p in itertools.product(*[range(s) for s in S]):
            for j in itertools.product(*[range(kk) for kk in k]):
                pos = tuple(p[i] * stride[i] + j[i] * dilation[i] - padding[i] for i in range(nd))
                if all(0 <= pos[i] < out[i] for i in range(nd)):
                    idx = (slice(None), slice(g * og, (g + 1) * og)) + pos
                    y[idx] += x[(slice(None), ci) + p][:, None] * w[(ci, slice(None)) + j][None, :]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


CASES_2D = [
    dict(stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1, dilation=(1, 1)),
    dict(stride=(2, 2), padding=(1, 1), output_padding=(0, 0), groups=1, dilation=(1, 1)),
    dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2), groups=1, dilation=(1, 1)),
    dict(stride=(2, 1), padding=(2, 0), output_padding=(1, 0), groups=2, dilation=(2, 1)),
    dict(stride=(1, 2), padding=(2, 3), output_padding=(0, 1), groups=1, dilation=(1, 2)),  # crops
]


@pytest.mark.parametrize("kw", CASES_2D)
def test_conv_transpose2d_against_scatter_definition(kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 3, 4))
    w = rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(3 * kw["groups"])
    w = w[:, :3]
    want = np_conv_transpose(x, w, b, **kw)
    got = F.conv_transpose2d(
        T(x),
        T(w),
        T(b),
        kw["stride"],
        kw["padding"],
        kw["output_padding"],
        kw["groups"],
        kw["dilation"],
    )
    np.testing.assert_allclose(A(got), want, atol=1e-12)


def test_conv_transpose1d_module_gradcheck_and_output_size():
    rng = np.random.default_rng(1)
    m = nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1).double()
    x = rng.standard_normal((2, 3, 5))
    want = np_conv_transpose(x, A(m.weight), A(m.bias), (2,), (1,), (1,), 1, (1,))
    np.testing.assert_allclose(A(m(T(x))), want, atol=1e-12)
    assert m.weight.shape == (3, 2, 3) and list(m.state_dict()) == ["weight", "bias"]
    args = (T(x, True), T(rng.standard_normal((3, 2, 3)), True), T(rng.standard_normal(2), True))
    assert tl.gradcheck(lambda a, w, b: F.conv_transpose1d(a, w, b, stride=2, padding=1), args)
    m2 = nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1).double()
    xin = T(rng.standard_normal((1, 2, 4, 4)))
    assert m2(xin).shape == (1, 2, 7, 7) and m2(xin, output_size=(8, 8)).shape == (1, 2, 8, 8)
    with pytest.raises(ValueError, match="not reachable"):
        m2(xin, output_size=(10, 10))
    assert m2(T(rng.standard_normal((2, 4, 4)))).shape == (2, 7, 7)  # unbatched
    # the adjoint of conv2d: <conv(x), y> == <x, conv_transpose(y)>
    w = rng.standard_normal((3, 2, 3, 3))
    xa, ya = rng.standard_normal((1, 2, 7, 7)), rng.standard_normal((1, 3, 4, 4))
    lhs = (A(F.conv2d(T(xa), T(w), stride=2, padding=1)) * ya).sum()
    rhs = (xa * A(F.conv_transpose2d(T(ya), T(w), stride=2, padding=1))).sum()
    assert abs(lhs - rhs) < 1e-10


def test_interpolate_documented_examples():
    x = T([[[[1.0, 2.0], [3.0, 4.0]]]])
    np.testing.assert_allclose(
        A(F.interpolate(x, scale_factor=2, mode="nearest"))[0, 0],
        np.repeat(np.repeat([[1, 2], [3, 4]], 2, 0), 2, 1),
    )
    np.testing.assert_allclose(
        A(nn.Upsample(scale_factor=2, mode="bilinear")(x))[0, 0],
        [
            [1.0, 1.25, 1.75, 2.0],
            [1.5, 1.75, 2.25, 2.5],
            [2.5, 2.75, 3.25, 3.5],
            [3.0, 3.25, 3.75, 4.0],
        ],
        atol=1e-12,
    )
    np.testing.assert_allclose(
        A(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)(x))[0, 0],
        [
            [1.0, 4 / 3, 5 / 3, 2.0],
            [5 / 3, 2.0, 7 / 3, 8 / 3],
            [7 / 3, 8 / 3, 3.0, 10 / 3],
            [3.0, 10 / 3, 11 / 3, 4.0],
        ],
        atol=1e-12,
    )


def test_interpolate_against_scipy_and_gradient():
    ndimage = pytest.importorskip("scipy.ndimage")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 5, 4))
    got = A(F.interpolate(T(x), size=(9, 7), mode="bilinear", align_corners=True))
    want = np.stack(
        [
            [ndimage.zoom(x[n, c], (9 / 5, 7 / 4), order=1, grid_mode=False) for c in range(3)]
            for n in range(2)
        ]
    )
    np.testing.assert_allclose(got, want, atol=1e-12)
    x1 = rng.standard_normal((1, 2, 6))
    got = A(F.interpolate(T(x1), size=4, mode="linear"))
    src = np.maximum((np.arange(4) + 0.5) * 1.5 - 0.5, 0)
    want = np.stack([np.interp(src, np.arange(6), x1[0, c]) for c in range(2)])[None]
    np.testing.assert_allclose(got, want, atol=1e-12)
    near = A(F.interpolate(T(x1), size=4, mode="nearest-exact"))
    np.testing.assert_allclose(
        near, x1[..., np.minimum(np.floor((np.arange(4) + 0.5) * 1.5), 5).astype(int)]
    )
    assert tl.gradcheck(
        lambda a: F.interpolate(a, scale_factor=1.5, mode="bilinear"), (T(x[:1, :1], True),)
    )
    with pytest.raises(ValueError, match="exactly one"):
        F.interpolate(T(x), mode="bilinear")
    with pytest.raises(tl.ShapeError):
        F.interpolate(T(x1), scale_factor=2, mode="bilinear")


def test_pixel_shuffle_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 12, 3, 5))
    r = 2
    want = x.reshape(2, 3, r, r, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 3, 6, 10)
    np.testing.assert_array_equal(A(nn.PixelShuffle(2)(T(x))), want)
    np.testing.assert_array_equal(A(nn.PixelUnshuffle(2)(T(want))), x)
    with pytest.raises(tl.ShapeError):
        F.pixel_shuffle(T(x[:, :5]), 2)


def test_channel_dropout_and_padding_modules():
    tl.manual_seed(0)
    x = tl.ones(4, 16, 3, 3, dtype=tl.float64)
    y = A(nn.Dropout2d(0.5)(x))
    per_channel = y.reshape(4, 16, 9)
    assert np.all(
        (per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)
    )  # whole channels, scaled 1/(1-p)
    assert 0.2 < (per_channel[..., 0] == 0).mean() < 0.8
    y1 = A(nn.Dropout1d(0.25)(tl.ones(8, 10, 5, dtype=tl.float64)))
    assert np.all((y1 == 0).all(-1) | np.isclose(y1, 4 / 3).all(-1))
    assert np.array_equal(A(nn.Dropout2d(0.9).eval()(x)), A(x))
    with pytest.raises(tl.ShapeError):
        nn.Dropout2d()(tl.ones(2, 3))
    np.testing.assert_array_equal(
        A(nn.ZeroPad2d((1, 0, 0, 2))(tl.ones(1, 1, 1, 1))), [[[[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]]]
    )
    np.testing.assert_array_equal(
        A(nn.ConstantPad1d(2, -1.0)(tl.zeros(1, 1))), [[-1, -1, 0, -1, -1]]
    )
    with pytest.raises(ValueError):
        nn.ZeroPad2d((1, 2, 3))
