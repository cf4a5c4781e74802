"""DLPack on the cuda backend: a tensor's device memory is exported without a copy (strides and
offset of views kept) and imported back as a cuda tensor on the same memory.

On a GPU the capsule describes CUDA memory (device type 2) and ``tl.from_dlpack`` of it gives a
cuda tensor; under numba's CUDA simulator the "device" memory is host memory, exported as such
(device type 1), and numpy reads it in place. Either way a write through the importer must be
seen by the tensor.
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.cuda._launch import SIMULATOR
from torchlight.backends.cuda.spec import SPEC

pytestmark = pytest.mark.skipif(
    not SPEC.is_available(), reason=f"cuda backend unavailable here: {SPEC.why_unavailable()}"
)


def _view():
    base = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    return base[1:, ::2].T, tl.tensor(base, device="cuda")[1:, ::2].T


def test_the_backend_declares_the_capability():
    assert "dlpack" in tl.get_backend("cuda").capabilities


def test_export_is_zero_copy_and_keeps_the_view():
    a, t = _view()
    assert t.__dlpack_device__()[0] == (1 if SIMULATOR else 2)
    other = tl.from_dlpack(t)
    assert other.device == ("cpu" if SIMULATOR else "cuda")
    assert other.stride() == t.stride() and other.shape == t.shape
    np.testing.assert_array_equal(other.to_numpy(), a)
    other.fill_(-1.0)  # written through the importer, read through the exporter
    np.testing.assert_array_equal(t.to_numpy(), np.full(a.shape, -1.0, np.float32))


@pytest.mark.skipif(
    not SIMULATOR, reason="numpy reads host memory only; on a GPU the memory is CUDA memory"
)
def test_numpy_reads_simulated_device_memory_in_place():
    a, t = _view()
    view = np.from_dlpack(t)
    np.testing.assert_array_equal(view, a)
    view[0, 0] = 100.0
    assert t[0, 0].item() == 100.0


def test_host_memory_moves_to_the_device_by_copy_only():
    a = np.arange(4.0)
    t = tl.from_dlpack(a, device="cuda")
    assert t.device == "cuda"
    np.testing.assert_array_equal(t.to_numpy(), a)
    with pytest.raises(BufferError, match="copy=False"):
        tl.from_dlpack(a, device="cuda", copy=False)


def test_array_copy_false_refuses_device_memory():
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(tl.ones(2, device="cuda"), copy=False)
    np.testing.assert_array_equal(np.asarray(tl.ones(2, device="cuda")), [1.0, 1.0])
