"""The elementwise and reduction parts of the kit on a ``NumbaBackend(numpy_ufuncs=False)``: every
map/zip op and every reduction through the numba kernels (by default the ops and sizes numpy does
faster are routed to numpy's ufuncs and reduce, so the default run does not reach those kernel
branches)."""

import pytest

import torchlight as tl
from torchlight.backends.numba.backend import NumbaBackend
from torchlight.tensor.backend import registry
from torchlight.testing import BackendConformance


@pytest.fixture(autouse=True, scope="module")
def kernels_backend():
    """Registered only while this module runs, so other tests never see it."""
    tl.register_backend("numba-kernels", NumbaBackend(numpy_ufuncs=False))
    yield
    for table in (registry._specs, registry._loaded):  # no public unregister in the registry
        table.pop("numba-kernels", None)


_KEEP = {
    "test_map",
    "test_copy_casts",
    "test_map_large_values_are_stable",
    "test_zip",
    "test_zip_in_place",
    "test_zip_broadcasting_property",
    "test_where",
    "test_reduce",
    "test_reduce_edges",
    "test_reduce_sum_precision",
    "test_protocol_surface",
}


class TestNumbaKernelsConformance(BackendConformance):
    backend_name = "numba-kernels"


for _name in dir(BackendConformance):
    if _name.startswith("test_") and _name not in _KEEP:
        setattr(TestNumbaKernelsConformance, _name, None)  # not collected
