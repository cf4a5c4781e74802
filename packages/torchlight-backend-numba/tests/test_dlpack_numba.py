"""The numba backend keeps its storage in host memory (a flat numpy array), so DLPack and
``__array__`` share it exactly as on the cpu backend: views keep their strides, writes go both
ways."""

import numpy as np

import torchlight as tl


def test_numpy_and_numba_tensors_share_memory_both_ways():
    a = np.arange(12.0).reshape(3, 4)
    t = tl.from_dlpack(a[:, 1:], device="numba")
    assert t.device == "numba" and t.stride() == (4, 1)
    t.mul_(2.0)
    np.testing.assert_array_equal(a[:, 1:], np.arange(12.0).reshape(3, 4)[:, 1:] * 2)
    view = np.from_dlpack(t.T)
    view[0, 0] = -5.0
    assert a[0, 1] == -5.0
    assert np.shares_memory(np.asarray(t, copy=False), a)


def test_ndarray_operands_stay_on_the_numba_backend():
    t = tl.ones(3, device="numba")
    out = np.array([1.0, 2.0, 3.0], dtype=np.float32) + t
    assert isinstance(out, tl.Tensor) and out.device == "numba"
    assert out.tolist() == [2.0, 3.0, 4.0]
