"""Test configuration for torchlight-nn: one OpenBLAS thread.

OpenBLAS's worker threads spin while they wait for work; on a small, busy runner (2 cores shared
with other jobs) that turns a 0.02 ms matmul into a 10 ms one, and the training tests from 1 s
into 25 s. These tests multiply small matrices, so one BLAS thread is faster and steadier.

``OPENBLAS_NUM_THREADS`` is read when OpenBLAS loads, so it works only if numpy is not imported
yet; otherwise (another distribution's conftest imported it first) the thread count is set at
runtime through OpenBLAS's own C entry point, found in the loaded libraries — what
``threadpoolctl`` does, without the dependency. Failing to find it changes nothing.
"""

import ctypes
import os
import sys


def _limit_loaded_openblas(threads=1):
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return
    names = (
        "scipy_openblas_set_num_threads64_",
        "scipy_openblas_set_num_threads",
        "openblas_set_num_threads64_",
        "openblas_set_num_threads",
    )
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in names:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(threads)
                break


if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
elif "OPENBLAS_NUM_THREADS" not in os.environ:
    _limit_loaded_openblas()
