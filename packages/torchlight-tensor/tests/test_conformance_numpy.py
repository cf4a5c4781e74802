"""The numpy (``cpu``) backend runs the conformance kit like every other backend."""

from torchlight.testing import BackendConformance


class TestNumpyConformance(BackendConformance):
    backend_name = "numpy"

