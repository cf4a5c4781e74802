"""DLPack both ways: torchlight <-> numpy share memory (views keep strides and offset), and what
cannot be shared (read-only memory, foreign dtypes, negative strides) is copied or refused.

The oracle is numpy: the values a view should hold are those of the same view taken in numpy,
and sharing is checked by writing through one side and reading the other.
"""

import ctypes

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tltensor_helpers import LAYOUTS, Maker, shapes

import torchlight as tl


def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule).decode()


# --- torchlight -> numpy ---------------------------------------------------------------------------
@given(shape=shapes(0, 4, 1, 4), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16))
def test_numpy_reads_every_layout_without_copying(shape, layout, seed):
    a, t = Maker(seed).build(shape, layout)
    view = np.from_dlpack(t)
    np.testing.assert_array_equal(view, a)
    assert view.strides == tuple(s * 8 for s in t.stride())
    assert np.shares_memory(view, np.asarray(t))


@given(
    shape=shapes(1, 3, 1, 4),
    layout=st.sampled_from(("contiguous", "permuted", "sliced", "offset")),
    seed=st.integers(0, 2**16),
)
def test_writes_through_numpy_are_seen_by_the_tensor(shape, layout, seed):
    _, t = Maker(seed).build(shape, layout)
    view = np.from_dlpack(t)
    view[...] = np.arange(view.size, dtype=view.dtype).reshape(view.shape)
    np.testing.assert_array_equal(t.to_numpy(), np.arange(view.size).reshape(view.shape))


def test_dlpack_device_is_the_host():
    assert tl.zeros(2).__dlpack_device__() == (1, 0)


def test_capsule_versions_follow_max_version():
    t = tl.arange(4.0)
    assert _capsule_name(t.__dlpack__()) == "dltensor"
    assert _capsule_name(t.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert _capsule_name(t.__dlpack__(stream=None, dl_device=(1, 0))) == "dltensor"


def test_copy_true_exports_a_copy():
    t = tl.zeros(3)
    a = np.from_dlpack(t, copy=True)
    a[0] = 7.0
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_export_to_another_device_is_refused():
    with pytest.raises(BufferError):
        tl.zeros(2).__dlpack__(dl_device=(2, 0))


def test_a_tensor_that_requires_grad_is_not_exported():
    t = tl.ones(3, requires_grad=True)
    with pytest.raises(BufferError, match="detach"):
        np.from_dlpack(t)
    np.testing.assert_array_equal(np.from_dlpack(t.detach()), np.ones(3, np.float32))


# --- numpy -> torchlight ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "index",
    [
        (slice(None),),
        (slice(1, None), slice(None, None, 2)),
        (slice(None, None, 3), 1),
        (Ellipsis, slice(2, 3)),
    ],
)
@pytest.mark.parametrize("transpose", [False, True])
def test_from_dlpack_keeps_strides_and_offset(index, transpose):
    base = np.arange(60.0).reshape(6, 10)
    a = base[index]
    a = a.T if transpose else a
    t = tl.from_dlpack(a)
    np.testing.assert_array_equal(t.to_numpy(), a)
    assert t.stride() == tuple(s // 8 for s in a.strides)
    assert t.dtype is tl.float64
    assert np.shares_memory(np.asarray(t), base)
    expected = a * 2
    t.mul_(2.0)  # an in-place op on the tensor writes into the numpy array
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize(
    "dtype,expected",
    [(np.float32, tl.float32), (np.float64, tl.float64), (np.int64, tl.int64), (np.bool_, tl.bool)],
)
def test_from_dlpack_shares_every_torchlight_dtype(dtype, expected):
    a = np.zeros((2, 3), dtype=dtype)
    t = tl.from_dlpack(a)
    assert t.dtype is expected
    a[1, 2] = 1
    assert t[1, 2].item() == 1


def test_round_trip_shares_one_buffer():
    t = tl.arange(6.0).reshape(2, 3)
    back = tl.from_dlpack(np.from_dlpack(t))
    back[0, 1] = -1.0
    assert t[0, 1].item() == -1.0
    again = tl.from_dlpack(t)  # a torchlight tensor is a producer too
    again[1, 2] = 9.0
    assert t[1, 2].item() == 9.0


@pytest.mark.parametrize(
    "make,why",
    [
        (lambda: np.arange(4, dtype=np.float16), "float16"),
        (lambda: np.arange(4, dtype=np.int32), "int32"),
        (lambda: np.arange(6.0)[::-1], "negative"),
    ],
)
def test_what_cannot_be_shared_is_copied(make, why):
    a = make()
    t = tl.from_dlpack(a)
    np.testing.assert_array_equal(t.to_numpy(), a.astype(t.dtype.np))
    assert not np.shares_memory(np.asarray(t), a)
    with pytest.raises(BufferError):
        tl.from_dlpack(a, copy=False)


def test_read_only_memory_is_copied_not_written():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = tl.from_dlpack(a)
    t.add_(1.0)
    np.testing.assert_array_equal(a, np.arange(4.0))
    np.testing.assert_array_equal(t.to_numpy(), np.arange(4.0) + 1)
    with pytest.raises(BufferError, match="read-only"):
        tl.from_dlpack(a, copy=False)


def test_copy_true_imports_a_copy():
    a = np.zeros(3)
    t = tl.from_dlpack(a, copy=True)
    t.fill_(5.0)
    np.testing.assert_array_equal(a, np.zeros(3))


def test_empty_and_zero_dim_arrays():
    assert tl.from_dlpack(np.zeros((0, 3))).shape == (0, 3)
    s = tl.from_dlpack(np.array(2.5))
    assert s.shape == () and s.item() == 2.5


def test_from_dlpack_rejects_objects_without_the_protocol():
    with pytest.raises(TypeError, match="__dlpack__"):
        tl.from_dlpack([1.0, 2.0])


# --- PyTorch, when it is installed (an optional oracle, never a dependency) ---------------------------
@pytest.mark.oracle
def test_pytorch_round_trip_shares_memory():
    torch = pytest.importorskip("torch")
    t = tl.arange(6.0).reshape(2, 3).T
    pt = torch.from_dlpack(t)
    assert tuple(pt.stride()) == t.stride()
    pt[0, 1] = 42.0
    assert t[0, 1].item() == 42.0
    back = tl.from_dlpack(torch.arange(4.0))
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.as_tensor(tl.ones(2)).tolist() == [1.0, 1.0]
