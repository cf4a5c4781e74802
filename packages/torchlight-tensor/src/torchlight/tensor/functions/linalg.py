"""Matrix multiplication with PyTorch's rules for 1-D operands and broadcast batch dims.

For ``C = A B`` with ``A: (n, k)``, ``B: (k, m)``: ``dL/dA = dL/dC Bᵀ`` and ``dL/dB = Aᵀ dL/dC``.
The batch dims are broadcast *before* the product by a differentiable ``expand``, so the product
itself sees equal batch dims and the expand's backward sums gradients over broadcast batches.
"""

import numpy as np

from torchlight.autograd import Function

from ..dispatch import alloc, same_backend
from ..errors import ShapeError
from ..indexing import shape_broadcast
from .pointwise import ndarray_operand, operands

__all__ = ["MatMul", "matmul"]


class MatMul(Function):
    r"""Autograd function of a matrix product of equal-batch operands:
    :math:`\partial L/\partial A = G B^\top`, :math:`\partial L/\partial B = A^\top G`.
    """
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        out = alloc(a.shape[:-1] + (b.shape[-1],), a.dtype, a.backend)
        a.backend.matmul(a._td, b._td, out._td)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g @ b.transpose(-1, -2) if ctx.needs_input_grad[0] else None
        gb = a.transpose(-1, -2) @ g if ctx.needs_input_grad[1] else None
        return ga, gb


def matmul(a, b):
    """``a @ b`` with PyTorch's rules (vectors, broadcast batch dimensions); behind
    :func:`torchlight.matmul`, whose docstring gives the shapes.
    """
    from ..tensor import Tensor

    if isinstance(a, np.ndarray):
        a = ndarray_operand(a, b)
    b = ndarray_operand(b, a)
    if not isinstance(b, Tensor):
        raise ShapeError(f"matmul: expected a tensor on the right, got {type(b).__name__}")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: both arguments need at least 1 dimension, got shapes {a.shape} and {b.shape}")
    a_shape, b_shape = a.shape, b.shape
    same_backend(a, b)
    a, b = operands(a, b)
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a = a.unsqueeze(0)
    if b_vec:
        b = b.unsqueeze(-1)
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"matmul: shapes {a_shape} and {b_shape} cannot be multiplied "
            f"({a.shape[-1]} columns vs {b.shape[-2]} rows)"
        )
    batch = shape_broadcast(a.shape[:-2], b.shape[:-2])
    if batch is None:  # name the operands' full shapes, not only their batch dims
        raise ShapeError(
            f"matmul: shapes {a_shape} and {b_shape} cannot be multiplied: batch dims "
            f"{a.shape[:-2]} and {b.shape[:-2]} are not broadcastable"
        )
    if b.ndim == 2 and a.ndim > 2:
        # (..., n, k) @ (k, m): fold the batch into rows and make ONE gemm. Expanding b over
        # the batch instead would run a gemm per batch element and, in backward, a gemm per
        # element plus a sum for dL/db; folded, dL/db = a2ᵀ g2 is a single product too.
        a2 = a.reshape(-1, a.shape[-1])
        out = MatMul.apply(a2, b).reshape(a.shape[:-1] + (b.shape[-1],))
    else:
        out = MatMul.apply(a.expand(batch + a.shape[-2:]), b.expand(batch + b.shape[-2:]))
    if b_vec:
        out = out.squeeze(-1)
    if a_vec:
        out = out.squeeze(-1 if b_vec else -2)
    return out
