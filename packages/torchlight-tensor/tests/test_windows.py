"""Sliding windows (``functions/windows.py``): every window as one strided view and its col2im
gradient, against numpy's ``sliding_window_view`` and a loop that adds each window back."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
from torchlight.tensor.functions.windows import unfold_windows


def np_windows(x, kernel, stride, dilation):
    """``(..., *outs, *kernel)``: the windows of the last ``len(kernel)`` dims, by numpy."""
    nd = len(kernel)
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    axes = tuple(range(x.ndim - nd, x.ndim))
    win = np.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)
    index = (slice(None),) * (x.ndim - nd) + tuple(slice(None, None, s) for s in stride)
    return win[index + tuple(slice(None, None, d) for d in dilation)]


def np_windows_grad(shape, g, kernel, stride, dilation):
    """Each window's gradient added back at the positions it was read from (a loop)."""
    nd = len(kernel)
    gx = np.zeros(shape)
    outs = g.shape[g.ndim - 2 * nd : g.ndim - nd]
    for w in np.ndindex(*outs):
        for j in np.ndindex(*kernel):
            pos = tuple(wi * s + ji * d for wi, ji, s, d in zip(w, j, stride, dilation))
            gx[(Ellipsis,) + pos] += g[(Ellipsis,) + w + j]
    return gx


@st.composite
def geometry(draw):
    nd = draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    sizes = tuple(draw(st.integers(d * (k - 1) + 1, 7)) for k, d in zip(kernel, dilation))
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    return lead + sizes, kernel, stride, dilation, draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(geometry(), st.integers(0, 2**31 - 1))
def test_windows_and_their_gradient_match_numpy(case, seed):
    shape, kernel, stride, dilation, transposed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    xt = tl.tensor(x, requires_grad=True)
    src = xt
    if transposed and len(shape) >= 2:  # a non-contiguous input with the same values
        xt = tl.tensor(np.ascontiguousarray(np.swapaxes(x, 0, 1)), requires_grad=True)
        src = xt.transpose(0, 1)
    win = unfold_windows(src, kernel, stride, dilation)
    ref = np_windows(x, kernel, stride, dilation)
    np.testing.assert_array_equal(win.to_numpy(), ref)
    g = rng.standard_normal(ref.shape)
    win.backward(tl.tensor(g))
    got = xt.grad.to_numpy()
    if transposed and len(shape) >= 2:
        got = np.swapaxes(got, 0, 1)
    np.testing.assert_allclose(got, np_windows_grad(shape, g, kernel, stride, dilation), atol=1e-12)


def test_the_windows_gradient_is_differentiable():
    """``create_graph=True``: the col2im backward's own backward reads the windows again."""
    x = tl.randn(2, 6, 5, dtype=tl.float64)

    def input_grad(g):
        with tl.enable_grad():
            xr = x.detach().requires_grad_()
            unfold_windows(xr, (3, 2), (2, 1), (1, 2)).backward(g, create_graph=True)
            return xr.grad

    g = tl.randn(2, 2, 3, 3, 2, dtype=tl.float64, requires_grad=True)
    assert tl.gradcheck(input_grad, (g,))


def test_a_window_larger_than_the_input_is_refused():
    with pytest.raises(tl.ShapeError, match="larger than the padded input size 4"):
        unfold_windows(tl.ones(1, 4, 6), (3, 3), (1, 1), (2, 1))
