"""The numpy backend's ``erf`` without scipy: ``math.erf`` element by element (``_erf_libm``).

scipy is optional for torchlight-tensor, so the fallback must give the same numbers on every input
the backend hands it, 0-d arrays included (``np.frompyfunc`` returns a bare Python float for those,
which once made ``tl.gelu(tl.tensor(0.5))`` fail without scipy). ``nox -s minimal`` runs this whole
suite in an environment without scipy; here the fallback is also swapped in explicitly so that the
dev environment (which has scipy) checks it too. The oracle is ``math.erf`` itself, applied by hand.
"""

import math

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.backend import numpy_ops
from torchlight.tensor.backend.numpy_ops import erf_libm as _erf_libm


def _oracle(a):
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(a, dtype=np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_math_erf_and_keeps_the_dtype(dtype):
    a = np.linspace(-4, 4, 33, dtype=dtype)
    r = _erf_libm(a)
    assert r.dtype == dtype and r.shape == a.shape
    np.testing.assert_allclose(
        r, _oracle(a), rtol=1e-6 if dtype == np.float32 else 1e-15, atol=1e-7
    )


def test_zero_dimensional_input_gives_an_array():
    r = _erf_libm(np.array(0.5, dtype=np.float32))
    assert isinstance(r, np.ndarray) and r.shape == () and r.dtype == np.float32
    assert r == np.float32(math.erf(0.5))


def test_non_contiguous_input_and_out():
    base = np.arange(24, dtype=np.float32).reshape(4, 6) / 10 - 1.2
    view = base[:, ::2].T  # strided and transposed
    out = np.empty(view.shape, dtype=np.float32)
    assert _erf_libm(view, out=out) is out
    np.testing.assert_allclose(out, _oracle(view), rtol=1e-6, atol=1e-7)


@pytest.fixture
def without_scipy_erf(monkeypatch):
    monkeypatch.setattr(numpy_ops, "erf", _erf_libm)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_a_scalar_tensor_without_scipy(without_scipy_erf, approximate):
    x = tl.tensor(0.5, requires_grad=True)
    y = tl.gelu(x, approximate)
    if approximate == "none":
        cdf = 0.5 * (1 + math.erf(0.5 / math.sqrt(2)))
        dcdf = math.exp(-0.125) / math.sqrt(2 * math.pi)
    else:
        c = math.sqrt(2 / math.pi)
        t = math.tanh(c * (0.5 + 0.044715 * 0.125))
        cdf = 0.5 * (1 + t)
        dcdf = 0.5 * (1 - t * t) * c * (1 + 3 * 0.044715 * 0.25)
    assert y.item() == pytest.approx(0.5 * cdf, rel=1e-6)
    y.backward()
    assert x.grad.item() == pytest.approx(cdf + 0.5 * dcdf, rel=1e-5)


def test_backend_erf_op_without_scipy(without_scipy_erf):
    x = np.array([[-1.0, 0.0, 2.0], [0.25, -3.0, 1.5]], dtype=np.float32).T  # non-contiguous
    out = np.empty(x.shape, dtype=np.float32)
    numpy_ops.MAP["erf"](x, out)
    np.testing.assert_allclose(out, _oracle(x), rtol=1e-6, atol=1e-7)
