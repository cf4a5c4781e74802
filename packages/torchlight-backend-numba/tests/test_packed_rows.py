"""The packed softmax kernels (``_fused.softmax_packed`` / ``softmax_backward_packed``): rows
that lie one after another in memory (C-contiguous, the reduced dim last) take them, every other
layout the general row kernels; both give the same bits, write only ``out``'s elements and agree
with a float64 numpy reference, on the serial and the parallel compilations."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlight.backends.numba import _fused, backend
from torchlight.backends.numba.backend import NumbaBackend
from torchlight.tensor.indexing import contiguous_strides
from torchlight.tensor.storage import TensorData

BK = NumbaBackend()


def _counting(monkeypatch, name):
    """Count the calls of the ``_fused`` kernel ``name`` (the backend looks it up per call)."""
    calls = []
    kern = getattr(_fused, name)

    class Counted:
        def pick(self, work, minimum=None):
            calls.append(work)
            return kern.pick(work, minimum)

    monkeypatch.setattr(_fused, name, Counted())
    return calls


def _in_buffer(x, offset):
    """``x`` copied into a larger NaN buffer at ``offset``: a C-contiguous TensorData with an offset."""
    buf = np.full(x.size + offset + 3, np.nan, x.dtype)
    buf[offset : offset + x.size] = x.reshape(-1)
    return buf, TensorData(buf, x.shape, contiguous_strides(x.shape), offset)


def _reference(x, dim, log):
    x = x.astype(np.float64)
    lse = np.log(np.exp(x - x.max(dim, keepdims=True)).sum(dim, keepdims=True)) + x.max(
        dim, keepdims=True
    )
    return x - lse if log else np.exp(x - lse)


shapes = st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(
    shape=shapes,
    dtype=st.sampled_from([np.float32, np.float64]),
    log=st.booleans(),
    offsets=st.tuples(st.integers(0, 5), st.integers(0, 5)),
)
def test_packed_softmax_forward_and_backward(shape, dtype, log, offsets):
    rng = np.random.default_rng(abs(hash((shape, offsets))) % 2**32)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    dim = len(shape) - 1
    _, a = _in_buffer(x, offsets[0])
    obuf, out = _in_buffer(np.zeros_like(x), offsets[1])
    BK.softmax(a, dim, out, log)
    got = obuf[offsets[1] : offsets[1] + x.size].reshape(shape)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, _reference(x, dim, log), rtol=tol, atol=tol)
    # only out's elements are written
    assert np.isnan(obuf[: offsets[1]]).all() and np.isnan(obuf[offsets[1] + x.size :]).all()

    # the general kernel on the same layout runs the same row helper: the same bits
    gbuf, gen = _in_buffer(np.zeros_like(x), offsets[1])
    with mock.patch.object(backend, "_packed", lambda *a: False):
        BK.softmax(a, dim, gen, log)
    np.testing.assert_array_equal(gbuf, obuf)

    _, yv = _in_buffer(got, 1)
    _, gv = _in_buffer(g, offsets[0])
    dbuf, dx = _in_buffer(np.zeros_like(x), offsets[1])
    BK.softmax_backward(yv, gv, dim, dx, log)
    y64, g64 = got.astype(np.float64), g.astype(np.float64)
    want = (
        g64 - np.exp(y64) * g64.sum(dim, keepdims=True)
        if log
        else y64 * (g64 - (g64 * y64).sum(dim, keepdims=True))
    )
    np.testing.assert_allclose(
        dbuf[offsets[1] : offsets[1] + x.size].reshape(shape), want, rtol=tol * 10, atol=tol * 10
    )
    assert np.isnan(dbuf[: offsets[1]]).all() and np.isnan(dbuf[offsets[1] + x.size :]).all()


@pytest.mark.parametrize("log", [False, True])
def test_packed_rows_take_the_packed_kernels(path, monkeypatch, log):
    fwd = _counting(monkeypatch, "softmax_packed")
    bwd = _counting(monkeypatch, "softmax_backward_packed")
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    _, a = _in_buffer(x, 2)
    obuf, out = _in_buffer(np.zeros_like(x), 0)
    BK.softmax(a, 2, out, log)
    _, dx = _in_buffer(np.zeros_like(x), 0)
    BK.softmax_backward(out, a, 2, dx, log)
    assert len(fwd) == 1 and len(bwd) == 1
    np.testing.assert_allclose(
        obuf[:24].reshape(x.shape), _reference(x, 2, log), rtol=2e-6, atol=2e-6
    )

    # the reduced dim not last, a transposed input or a broadcast gradient: the general kernels
    BK.softmax(a, 1, out, log)
    t = TensorData(a.storage, (2, 4, 3), (12, 1, 4), 2)
    _, out2 = _in_buffer(np.zeros((2, 4, 3), np.float32), 0)
    BK.softmax(t, 2, out2, log)
    BK.softmax_backward(out, TensorData(a.storage, (2, 3, 4), (0, 0, 1), 2), 2, dx, log)
    assert len(fwd) == 1 and len(bwd) == 1
    np.testing.assert_allclose(
        out2.storage[:24].reshape(2, 4, 3),
        _reference(x.transpose(0, 2, 1), 2, log),
        rtol=2e-6,
        atol=2e-6,
    )
