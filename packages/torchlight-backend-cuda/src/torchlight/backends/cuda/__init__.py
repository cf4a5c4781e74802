"""torchlight.backends.cuda: numba-cuda kernels, tensors resident in GPU memory
(distribution ``torchlight-backend-cuda``).

Select it with ``device="cuda"`` (or ``TORCHLIGHT_DEVICE=cuda``). Importing this package or its
entry point (``.spec``) imports neither numba nor the CUDA driver; the kernels compile on first
use. Without a GPU the whole backend runs on numba's CUDA simulator when
``NUMBA_ENABLE_CUDASIM=1`` is set before numba is imported (slow: tests and debugging only).
"""

# PyTorch's torch/__init__ imports torch.backends.cudnn, so programs reach it as an attribute
# (``torch.backends.cudnn.benchmark = True``) without importing it; this package is imported with
# the backend registry's entry points, and importing the switches module costs nothing.
from .. import cudnn  # noqa: E402,F401

__all__ = ["CudaBackend", "SPEC", "matmul"]


def __getattr__(name):
    if name == "CudaBackend":
        from .backend import CudaBackend

        return CudaBackend
    if name == "SPEC":
        from .spec import SPEC

        return SPEC
    if name == "matmul":  # PyTorch's torch.backends.cuda.matmul switches
        from .flags import matmul

        return matmul
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
