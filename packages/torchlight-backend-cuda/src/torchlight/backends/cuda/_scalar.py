"""The scalar op tables (``torchlight.tensor.backend.scalar_ops``) as CUDA device functions.

The formulas and op codes live in torchlight-tensor, shared with the numba CPU backend, so both
compute the same stable forms; a kernel is compiled per dtype family and ndim, not per op.
``identity`` is the CUDA backend's own: dtype-changing copies use it with a cast on the store.
"""

from numba import cuda

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
    "identity",
    "sigmoid",
]

_dev = cuda.jit(device=True)
_ops = compile_ops(_dev)
sigmoid = _ops.sigmoid
unary_float, unary_int, unary_bool = _ops.unary_float, _ops.unary_int, _ops.unary_bool
binary_float, binary_int, compare = _ops.binary_float, _ops.binary_int, _ops.compare


@_dev
def identity(op, x):
    return x
