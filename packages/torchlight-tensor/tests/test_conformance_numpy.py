"""The numpy (``cpu``) backend runs the conformance kit like every other backend."""

from tltensor_helpers import require_distribution

require_distribution("torchlight-testing")

from torchlight.testing import BackendConformance  # noqa: E402


class TestNumpyConformance(BackendConformance):
    backend_name = "numpy"
