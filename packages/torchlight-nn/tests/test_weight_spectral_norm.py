"""weight_norm and spectral_norm against numpy (norms, singular values) and their gradients."""

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.nn.utils import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_reparameterises_and_trains(dim):
    tl.manual_seed(0)
    m = nn.Conv1d(3, 4, 2).double()
    w0 = A(m.weight).copy()
    weight_norm(m, dim=dim)
    axes = None if dim is None else tuple(d for d in range(3) if d != dim)
    np.testing.assert_allclose(
        A(m.weight_g), np.sqrt((w0**2).sum(axis=axes, keepdims=axes is not None)), rtol=1e-12
    )
    np.testing.assert_allclose(A(m.weight), w0, rtol=1e-12)  # same function at the start
    with tl.no_grad():
        m.weight_g.mul_(2.0)
    x = T(np.random.default_rng(1).standard_normal((2, 3, 5)))
    y = m(x)  # the hook recomputes weight = g v / |v|
    np.testing.assert_allclose(A(m.weight), 2 * w0, rtol=1e-12)
    y.square().sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    assert "weight" not in dict(m.named_parameters())
    remove_weight_norm(m)
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight"]
    np.testing.assert_allclose(A(m.weight), 2 * w0, rtol=1e-12)
    with pytest.raises(ValueError):
        remove_weight_norm(m)


def test_weight_norm_gradient_matches_finite_differences():
    lin = weight_norm(nn.Linear(3, 2).double())
    x = T(np.random.default_rng(2).standard_normal((4, 3)))

    def loss(g, v):
        return ((x @ (v * (g / (v * v).sum(1, keepdim=True).sqrt())).T) ** 2).sum()

    assert tl.gradcheck(loss, (T(A(lin.weight_g), True), T(A(lin.weight_v), True)))
    lin(x).square().sum().backward()
    g, v = T(A(lin.weight_g), True), T(A(lin.weight_v), True)
    (
        ((x @ (v * (g / (v * v).sum(1, keepdim=True).sqrt())).T) + lin.bias.detach()) ** 2
    ).sum().backward()
    np.testing.assert_allclose(A(lin.weight_g.grad), A(g.grad), rtol=1e-10)
    np.testing.assert_allclose(A(lin.weight_v.grad), A(v.grad), rtol=1e-10)


def test_spectral_norm_converges_to_the_largest_singular_value():
    tl.manual_seed(3)
    lin = spectral_norm(nn.Linear(6, 4).double(), n_power_iterations=3)
    w = A(lin.weight_orig)
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    x = T(np.ones((1, 6)))
    for _ in range(30):
        lin(x)
    np.testing.assert_allclose(A(lin.weight), w / sigma, rtol=1e-8)
    np.testing.assert_allclose(np.linalg.svd(A(lin.weight), compute_uv=False)[0], 1.0, rtol=1e-8)
    u = A(lin.weight_u).copy()
    lin.eval()
    lin(x)
    np.testing.assert_array_equal(A(lin.weight_u), u)  # eval mode does not iterate
    lin.train()
    lin(x).sum().backward()
    assert lin.weight_orig.grad is not None
    assert sorted(lin.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    conv = spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    assert conv.weight_u.shape == (3,)  # dim 1 for transposed convolutions
    remove_spectral_norm(lin)
    assert sorted(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(A(lin.weight), w / sigma, rtol=1e-8)
