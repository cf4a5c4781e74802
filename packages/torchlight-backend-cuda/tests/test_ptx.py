"""Every kernel the backend launches compiles for a real GPU — checked without one.

The simulator runs kernels as Python, so it never type-checks them; a kernel that the simulator
runs happily can still fail numba-cuda's typing or NVVM. ``cuda.compile_ptx`` needs only NVVM
(``pip install 'numba-cuda[cu13]'``), not a driver: this test drives every primitive on
host-array stand-ins for device arrays (``numba.typeof`` gives both the same array type), with
the launcher replaced by "compile this kernel for these argument types to PTX".
Skipped under the simulator and where NVVM is missing.
"""

import numpy as np
import pytest

from torchlight.tensor import dtypes
from torchlight.tensor.storage import TensorData


def _nvvm_ok():
    try:
        from numba import config, cuda

        if config.ENABLE_CUDASIM:
            return False, "under the CUDA simulator"

        def f(x):
            x[0] = 1.0

        from numba import types

        cuda.compile_ptx(f, (types.float32[::1],), cc=(8, 0))
        return True, ""
    except Exception as exc:
        return False, f"NVVM unavailable ({type(exc).__name__}: {str(exc)[:200]})"


_OK, _WHY = _nvvm_ok()
pytestmark = [pytest.mark.skipif(not _OK, reason=_WHY), pytest.mark.slow]


def _td(shape, dtype, permute=False):
    arr = np.zeros(int(np.prod(shape)) + 4, dtype=dtypes.as_dtype(dtype).np)
    td = TensorData(arr, shape)
    if permute and len(shape) >= 2:
        td = TensorData(arr, tuple(reversed(shape))).permute(tuple(reversed(range(len(shape)))))
    return td


def test_every_kernel_compiles_to_ptx(monkeypatch):
    import numba
    from numba import cuda

    from torchlight.backends.cuda import backend as B

    compiled = {}
    failures = []

    def compile_only(kernel, grid, block, *args):
        sig = tuple(numba.typeof(a) for a in args)
        key = (id(kernel), sig)
        if key in compiled:
            return
        try:
            compiled[key] = cuda.compile_ptx(kernel.py_func, sig, cc=(8, 0))
        except Exception as exc:  # collect them all, then fail once
            failures.append(
                f"{kernel.py_func.__qualname__}{sig}: {type(exc).__name__}: {str(exc)[:400]}"
            )
            compiled[key] = None

    monkeypatch.setattr(B, "launch", compile_only)
    # the bounds flag lives in host-mapped memory, which needs a driver: a host stand-in types alike
    monkeypatch.setattr(B.CudaBackend, "_bounds_flag", lambda self: np.zeros(4, np.int64))
    # device functions compile for "the current device"; there is none here: pretend sm_80
    import importlib
    import types as pytypes

    disp = importlib.import_module(type(B.S.sigmoid).__module__)
    monkeypatch.setattr(
        disp, "get_current_device", lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))
    )
    be = B.CudaBackend()
    shape = (3, 4, 5)
    for dt in ("float32", "float64", "int64", "bool"):
        a, out = _td(shape, dt), _td(shape, dt)
        ap = _td(shape, dt, permute=True)
        un = {"float32": "exp", "float64": "tanh", "int64": "neg", "bool": "logical_not"}[dt]
        be.map(un, a, out)
        be.map(un, ap, out)
        be.map("copy", a, _td(shape, "float32"))
        be.zip("add" if dt != "bool" else "logical_or", a, ap, out)
        be.zip("add", a, a, out)
        be.zip("lt", a, ap, _td(shape, "bool"))
        be.where(_td(shape, "bool"), a, ap, out)
        be.gather(a, 1, _td(shape, "int64"), out)
        be.take(a, 1, _td((4,), "int64"), out)
        if dt != "bool":
            be.reduce("sum", a, (1,), _td((3, 1, 5), dt))
            be.reduce("max", ap, (0, 2), _td((1, 4, 1), dt))
            be.reduce("argmax", a, (2,), _td((3, 4, 1), "int64"))
            be.matmul(_td((2, 3, 4), dt), _td((2, 4, 5), dt, permute=True), _td((2, 3, 5), dt))
            be.scatter_add(out, 1, _td(shape, "int64"), a)
            be.put_add(out, 1, _td((4,), "int64"), a)
        else:
            be.reduce("max", a, (1,), _td((3, 1, 5), dt))
        if dt.startswith("float"):
            be.softmax(a, 1, out, False)
            be.softmax_backward(a, ap, 2, out, True)
            stat = _td((3, 4, 1), dt)
            w = _td((5,), dt)
            be.layernorm(a, w, w, 1e-5, out, stat, stat)
            be.layernorm(a, None, None, 1e-5, out, stat, stat)
            be.layernorm_backward(a, ap, w, stat, stat, out, w, w)
            be.layernorm_backward(a, ap, None, stat, stat, out, None, None)
            xl, tgt, vec = _td((3, 5), dt, permute=True), _td((3,), "int64"), _td((3,), dt)
            be.cross_entropy(xl, tgt, vec, vec, vec)
            be.cross_entropy_backward(xl, tgt, vec, vec, vec, _td((3, 5), dt))
            be.adam_step(
                a,
                a,
                a,
                a,
                beta1=0.9,
                beta2=0.99,
                eps=1e-8,
                decay=0.99,
                l2=0.0,
                maximize=False,
                step_size=0.1,
                bias_correction2_sqrt=0.1,
            )
            be.adagrad_step(a, a, a, clr=0.1, l2=0.0, eps=1e-10)
    assert not failures, "\n".join(failures)
    assert len(compiled) > 40
