"""The scalar op tables (``torchlight.tensor.backend.scalar_ops``) compiled for the CPU.

The formulas and op codes live in torchlight-tensor, shared with the CUDA backend; here they are
compiled with ``inline="always"``, so numba splices each body into the kernel that calls it
(a call between two compiled functions costs ~15 ns per element otherwise) and the kernel,
cached on disk, carries them. ``error_model="numpy"``: no Python exceptions in the hot loop.
"""

from numba import njit
from torchlight.tensor.backend.scalar_ops import CMP_CODES, MAP_CODES, ZIP_CODES, compile_ops

__all__ = [
    "MAP_CODES",
    "ZIP_CODES",
    "CMP_CODES",
    "unary_float",
    "unary_int",
    "unary_bool",
    "binary_float",
    "binary_int",
    "compare",
    "sigmoid",
]

_ops = compile_ops(njit(error_model="numpy", fastmath=False, inline="always"))
sigmoid = _ops.sigmoid
unary_float, unary_int, unary_bool = _ops.unary_float, _ops.unary_int, _ops.unary_bool
binary_float, binary_int, compare = _ops.binary_float, _ops.binary_int, _ops.compare
