"""``torchlight.cuda``'s queries against the real cuda backend, on a GPU or under numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1`` before numba is imported); skipped without either."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.cuda.spec import SPEC

pytestmark = pytest.mark.skipif(
    not SPEC.is_available(), reason=f"cuda backend unavailable here: {SPEC.why_unavailable()}"
)


def test_cuda_namespace_answers_from_the_backend():
    assert tl.cuda.is_available() and tl.cuda.device_count() == 1 and tl.cuda.current_device() == 0
    name = tl.cuda.get_device_name()
    assert isinstance(name, str) and name and name != "cuda"
    tl.cuda.synchronize()
    tl.cuda.empty_cache()
    tl.cuda.set_device(0)
    with pytest.raises(tl.BackendError):
        tl.cuda.set_device(1)
    assert tl.accelerator.is_available() and tl.accelerator.current_accelerator() == "cuda:0"


def test_cuda_tensors_report_pytorch_metadata_and_refuse_cpu_mixing():
    x = tl.ones(3, device=tl.device("cuda", 0))
    assert x.device == "cuda" and x.is_cuda and x.get_device() == 0
    assert x.type() == "torch.cuda.FloatTensor"
    with pytest.raises(tl.BackendError, match="different devices"):
        x + tl.ones(3, device="cpu")
    # not host memory: from_numpy stays on the cpu, as in PyTorch
    assert tl.from_numpy(np.ones(2)).device == "cpu"
    with pytest.raises(tl.DTypeError, match="host memory"):
        x.pin_memory()
