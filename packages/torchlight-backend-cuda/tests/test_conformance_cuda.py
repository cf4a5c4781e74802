"""The cuda backend runs the conformance kit: on a GPU when there is one, else under numba's
CUDA simulator when this pytest process was started with ``NUMBA_ENABLE_CUDASIM=1``
(``nox -s conformance``; ``small`` inputs: ~1k elements, 32x32 matmuls). Without either the
module is skipped — the no-driver error path is tested in ``test_no_driver.py``."""

import pytest

from torchlight.backends.cuda.spec import SPEC
from torchlight.testing import BackendConformance

pytestmark = pytest.mark.skipif(
    not SPEC.is_available(), reason=f"cuda backend unavailable here: {SPEC.why_unavailable()}"
)


class TestCudaConformance(BackendConformance):
    backend_name = "cuda"
    size_profile = "small"
