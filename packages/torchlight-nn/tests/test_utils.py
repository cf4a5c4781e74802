"""clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters."""

import math

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)


def _with_grads(values):
    params = []
    for v in values:
        p = nn.Parameter(tl.tensor(np.zeros_like(v)))
        p.grad = tl.tensor(v)
        params.append(p)
    return params


def test_clip_grad_norm_scales_to_max_norm():
    g1, g2 = np.array([3.0, 0.0]), np.array([[0.0, 4.0]])
    params = _with_grads([g1, g2])
    total = clip_grad_norm_(params, 1.0)
    assert total.item() == pytest.approx(5.0)
    coef = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(params[0].grad.numpy(), g1 * coef, rtol=1e-6)
    np.testing.assert_allclose(params[1].grad.numpy(), g2 * coef, rtol=1e-6)
    params = _with_grads([g1, g2])
    clip_grad_norm_(params, 10.0)  # below the limit: unchanged
    np.testing.assert_allclose(params[0].grad.numpy(), g1)


def test_clip_grad_norm_other_norms_and_nonfinite():
    g = np.array([1.0, -2.0, 2.0])
    p = _with_grads([g])
    assert clip_grad_norm_(p, 100, norm_type=math.inf).item() == pytest.approx(2.0)
    p = _with_grads([g])
    assert clip_grad_norm_(p[0], 100, norm_type=1).item() == pytest.approx(5.0)
    p = _with_grads([np.array([np.inf, 1.0])])
    with pytest.raises(tl.TorchlightError, match="non-finite"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    assert clip_grad_norm_([nn.Parameter(tl.zeros(2))], 1.0).item() == 0.0  # no grads at all


def test_clip_grad_value():
    p = _with_grads([np.array([-3.0, 0.5, 2.0])])
    clip_grad_value_(p, 1.0)
    np.testing.assert_allclose(p[0].grad.numpy(), [-1.0, 0.5, 1.0])


def test_parameter_vector_round_trip():
    net = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    vec = parameters_to_vector(net.parameters())
    assert vec.shape == (net.num_parameters(),)
    np.testing.assert_allclose(vec.detach().numpy()[:6], net[0].weight.detach().numpy().reshape(-1))
    vector_to_parameters(tl.arange(13, dtype=tl.float32), net.parameters())
    np.testing.assert_allclose(net[1].bias.detach().numpy(), [12.0])
    np.testing.assert_allclose(net[0].weight.detach().numpy(), np.arange(6).reshape(3, 2))
    with pytest.raises(tl.ShapeError):
        vector_to_parameters(tl.zeros(5), net.parameters())


def test_clipping_is_safe_when_leaves_share_a_gradient_tensor():
    # backward(create_graph=True) may give both leaves of a + b the same gradient tensor
    a, b = nn.Parameter(tl.ones(2)), nn.Parameter(tl.ones(2))
    (a + b).sum().backward(create_graph=True)
    clip_grad_norm_([a, b], 1.0)
    np.testing.assert_allclose(a.grad.detach().numpy(), 1 / (2 + 1e-6), rtol=1e-5)
    np.testing.assert_allclose(b.grad.detach().numpy(), 1 / (2 + 1e-6), rtol=1e-5)
    q = nn.Parameter(tl.ones(2))
    (q * 2).sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), [2.0, 2.0])  # the implicit seed was not modified


def test_clip_grad_norm_two_norm_of_mixed_layouts_and_dtypes():
    """The 2-norm (float64 squares summed per gradient) of a transposed float32 gradient and a
    float64 one equals numpy's over all elements; below the limit each gradient is left as the
    very tensor it was, above it every one is scaled."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(5)
    pa, pb = nn.Parameter(tl.zeros(3, 4)), nn.Parameter(tl.zeros(5, dtype=tl.float64))
    pa.grad, pb.grad = tl.tensor(a).t(), tl.tensor(b)
    want = np.sqrt((a.astype(np.float64) ** 2).sum() + (b**2).sum())
    before = (pa.grad, pb.grad)
    total = clip_grad_norm_([pa, pb], want * 2)
    assert total.dtype == tl.float32
    np.testing.assert_allclose(total.item(), want, rtol=1e-6)
    assert pa.grad is before[0] and pb.grad is before[1]
    clip_grad_norm_([pa, pb], 1.0)
    coef = 1.0 / (want + 1e-6)
    np.testing.assert_allclose(pa.grad.numpy(), a.T * coef, rtol=1e-5)
    np.testing.assert_allclose(pb.grad.numpy(), b * coef, rtol=1e-12)


@pytest.mark.parametrize("max_norm", [0.5, 1e3])  # every replay clipped / none clipped
def test_clip_grad_norm_in_a_captured_step_scales_as_eager(max_norm):
    # a captured step cannot read the norm on the host: the factor is computed as a tensor
    # while recording, and replays give what eager steps give, bit for bit
    def run(capture):
        tl.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = tl.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            norm = clip_grad_norm_(model.parameters(), max_norm)
            opt.step()
            return loss, norm

        if capture:
            step = tl.jit.capture_step(step)
        gen = np.random.default_rng(1)
        out = []
        for _ in range(8):
            x = tl.tensor(gen.normal(size=(4, 3)).astype(np.float32) * 3)
            y = tl.tensor(gen.normal(size=(4, 1)).astype(np.float32))
            out.append([t.item() for t in step(x, y)])
        grads = [p.grad.numpy().copy() for p in model.parameters()]
        return out, grads, (step.state if capture else None)

    eager, eager_grads, _ = run(False)
    captured, captured_grads, state = run(True)
    assert state == "captured"
    assert captured == eager
    assert all(norm > max_norm for _, norm in eager) == (max_norm < 1)
    for a, b in zip(captured_grads, eager_grads):
        np.testing.assert_array_equal(a, b)
