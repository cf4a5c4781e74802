"""``tl.rand`` / ``tl.randn`` on the cuda backend are drawn on the device (the ``random``
capability): reproducible under ``tl.manual_seed`` and per ``tl.Generator``, independent of other
generators' draws, uniform in [0, 1) / standard normal by their moments, and nothing uploaded."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.cuda import transfers
from torchlight.backends.cuda.spec import SPEC

pytestmark = pytest.mark.skipif(
    not SPEC.is_available(), reason=f"cuda backend unavailable here: {SPEC.why_unavailable()}"
)


def test_seeded_fills_repeat_and_differ():
    tl.manual_seed(7)
    a, b = tl.rand(300, device="cuda").numpy(), tl.rand(300, device="cuda").numpy()
    tl.manual_seed(7)
    g = tl.Generator().manual_seed(99)
    tl.rand(50, device="cuda", generator=g)  # another generator's draw in between changes nothing
    a2, b2 = tl.rand(300, device="cuda").numpy(), tl.rand(300, device="cuda").numpy()
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    assert (a != b).mean() > 0.99
    tl.manual_seed(8)
    assert (tl.rand(300, device="cuda").numpy() != a).mean() > 0.99


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_moments(dtype):
    tl.manual_seed(0)
    n = 4000
    u = tl.rand(n, dtype=dtype, device="cuda").numpy()
    z = tl.randn(40, 100, dtype=dtype, device="cuda").numpy()
    assert u.dtype == dtype.np and z.shape == (40, 100)
    assert u.min() >= 0.0 and u.max() < 1.0
    # mean 1/2 and variance 1/12 within ~5 standard errors; normal: mean 0, variance 1
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n) and abs(u.var() - 1 / 12) < 0.01
    assert abs(z.mean()) < 5 / np.sqrt(n) and abs(z.var() - 1) < 0.1
    assert len(np.unique(u)) > 0.99 * n  # not one repeated per-thread value


def test_no_host_upload():
    tl.rand(10, device="cuda")
    with transfers.counting() as c:
        x = tl.randn(3, 5, device="cuda", requires_grad=True)
    assert (c.h2d, c.d2h) == (0, 0) and x.requires_grad and x.shape == (3, 5)
