"""The numpy (``cpu``) backend runs the conformance kit like every other backend."""

from tltensor_helpers import require_distribution

require_distribution("torchlight-testing")

from torchlight.testing import BackendConformance  # noqa: E402


class TestNumpyConformance(BackendConformance):
    backend_name = "numpy"


def test_where_into_one_of_its_inputs():
    """The numpy backend writes ``b`` first and then ``a`` where ``cond`` holds; an ``out`` that
    is ``a`` or ``b`` itself still gets ``cond ? a : b``."""
    import numpy as np

    import torchlight as tl

    cond = np.array([True, False, True, False])
    for into in ("a", "b"):
        a, b, c = (
            tl.tensor([1.0, 2.0, 3.0, 4.0]),
            tl.tensor([-1.0, -2.0, -3.0, -4.0]),
            tl.tensor(cond),
        )
        out = a if into == "a" else b
        a.backend.where(c._td, a._td, b._td, out._td)
        np.testing.assert_array_equal(out.numpy(), [1.0, -2.0, 3.0, -4.0])
