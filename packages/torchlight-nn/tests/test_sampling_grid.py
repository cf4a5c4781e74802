"""affine_grid and grid_sample against numpy / scipy.ndimage.map_coordinates."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn.functional as F

ndimage = pytest.importorskip("scipy.ndimage")


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_against_numpy(align_corners):
    rng = np.random.default_rng(0)
    theta = rng.standard_normal((2, 2, 3))
    grid = A(F.affine_grid(T(theta), (2, 3, 4, 5), align_corners=align_corners))
    if align_corners:
        xs, ys = np.linspace(-1, 1, 5), np.linspace(-1, 1, 4)
    else:
        xs, ys = (2 * np.arange(5) + 1) / 5 - 1, (2 * np.arange(4) + 1) / 4 - 1
    for n in range(2):
        for i in range(4):
            for j in range(5):
                np.testing.assert_allclose(
                    grid[n, i, j], theta[n] @ [xs[j], ys[i], 1.0], atol=1e-12
                )
    assert tl.gradcheck(lambda t: F.affine_grid(t, (2, 1, 3, 2)), (T(theta, True),))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
def test_grid_sample_bilinear_against_scipy(align_corners, padding_mode):
    rng = np.random.default_rng(1)
    img = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2))  # some points fall outside the image
    out = A(F.grid_sample(T(img), T(grid), padding_mode=padding_mode, align_corners=align_corners))
    h, w = 5, 6
    if align_corners:
        px, py = (grid[..., 0] + 1) * (w - 1) / 2, (grid[..., 1] + 1) * (h - 1) / 2
    else:
        px, py = ((grid[..., 0] + 1) * w - 1) / 2, ((grid[..., 1] + 1) * h - 1) / 2
    scipy_mode = "grid-constant" if padding_mode == "zeros" else "nearest"
    for n in range(2):
        for c in range(3):
            want = ndimage.map_coordinates(
                img[n, c], [py[n].ravel(), px[n].ravel()], order=1, mode=scipy_mode
            )
            np.testing.assert_allclose(out[n, c].ravel(), want, atol=1e-12)


def test_grid_sample_nearest_identity_and_gradients():
    rng = np.random.default_rng(2)
    img = rng.standard_normal((1, 2, 4, 4))
    identity = F.affine_grid(T([[[1.0, 0, 0], [0, 1.0, 0]]]), (1, 2, 4, 4))
    np.testing.assert_allclose(A(F.grid_sample(T(img), identity)), img, atol=1e-12)
    np.testing.assert_allclose(A(F.grid_sample(T(img), identity, mode="nearest")), img, atol=1e-12)
    grid = rng.uniform(-0.9, 0.9, (1, 3, 3, 2))
    assert tl.gradcheck(
        lambda a, g: F.grid_sample(a, g, align_corners=True), (T(img, True), T(grid, True))
    )
    theta = T([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.0]]], True)
    F.grid_sample(
        T(img), F.affine_grid(theta, (1, 2, 4, 4))
    ).sum().backward()  # a spatial transformer step
    assert np.abs(A(theta.grad)).sum() > 0
    with pytest.raises(NotImplementedError):
        F.grid_sample(T(img), identity, padding_mode="reflection")
