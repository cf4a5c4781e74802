"""logsumexp (one Function, LogSumExp) and max/min along a dim (MaxDim beside argmax/argmin):
values and gradients against numpy, finite differences and PyTorch; infinite slices,
non-contiguous inputs, second derivatives."""

import numpy as np
import pytest

import torchlight as tl

rng = np.random.default_rng(11)


def np_logsumexp(a, axis, keepdims):
    m = a.max(axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    axes = axis if isinstance(axis, tuple) else (axis,)
    return out if keepdims else out.squeeze(axes)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [1, -1, 0, (0, 2), None])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_logsumexp_values_and_gradient(dim, keepdim, layout):
    a = rng.standard_normal((3, 4, 5)) * 4
    x = tl.tensor(a if layout == "contiguous" else a.transpose(2, 1, 0).copy(), requires_grad=True)
    v = x if layout == "contiguous" else x.permute(2, 1, 0)  # a strided view of the same values
    assert layout == "contiguous" or not v.is_contiguous()
    y = v.logsumexp(dim, keepdim=keepdim)
    axis = tuple(range(3)) if dim is None else dim
    want = np_logsumexp(a, axis, keepdim)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12)
    assert y.shape == want.shape
    g = rng.standard_normal(want.shape)
    y.backward(tl.tensor(g))
    # d/dx_i logsumexp = exp(x_i - y): the softmax over the reduced dims
    axes = axis if isinstance(axis, tuple) else (axis % 3,)
    gk = np.expand_dims(g, axes) if not keepdim else g
    yk = np_logsumexp(a, axis, True)
    dx = gk * np.exp(a - yk)
    got = x.grad.numpy() if layout == "contiguous" else x.grad.numpy().transpose(2, 1, 0)
    np.testing.assert_allclose(got, dx, rtol=1e-12, atol=1e-15)
    assert tl.gradcheck(
        lambda t: t.logsumexp(dim, keepdim=keepdim), (tl.tensor(a, requires_grad=True),)
    )


def test_logsumexp_large_and_integer_inputs():
    x = tl.tensor([[1e4, 1e4], [-1e4, -1e4 + 1]], dtype=tl.float32)
    np.testing.assert_allclose(
        x.logsumexp(1).numpy(), [1e4 + np.log(2), -1e4 + 1 + np.log1p(np.exp(-1))], rtol=1e-6
    )
    y = tl.logsumexp(tl.tensor([[0, 0], [1, 1]]), 1)
    assert y.dtype is tl.float32
    np.testing.assert_allclose(y.numpy(), [np.log(2), 1 + np.log(2)], rtol=1e-6)


def test_logsumexp_infinite_slices_match_pytorch():
    torch = pytest.importorskip("torch")
    inf = np.inf
    a = np.array(
        [
            [-inf, -inf, -inf],  # all -inf: -inf, gradient NaN (exp(-inf + inf))
            [-inf, 0.0, 1.0],  # a -inf entry: finite, its gradient 0
            [inf, 0.0, 1.0],  # +inf: +inf, gradient NaN at the inf, 0 elsewhere
            [inf, -inf, 2.0],
            [0.5, -2.0, 3.0],
        ]
    )
    x = tl.tensor(a, requires_grad=True)
    y = x.logsumexp(1)
    y.sum().backward()
    xt = torch.tensor(a, requires_grad=True)
    yt = xt.logsumexp(1)
    yt.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), yt.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, equal_nan=True)
    assert np.isnan(x.grad.numpy()[0]).all() and x.grad.numpy()[1, 0] == 0


