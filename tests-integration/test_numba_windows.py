"""Pooling, convolution and ``unfold`` on the numba backend, whose ``windows`` capability runs
col2im and the max pool's gradient as kernels, against the numpy backend's composite (one pass
per kernel offset): the same values and gradients on the same data.

The composite is the oracle here because it is tested against numpy references and PyTorch
elsewhere (``packages/torchlight-nn/tests/test_pooling.py``, ``test_conv.py``). Cases cover
ties (ReLU zeros, small integers), NaN and -inf windows, overlapping and dilated windows,
padding, 1-D pools, and geometries the kernels decline (3-D pools, five-dim inputs), which must
take the composite on numba too. A gradient taken with ``create_graph=True`` takes the
composite as well (its result stays differentiable).
"""

import numpy as np
import pytest

pytest.importorskip("torchlight.backends.numba")
pytest.importorskip("torchlight.nn")

import torchlight as tl  # noqa: E402
import torchlight.nn.functional as F  # noqa: E402


def _both(fn, *arrays):
    """``fn`` applied to ``arrays`` as leaf tensors on numpy and on numba, and the gradients of
    the sum of its output times a fixed random weight: ``[(value, grads), (value, grads)]``."""
    results = []
    for device in ("cpu", "numba"):
        leaves = [tl.tensor(a, device=device, requires_grad=True) for a in arrays]
        y = fn(*leaves)
        w = np.random.default_rng(7).standard_normal(y.shape).astype(np.float32)
        (y * tl.tensor(w, device=device)).sum().backward()
        results.append((y.detach().numpy(), [leaf.grad.numpy() for leaf in leaves]))
    return results


def _same(results, exact=False):
    (y0, g0), (y1, g1) = results
    np.testing.assert_array_equal(y0, y1)
    for a, b in zip(g0, g1):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _ties(shape, seed):
    """Values from a few integers (most windows tie), some NaN and -inf."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, flat.size // 15, replace=False)] = np.nan
    flat[rng.choice(flat.size, flat.size // 15, replace=False)] = -np.inf
    return x


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=1),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=(2, 3), stride=(1, 2), dilation=2),
        dict(kernel_size=2, ceil_mode=True),
    ],
)
def test_max_pool2d_gradient_matches_the_composite(kwargs):
    """Ties go to the first maximum, NaN windows to their last NaN, on both backends; with
    disjoint windows each gradient lands on one element, so the two agree exactly."""
    x = _ties((2, 3, 9, 9), 0)
    disjoint = kwargs.get("stride", kwargs["kernel_size"]) == kwargs["kernel_size"]
    _same(_both(lambda t: F.max_pool2d(t, **kwargs), x), exact=disjoint)


def test_max_pool_after_relu_matches_the_composite():
    """LeNet's pattern: a 2x2 pool of a ReLU's output, half of it zeros."""
    x = np.random.default_rng(1).standard_normal((4, 6, 12, 12)).astype(np.float32)
    _same(_both(lambda t: F.max_pool2d(F.relu(t), 2), x), exact=True)


def test_one_dim_pools_match_the_composite():
    """1-D pools run the kernels with a unit dim in front of the windowed one."""
    _same(_both(lambda t: F.max_pool1d(t, 3, 2), _ties((2, 4, 11), 2)))
    smooth = np.random.default_rng(2).standard_normal((2, 4, 11)).astype(np.float32)
    _same(_both(lambda t: F.avg_pool1d(t, 3, 2), smooth))


def test_a_declined_geometry_takes_the_composite(monkeypatch):
    """A backend may decline any geometry (``False``, nothing written): the core then runs its
    composite, with the same result."""
    from torchlight.backends.numba.backend import NumbaBackend

    calls = []

    def decline(self, *args):
        calls.append(args)
        return False

    monkeypatch.setattr(NumbaBackend, "window_add", decline)
    monkeypatch.setattr(NumbaBackend, "window_max_backward", decline)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    _same(_both(lambda a, b: F.max_pool2d(F.conv2d(a, b), 2), x, w))
    assert len(calls) == 2  # both were asked, on numba only


@pytest.mark.parametrize(
    "kwargs", [dict(), dict(stride=2, padding=1), dict(dilation=2), dict(groups=2, padding=2)]
)
def test_conv2d_gradients_match_the_composite(kwargs):
    """col2im (the input's gradient of a convolution) by the kernel equals the per-offset adds."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 10, 9)).astype(np.float32)
    w = rng.standard_normal((6, 4 // kwargs.get("groups", 1), 3, 3)).astype(np.float32)
    _same(_both(lambda a, b: F.conv2d(a, b, **kwargs), x, w))


def test_conv1d_avg_pool_and_unfold_gradients_match_the_composite():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 13)).astype(np.float32)
    w = rng.standard_normal((4, 3, 5)).astype(np.float32)
    _same(_both(lambda a, b: F.conv1d(a, b, stride=2), x, w))
    img = rng.standard_normal((2, 3, 8, 7)).astype(np.float32)
    _same(_both(lambda a: F.avg_pool2d(a, 3, stride=2, padding=1), img))
    _same(_both(lambda a: F.unfold(a, (2, 3), dilation=(2, 1), stride=(1, 2)), img))


def test_max_pool_double_backward_takes_the_composite_on_numba():
    """``create_graph=True``: the gradient is a recorded op (``WindowScatter``), differentiable
    again, on numba as on numpy."""
    x = _ties((1, 2, 6, 6), 6)
    x[np.isnan(x)] = 0.0
    grads = []
    for device in ("cpu", "numba"):
        t = tl.tensor(x, device=device, requires_grad=True)
        y = F.max_pool2d(t, 2)
        g = tl.ones(y.shape, device=device, requires_grad=True)
        y.backward(g, create_graph=True)
        dx = t.grad
        assert dx.requires_grad
        (dx * dx).sum().backward()
        grads.append(g.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
