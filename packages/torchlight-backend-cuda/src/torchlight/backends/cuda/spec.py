"""The entry point ``cuda`` (group ``torchlight.backends``): cheap, and ``is_available()`` never raises.

Availability is decided without importing numba: numba-cuda must be installed, and either
numba's CUDA simulator is switched on (``NUMBA_ENABLE_CUDASIM=1``) or the CUDA driver library
loads through ``ctypes`` and reports at least one device (``cuInit`` + ``cuDeviceGetCount``).
Every "no" comes with a reason that says what is missing and how to check, which the registry
puts into its ``DeviceUnavailableError`` — there is never a silent fallback to the CPU.
"""

import ctypes
import os
import sys
from importlib import util

from torchlight.tensor.backend.protocol import BackendSpec

__all__ = ["SPEC", "driver_status", "simulator_requested"]

_HOW_TO_CHECK = (
    "check with `nvidia-smi` (driver and GPU) and `python -m torchlight` (every backend's status); "
    "to run the cuda backend without a GPU, on numba's CUDA simulator (slow), set "
    "NUMBA_ENABLE_CUDASIM=1 before Python starts"
)


def simulator_requested() -> bool:
    """True when numba's CUDA simulator is (or will be) in use in this process."""
    numba = sys.modules.get("numba")
    if numba is not None and hasattr(numba, "config"):
        return bool(getattr(numba.config, "ENABLE_CUDASIM", False))
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _driver_candidates():
    if sys.platform.startswith("win"):
        return ["nvcuda.dll"]
    if sys.platform == "darwin":
        return []
    return ["libcuda.so.1", "libcuda.so"]


def driver_status():
    """``(ok, reason)``: does a CUDA driver load here and see at least one GPU? Never raises."""
    names = _driver_candidates()
    lib = None
    errors = []
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            errors.append(name)
    if lib is None:
        tried = (
            f"{' / '.join(errors)} could not be loaded"
            if errors
            else f"there is no CUDA driver for {sys.platform}"
        )
        return False, f"no CUDA driver/GPU was found ({tried}); {_HOW_TO_CHECK}"
    try:
        rc = lib.cuInit(0)
        if rc != 0:
            return (
                False,
                f"no usable CUDA GPU was found: the CUDA driver loaded but cuInit failed with error code {rc} (100 = no CUDA-capable device); {_HOW_TO_CHECK}",
            )
        count = ctypes.c_int(0)
        rc = lib.cuDeviceGetCount(ctypes.byref(count))
        if rc != 0 or count.value < 1:
            return (
                False,
                f"no CUDA GPU was found: the CUDA driver loaded but reports {count.value} devices (error code {rc}); {_HOW_TO_CHECK}",
            )
    except Exception as exc:  # pragma: no cover - exotic driver failures
        return (
            False,
            f"the CUDA driver could not be queried ({type(exc).__name__}: {exc}); {_HOW_TO_CHECK}",
        )
    return True, None


def _numba_cuda_installed() -> bool:
    try:
        return util.find_spec("numba_cuda") is not None or util.find_spec("numba.cuda") is not None
    except Exception:  # a broken numba install makes find_spec("numba.cuda") raise
        return False


def _available():
    if not _numba_cuda_installed():
        return (
            False,
            "numba-cuda is not installed (pip install 'numba-cuda[cu12]', or 'numba-cuda[cu13]' for a CUDA 13 driver)",
        )
    if simulator_requested():
        return True, None
    return driver_status()


def _load():
    from .backend import CudaBackend

    return CudaBackend()


SPEC = BackendSpec("cuda", _load, _available)