def test_logsumexp_second_derivative_matches_pytorch():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 4))
    u = rng.standard_normal((3, 4))
    x = tl.tensor(a, requires_grad=True)
    x.logsumexp(1).sum().backward(create_graph=True)
    g = x.grad
    x.grad = None
    (g * tl.tensor(u)).sum().backward()
    h = x.grad
    xt = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad(xt.logsumexp(1).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.tensor(u)).sum(), xt)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-10, atol=1e-14)
    assert np.abs(h.numpy()).max() > 1e-3  # a real second derivative, not a constant's zero


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_max_min_along_a_dim(op, keepdim, dim):
    a = rng.integers(-3, 4, (4, 5)).astype(np.float64)  # small integers: many ties
    x = tl.tensor(a.T.copy(), requires_grad=True)
    v = x.t()  # strided
    values, indices = getattr(v, op)(dim, keepdim=keepdim)
    arg = (np.argmax if op == "max" else np.argmin)(a, axis=dim)
    want = getattr(np, op)(a, axis=dim)
    if keepdim:
        arg, want = np.expand_dims(arg, dim), np.expand_dims(want, dim)
    np.testing.assert_array_equal(values.detach().numpy(), want)
    np.testing.assert_array_equal(indices.numpy(), arg)
    assert indices.dtype is tl.int64 and values.shape == indices.shape == want.shape
    g = rng.standard_normal(want.shape)
    values.backward(tl.tensor(g))
    dx = np.zeros_like(a)  # the whole gradient goes to the first winner of each slice
    np.put_along_axis(
        dx,
        arg if keepdim else np.expand_dims(arg, dim),
        g if keepdim else np.expand_dims(g, dim),
        axis=dim,
    )
    np.testing.assert_array_equal(x.grad.numpy().T, dx)


def test_max_along_a_dim_with_nan_and_one_dim_inputs():
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, -1.0]])
    for op in ("max", "min"):
        got = getattr(tl.tensor(a), op)(1)
        want = getattr(torch.tensor(a), op)(1)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    x = tl.tensor([2.0, 7.0, 7.0, -1.0], requires_grad=True)
    v, i = x.max(0)
    assert v.shape == i.shape == () and v.item() == 7.0 and i.item() == 1
    v.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0, 0.0])
    assert tl.gradcheck(
        lambda t: t.min(1, keepdim=True).values,
        (tl.tensor(rng.standard_normal((3, 4)), requires_grad=True),),
    )


def test_each_is_one_tape_op_that_replays_on_new_shapes():
    def fn(x):
        v, i = x.max(1)
        return x.logsumexp(1) + v + x.min(0, keepdim=True).values.sum(), i

    tape = tl.jit.trace(fn, tl.randn(4, 3))
    ops = tape.count_ops()
    assert ops["logsumexp"] == 1 and ops["max_dim"] == 2 and ops["argmax"] == 1
    x = tl.tensor(rng.standard_normal((6, 3)), dtype=tl.float32)
    for got, want in zip(tape(x), fn(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_fused_call_and_composite_agree(monkeypatch, keepdim):
    """One dim on a backend with the ``logsumexp`` capability is one backend call; without the
    capability the composite gives the same values and gradients (±inf slices included)."""
    from torchlight.tensor.backend.numpy import NumpyBackend

    a = rng.standard_normal((4, 6)) * 3
    a[1] = -np.inf
    a[2, 3] = np.inf

    def run():
        x = tl.tensor(a, requires_grad=True)
        y = x.t().logsumexp(0, keepdim=keepdim)  # a strided input
        y.backward(tl.tensor(np.arange(4.0).reshape(y.shape)))
        return y.detach().numpy(), x.grad.numpy()

    calls = []
    real = NumpyBackend.logsumexp
    monkeypatch.setattr(
        NumpyBackend, "logsumexp", lambda self, *args: calls.append(1) or real(self, *args)
    )
    fused = run()
    assert calls == [1]
    monkeypatch.setattr(NumpyBackend, "capabilities", NumpyBackend.capabilities - {"logsumexp"})
    composite = run()
    assert calls == [1]
    for got, want in zip(fused, composite):
        np.testing.assert_array_equal(got, want)
    assert fused[0].reshape(-1)[1] == -np.inf and fused[0].reshape(-1)[2] == np.inf
