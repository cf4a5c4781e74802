"""The numba backend runs the conformance kit (JIT compiled, ``small`` inputs)."""

from torchlight.testing import BackendConformance


class TestNumbaConformance(BackendConformance):
    backend_name = "numba"
