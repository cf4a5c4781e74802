"""Autograd on tensors: the headline example, accumulation, grad modes, graph lifetime, long
chains, and in-place ops (views, the version counter, the leaf rule)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tltensor_helpers import LEAF_LAYOUTS, Maker, assert_close, shapes

import torchlight as tl


def test_headline_example_verbatim():
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True); t = x.T; m = x @ t  # noqa: E702  # fmt: skip
    assert t._td.storage is x._td.storage  # x.T is a view: no copy
    np.testing.assert_array_equal(m.detach().numpy(), [[5.0, 11.0], [11.0, 25.0]])
    assert m.requires_grad and not m.is_leaf and x.is_leaf
    y = (x ** 2).sum(); y.backward()  # noqa: E702  # fmt: skip
    assert y.item() == 30.0
    np.testing.assert_array_equal(x.grad.numpy(), (2 * x).detach().numpy())
    assert (x.grad == 2 * x).all().item()


def test_backward_through_a_transposed_view():
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    m = x @ x.T
    m.sum().backward()
    # d/dx sum(x x^T) = (1 1^T) x + ((1 1^T)^T x) = 2 * [row sums broadcast]
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    expected = np.ones((2, 2)) @ a + np.ones((2, 2)) @ a
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_grad_accumulates_across_backward_calls():
    x = tl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 + 2 * np.array([1.0, -2.0, 3.0]))
    x.grad = None
    x.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_grad_of_a_leaf_used_twice_and_broadcast():
    x = tl.tensor([[1.0], [2.0]], requires_grad=True)  # (2, 1) broadcast against (3,)
    b = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * b + x).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[9.0], [9.0]])  # sum(b) + 3 columns of +x
    np.testing.assert_array_equal(b.grad.numpy(), [3.0, 3.0, 3.0])  # sum(x)
    assert x.grad.shape == x.shape and b.grad.shape == b.shape


def test_leaf_and_non_leaf_and_retain_grad():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    k = x * 3
    (h * k).sum().backward()
    assert h.grad is not None and k.grad is None
    np.testing.assert_array_equal(h.grad.numpy(), [3.0, 6.0])
    assert not h.is_leaf and h.grad_fn is not None and x.grad_fn is None
    c = tl.tensor([1.0])
    assert c.is_leaf and not c.requires_grad


def test_backward_needs_scalar_or_gradient():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(tl.AutogradError, match="scalar"):
        y.backward()
    with pytest.raises(tl.ShapeError):
        y.backward(tl.ones(3))
    y.backward(tl.tensor([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 20.0])
    with pytest.raises(tl.AutogradError, match="does not require grad"):
        tl.tensor([1.0]).sum().backward()


def test_only_floating_tensors_require_grad():
    with pytest.raises(tl.DTypeError):
        tl.tensor([1, 2]).requires_grad_()
    with pytest.raises(tl.DTypeError):
        tl.tensor([1, 2], requires_grad=True)
    x = tl.tensor([1.0])
    assert x.requires_grad_() is x and x.requires_grad
    with pytest.raises(tl.AutogradError):
        (x * 2).requires_grad_(False)


# --- grad modes ---------------------------------------------------------------------------------


def test_no_grad_and_enable_grad():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    with tl.no_grad():
        y = x * 2
        assert not tl.is_grad_enabled()
        with tl.enable_grad():
            z = x * 2
    assert tl.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    with tl.set_grad_enabled(False):
        assert not (x + 1).requires_grad

    @tl.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad
    assert tl.is_grad_enabled()


def test_detach_shares_storage_and_cuts_the_graph():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    d2 = x.detach()
    assert d2._td.storage is x._td.storage and d2.is_leaf and not d2.requires_grad
    d2[0] = 10.0  # writes through to x's data (allowed: d2 does not require grad)
    assert x[0].item() == 10.0
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d._td.storage is y._td.storage
    (y * d).sum().backward()  # d is a constant
    np.testing.assert_array_equal(x.grad.numpy(), 2 * d.numpy())
    assert x.data._td.storage is x._td.storage and not x.data.requires_grad


def test_retain_graph():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()  # the graph was retained: works, and accumulates
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)
    with pytest.raises(tl.AutogradError, match="second time"):
        y.backward()


def test_create_graph_gives_second_derivatives():
    x = tl.tensor([1.0, 2.0], dtype=tl.float64, requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])  # d/dx 3x^2 = 6x


def test_ten_thousand_op_chain_backpropagates():
    """An unrolled chain (like an RNN over 10k steps) must not hit the recursion limit."""
    x = tl.tensor([1.0, -0.5], dtype=tl.float64, requires_grad=True)
    h = x
    for _ in range(10_000):
        h = h * 1.0001
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.0001**10_000, rtol=1e-9)


def test_post_accumulate_grad_hook():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * 5).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], [5.0, 5.0])


# --- in-place ops: values against numpy ----------------------------------------------------------

INPLACE = {
    "add_": (lambda t, o: t.add_(o), lambda a, b: a + b),
    "add_alpha": (lambda t, o: t.add_(o, alpha=-2.0), lambda a, b: a - 2 * b),
    "sub_": (lambda t, o: t.sub_(o), lambda a, b: a - b),
    "mul_": (lambda t, o: t.mul_(o), lambda a, b: a * b),
    "div_": (lambda t, o: t.div_(o), lambda a, b: a / b),
    "copy_": (lambda t, o: t.copy_(o), lambda a, b: np.broadcast_to(b, a.shape)),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@given(
    shape=shapes(1, 3, 1, 4),
    layout=st.sampled_from(LEAF_LAYOUTS),
    other_layout=st.sampled_from(LEAF_LAYOUTS + ("expanded",)),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_inplace_binary_ops_write_through_views(name, shape, layout, other_layout, seed, data):
    fn, ref = INPLACE[name]
    m = Maker(seed, np.float64, kind="nonzero")
    a, t = m.build(shape, layout)
    lead = data.draw(st.integers(0, len(shape)))  # the operand broadcasts to t's shape
    oshape = tuple(1 if data.draw(st.booleans()) else s for s in shape[lead:])
    b, o = m.build(oshape, other_layout)
    base_before = t._td.storage.copy()
    expected = ref(a.astype(np.float64), b)
    out = fn(t, o)
    assert out is t
    assert_close(t, expected)
    # the write happened in the shared storage, and only inside the view
    touched = np.zeros(base_before.shape, bool)
    pos = t._td.offset + sum(np.indices(t.shape)[k] * t._td.strides[k] for k in range(t.ndim))
    touched[pos.reshape(-1)] = True
    np.testing.assert_array_equal(t._td.storage[~touched], base_before[~touched])
    # and a scalar operand
    if name != "copy_":
        before = t.to_numpy()
        fn(t, 1.5)
        assert_close(t, ref(before, 1.5))


def test_fill_zero_clamp_on_views_are_seen_by_the_base():
    base = tl.tensor(np.arange(12.0).reshape(3, 4))
    col = base[:, 1]
    col.fill_(-1.0)
    np.testing.assert_array_equal(base.numpy()[:, 1], -1.0)
    base.T[2].zero_()  # the third column through a transposed view
    np.testing.assert_array_equal(base.numpy()[:, 2], 0.0)
    window = base[1:, ::2]
    window.clamp_(min=0.0, max=8.5)
    expected = np.arange(12.0).reshape(3, 4)
    expected[:, 1] = -1.0
    expected[:, 2] = 0.0
    expected[1:, ::2] = np.clip(expected[1:, ::2], 0.0, 8.5)
    np.testing.assert_array_equal(base.numpy(), expected)
    # and the base's writes are seen by an earlier view
    base.fill_(7.0)
    np.testing.assert_array_equal(col.numpy(), 7.0)
    np.testing.assert_array_equal(window.numpy(), 7.0)


def test_clamp_one_sided_and_fill_with_tensor():
    x = tl.tensor([-2.0, 0.5, 3.0])
    x.clamp_(min=0.0)
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.5, 3.0])
    x.clamp_(max=1.0)
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.5, 1.0])
    x.fill_(tl.tensor(4.0))
    np.testing.assert_array_equal(x.numpy(), 4.0)
    i = tl.tensor([1, 2, 3])
    i.fill_(9)
    assert i.dtype == tl.int64 and i.tolist() == [9, 9, 9]


def test_copy_casts_and_broadcasts():
    x = tl.zeros(2, 3)
    x.copy_(tl.tensor([1, 2, 3]))  # int64 into float32, broadcast over rows
    np.testing.assert_array_equal(x.numpy(), [[1, 2, 3], [1, 2, 3]])
    assert x.dtype == tl.float32
    x.copy_(tl.tensor(np.arange(6.0).reshape(3, 2)).T)  # a non-contiguous source
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(3, 2).T)
    x.copy_([[0.5] * 3] * 2)  # a nested list
    np.testing.assert_array_equal(x.numpy(), 0.5)
    with pytest.raises(tl.ShapeError):
        x.copy_(tl.ones(4))


def test_uniform_and_normal_fill_only_the_view():
    tl.manual_seed(0)
    base = tl.zeros(100, 40)
    view = base[:, ::2]
    view.uniform_(-2.0, 3.0)
    v = view.numpy()
    assert v.min() >= -2.0 and v.max() < 3.0 and abs(v.mean() - 0.5) < 0.1
    np.testing.assert_array_equal(base.numpy()[:, 1::2], 0.0)
    other = base[:, 1::2]
    other.normal_(1.0, 0.5)
    o = other.numpy()
    assert abs(o.mean() - 1.0) < 0.05 and abs(o.std() - 0.5) < 0.05
    np.testing.assert_array_equal(base.numpy()[:, ::2], v)  # untouched by normal_
    d = tl.zeros(1000, dtype=tl.float64).normal_()
    assert d.dtype == tl.float64 and abs(d.numpy().std() - 1.0) < 0.1


def test_setitem_basic_and_advanced():
    a = np.arange(12.0).reshape(3, 4)
    x = tl.tensor(a)
    x[0] = 100.0
    x[1, 1:3] = tl.tensor([-1.0, -2.0])
    x[tl.tensor([2, 2]), tl.tensor([0, 3])] = 7.0
    x[x > 50] = 0.0
    a[0] = 100.0
    a[1, 1:3] = [-1.0, -2.0]
    a[[2, 2], [0, 3]] = 7.0
    a[a > 50] = 0.0
    np.testing.assert_array_equal(x.numpy(), a)
    view = x[:, 1]
    view[tl.tensor([0, 2])] = 5.0  # advanced assignment into a view reaches the base
    np.testing.assert_array_equal(x.numpy()[[0, 2], 1], [5.0, 5.0])


def test_masked_fill_inplace():
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
    x.masked_fill_(tl.tensor([True, False]), -1.0)
    np.testing.assert_array_equal(x.numpy(), [[-1.0, 2.0], [-1.0, 4.0]])


# --- in-place ops and autograd ------------------------------------------------------------------


def test_inplace_on_a_leaf_requiring_grad_raises_outside_no_grad():
    w = tl.tensor([1.0, 2.0], requires_grad=True)
    for op in (
        lambda: w.add_(1.0),
        lambda: w.mul_(2.0),
        lambda: w.fill_(0.0),
        lambda: w.zero_(),
        lambda: w.copy_(tl.ones(2)),
        lambda: w.uniform_(),
        lambda: w.normal_(),
        lambda: w.clamp_(min=0.0),
        lambda: w.sub_(1.0),
        lambda: w.div_(2.0),
    ):
        with pytest.raises(tl.AutogradError, match="no_grad"):
            op()
    with pytest.raises(tl.AutogradError):
        w[0] = 5.0
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0])  # nothing was written
    with tl.no_grad():  # what an optimizer step does
        w.add_(tl.tensor([0.5, 0.5]), alpha=-2.0)
        w.mul_(2.0)
    np.testing.assert_array_equal(w.detach().numpy(), [0.0, 2.0])
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_optimizer_style_update_then_backward_again():
    w = tl.tensor([1.0, -1.0], requires_grad=True)
    for _ in range(3):
        w.grad = None
        loss = (w * w).sum()
        loss.backward()
        with tl.no_grad():
            w.add_(w.grad, alpha=-0.25)
    np.testing.assert_allclose(w.detach().numpy(), [0.125, -0.125])


def test_inplace_change_to_a_saved_tensor_raises_at_backward():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    w = tl.tensor([3.0, 4.0])
    y = x * w  # Mul saves w for x's gradient
    w.mul_(2.0)
    with pytest.raises(tl.AutogradError, match="modified by an in-place operation"):
        y.sum().backward()


def test_inplace_change_through_a_view_of_a_saved_tensor_raises():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    w = tl.tensor([[3.0, 4.0], [5.0, 6.0]])
    y = x * w  # saves w
    w[1].fill_(0.0)  # a view shares the version counter of its base
    with pytest.raises(tl.AutogradError, match="in-place"):
        y.sum().backward()
    z = x * w.T  # saves a view of w; a write to the base invalidates it too
    w.add_(1.0)
    with pytest.raises(tl.AutogradError, match="in-place"):
        z.sum().backward()


def test_version_counter_counts_writes():
    w = tl.tensor([1.0, 2.0])
    v0 = w._version[0]
    w.add_(1.0)
    w[0] = 3.0
    w.T.mul_(2.0)
    assert w._version[0] >= v0 + 3


def test_unmodified_saved_tensors_backprop_fine():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    w = tl.tensor([3.0, 4.0])
    y = x * w
    other = tl.tensor([0.0, 0.0])
    other.add_(1.0)  # an unrelated in-place op
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_inplace_on_a_non_leaf_in_the_graph_raises():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    with pytest.raises(tl.AutogradError):
        y.add_(1.0)


# --- gradients at ties and kinks (where finite differences are not defined) ------------------------


def test_gradients_at_ties_follow_pytorch():
    x = tl.tensor([1.0, 3.0, 3.0], requires_grad=True)
    x.amax().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.5])  # amax splits evenly
    x.grad = None
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.5])  # so does a full max()
    x.grad = None
    y = tl.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    y.max(1).values.sum().backward()
    assert y.grad.numpy().sum() == 1.0  # max(dim) sends it to one winning index
    np.testing.assert_array_equal(y.grad.numpy()[0, 0], 0.0)
    a = tl.tensor([2.0, 1.0], requires_grad=True)
    b = tl.tensor([2.0, 5.0], requires_grad=True)
    tl.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 0.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 1.0])


def test_gradients_at_kinks():
    x = tl.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0])  # relu'(0) = 0
    x.grad = None
    x.abs().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [-1.0, 0.0, 1.0])  # abs'(0) = 0
    x.grad = None
    x.clamp(0.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 1.0])  # boundary passes (PyTorch)


def test_prod_gradient_with_zeros_is_exact():
    x = tl.tensor(
        [[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], dtype=tl.float64, requires_grad=True
    )
    x.prod(1).sum().backward()
    np.testing.assert_array_equal(
        x.grad.numpy(), [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]]
    )


def test_leaf_grads_are_private_buffers():
    """Two leaves fed by one upstream gradient (z = x + y passes g to both unchanged) must not
    share a grad buffer with each other or with the gradient passed in: an optimizer's
    ``x.grad.zero_()`` must not clear ``y.grad``."""
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = tl.tensor([3.0, 4.0], requires_grad=True)
    g = tl.tensor([1.0, 1.0])
    (x + y).backward(g)
    (x + y).backward(g)
    x.grad.zero_()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0])
    v = tl.tensor([[1.0, 2.0]], requires_grad=True)
    v.reshape(2).backward(g)  # the leaf's grad would otherwise be a view of g
    v.grad.mul_(5.0)
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0])


def test_the_graph_keeps_only_what_backward_reads():
    """A computed tensor the program dropped is freed when no backward formula needs it: the
    graph links to its node, and ``x * c`` / ``x / c`` with a constant ``c`` do not save ``x``.
    Gradients are unchanged (d/dw of (w + 1) * 0.5 / 4 is 0.125)."""
    import weakref

    w = tl.ones(3, requires_grad=True)
    h = w + 1.0
    ref = weakref.ref(h)
    y = (h * 0.5) / 4.0
    del h
    assert ref() is None
    y.sum().backward()
    assert w.grad.tolist() == [0.125, 0.125, 0.125]
    a, b = tl.tensor([2.0], requires_grad=True), tl.tensor([3.0], requires_grad=True)
    (a * b + a / b).backward()  # both operands need grads: both are saved
    assert a.grad.tolist() == pytest.approx([3.0 + 1 / 3]) and b.grad.tolist() == pytest.approx(
        [2.0 - 2.0 / 9]
    )
