"""nn.init: fan conventions, gains, and the statistics of every initialiser."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.nn import init


def test_fans_follow_pytorch():
    assert init.calculate_fan_in_and_fan_out(nn.Linear(7, 3).weight) == (7, 3)
    assert init.calculate_fan_in_and_fan_out(tl.empty(16, 4, 3, 5)) == (60, 240)
    with pytest.raises(ValueError, match="fewer than 2"):
        init.calculate_fan_in_and_fan_out(tl.empty(5))


def test_gains():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01**2)))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError):
        init.calculate_gain("swish")


def _stats(t):
    a = t.detach().numpy()
    return a, a.mean(), a.std()


def test_uniform_normal_constant():
    tl.manual_seed(0)
    a, m, s = _stats(init.uniform_(tl.empty(200, 100), -2, 3))
    assert a.min() >= -2 and a.max() < 3 and abs(m - 0.5) < 0.05
    a, m, s = _stats(init.normal_(tl.empty(200, 100), 1.0, 0.5))
    assert abs(m - 1) < 0.01 and abs(s - 0.5) < 0.01
    assert np.all(init.zeros_(tl.ones(3)).numpy() == 0)
    assert np.all(init.ones_(tl.zeros(3)).numpy() == 1)
    assert np.all(init.constant_(tl.zeros(3), 0.3).numpy() == np.float32(0.3))
    np.testing.assert_array_equal(init.eye_(tl.empty(2, 3)).numpy(), np.eye(2, 3))


def test_initialisers_work_on_parameters_without_recording():
    p = nn.Parameter(tl.empty(4, 4))
    init.kaiming_normal_(p)
    assert p.is_leaf and p.requires_grad and p.grad is None


def test_xavier():
    tl.manual_seed(0)
    w = tl.empty(300, 200)
    std = math.sqrt(2.0 / 500)
    a, m, s = _stats(init.xavier_uniform_(w, gain=2.0))
    assert np.abs(a).max() <= 2 * math.sqrt(3) * std and abs(s - 2 * std) < 0.02 * 2 * std
    a, m, s = _stats(init.xavier_normal_(w))
    assert abs(s - std) < 0.02 * std


@pytest.mark.parametrize(
    "mode,nl,a",
    [("fan_in", "relu", 0), ("fan_out", "leaky_relu", 0.2), ("fan_in", "leaky_relu", math.sqrt(5))],
)
def test_kaiming(mode, nl, a):
    tl.manual_seed(0)
    w = tl.empty(100, 50, 3)  # fan_in 150, fan_out 300
    fan = 150 if mode == "fan_in" else 300
    std = init.calculate_gain(nl, a) / math.sqrt(fan)
    arr, m, s = _stats(init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nl))
    assert np.abs(arr).max() <= math.sqrt(3) * std and abs(s - std) < 0.03 * std
    arr, m, s = _stats(init.kaiming_normal_(w, a=a, mode=mode, nonlinearity=nl))
    assert abs(s - std) < 0.03 * std
    with pytest.raises(ValueError, match="Mode"):
        init.kaiming_uniform_(w, mode="fan_avg")


def test_trunc_normal():
    tl.manual_seed(0)
    a, m, s = _stats(init.trunc_normal_(tl.empty(100, 100), mean=0.5, std=1.0, a=-1.0, b=1.5))
    assert a.min() >= -1.0 and a.max() <= 1.5
    # mean of N(0.5, 1) truncated to [-1.5, 1] (in std units around the mean): mu + (phi(α) - phi(β)) / Z
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    Phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    expected = 0.5 + (phi(-1.5) - phi(1.0)) / (Phi(1.0) - Phi(-1.5))
    assert abs(m - expected) < 0.02
    with pytest.raises(ValueError):
        init.trunc_normal_(tl.empty(3), mean=0, std=1, a=10, b=11)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 2)])
def test_orthogonal(shape):
    tl.manual_seed(0)
    w = init.orthogonal_(tl.empty(*shape, dtype=tl.float64), gain=2.0).numpy().reshape(shape[0], -1)
    if w.shape[0] >= w.shape[1]:
        np.testing.assert_allclose(w.T @ w, 4 * np.eye(w.shape[1]), atol=1e-12)
    else:
        np.testing.assert_allclose(w @ w.T, 4 * np.eye(w.shape[0]), atol=1e-12)


def test_init_is_reproducible_with_manual_seed():
    tl.manual_seed(3)
    a = nn.Linear(5, 5).weight.detach().to_numpy()
    tl.manual_seed(3)
    b = nn.Linear(5, 5).weight.detach().to_numpy()
    np.testing.assert_array_equal(a, b)
