"""Matrix multiplication with PyTorch's rules for 1-D operands and broadcast batch dims.

For ``C = A B`` with ``A: (n, k)``, ``B: (k, m)``: ``dL/dA = dL/dC Bᵀ`` and ``dL/dB = Aᵀ dL/dC``.
The batch dims are broadcast *before* the product by a differentiable ``expand``, so the product
itself sees equal batch dims and the expand's backward sums gradients over broadcast batches.
"""

import math

import numpy as np

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from ..base import TensorBase
from ..creation import filled, from_numpy_on
from ..dispatch import alloc, common_backend, contiguous, same_backend, view_of
from ..errors import ShapeError
from ..indexing import shape_broadcast
from .pointwise import ndarray_operand, operands
from .weight_gradients import ProductGradient

__all__ = [
    "MatMul",
    "Linear",
    "as_rows",
    "matmul",
    "linear",
    "mm",
    "bmm",
    "dot",
    "outer",
    "diag",
    "einsum",
    "norm",
]


class MatMul(Function):
    r"""Autograd function of a matrix product of equal-batch operands:
    :math:`\partial L/\partial A = G B^\top`, :math:`\partial L/\partial B = A^\top G`.
    """

    direct_forward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        backend = a.backend if a.backend is b.backend else same_backend(a, b)
        out = alloc(a.shape[:-1] + (b.shape[-1],), a.dtype, backend, a)
        backend.matmul(a._td, b._td, out._td)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        if GradMode.enabled:  # create_graph: the gradients must be recorded ops themselves
            ga = g @ b.transpose(-1, -2) if need_a else None
            gb = a.transpose(-1, -2) @ g if need_b else None
            return ga, gb
        gt = g._td
        ga = _product(gt, _swap_last(b._td), g) if need_a else None
        gb = _product(_swap_last(a._td), gt, g) if need_b else None
        return ga, gb


def _swap_last(td):
    """The view with its last two dims swapped (a batch of transposed matrices), no copy."""
    dims = list(range(td.ndim))
    dims[-2:] = dims[-1], dims[-2]
    return td.permute(dims)


def _product(a, b, like):
    """``a @ b`` of two views with equal batch dims, straight on ``like``'s backend, as a new
    tensor of ``like``'s dtype and class. A backward with no graph to record calls this instead of
    the ``@`` operator, whose checks, promotion and node cost as much as a small product itself."""
    out = alloc(a.shape[:-1] + b.shape[-1:], like.dtype, like.backend, like)
    like.backend.matmul(a, b, out._td)
    return out


class Linear(Function):
    r"""Autograd function of an affine map of rows, :math:`Y = X W^\top + b` for ``X (*, in)``,
    ``W (out, in)``, ``b (out,)`` or ``None``; the leading dims of ``X`` are one batch of
    :math:`N` rows (``G`` is :math:`\partial L/\partial Y` as ``(N, out)`` rows):
    :math:`\partial L/\partial X = G W`, :math:`\partial L/\partial W = G^\top X`,
    :math:`\partial L/\partial b = \sum_n G_n`.

    One node instead of three (transpose, matmul, add), and no reshape nodes around it for a
    batch of sequences: a layer's call costs one ``apply``.
    """

    direct_forward = True

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        backend = common_backend(x, w) if b is None else common_backend(x, w, b)
        xt = x._td if len(x._td.shape) == 2 else _rows_view(x._td) or as_rows(x)._td
        out = alloc(x._td.shape[:-1] + w._td.shape[:1], x.dtype, backend, x)
        ot = out._td if xt is x._td else out._td.reshaped(xt.shape[:1] + w._td.shape[:1])
        backend.matmul(xt, w._td.permute((1, 0)), ot)
        if b is not None:
            backend.zip("add", ot, b._td.expand(ot.shape), ot)
        return out

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        shape = x._td.shape
        if GradMode.enabled:  # create_graph: the gradients must be recorded ops themselves
            if len(shape) != 2:
                g, x = g.reshape(-1, g.shape[-1]), x.reshape(-1, shape[-1])
            gx = (g @ w).reshape(shape) if need_x else None
            gw = g.transpose(0, 1) @ x if need_w else None
            gb = (g.reshape(g.shape[1:]) if g.shape[0] == 1 else g.sum(0)) if need_b else None
            return gx, gw, gb
        if len(shape) != 2:
            g = as_rows(g)
        gx = None
        if need_x:
            gx = _product(g._td, w._td, g)
            if len(shape) != 2:  # a fresh tensor nothing else has seen: reshaped in place
                gx._td = gx._td.reshaped(shape)
        # the weight's and bias's gradients stay unbuilt: a layer used at every step of a loop
        # then gets one product over all its uses (see weight_gradients)
        gw = ProductGradient(g, as_rows(x)) if need_w else None
        gb = ProductGradient(g) if need_b else None
        return gx, gw, gb


def as_rows(t):
    """``t`` of shape ``(*, k)`` as ``(N, k)`` rows: ``t`` itself when 2-D, else a view of it
    (sharing its storage and version counter) where its layout allows one, else a packed copy.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.linalg import as_rows
    >>> as_rows(tl.zeros(2, 3, 4)).shape, as_rows(tl.zeros(2, 3, 4).transpose(0, 1)).shape
    ((6, 4), (6, 4))
    """
    if len(t._td.shape) == 2:
        return t
    rows = _rows_view(t._td)
    if rows is None:  # no 2-D view of this layout (a transposed batch): pack it first
        t = contiguous(t)
        rows = _rows_view(t._td)
    return view_of(t, rows)


def _rows_view(td):
    """The view ``td`` (``(*, k)``) as ``(N, k)`` rows, or ``None`` where its layout has none."""
    return td.reshaped((math.prod(td.shape[:-1]), td.shape[-1]))


def linear(x, w, b=None):
    """``x @ w.T + b`` for ``x (*, in)``, ``w (out, in)``, ``b (out,)``: the function behind
    :func:`torchlight.nn.functional.linear`.

    Leading dims of ``x`` fold into one batch of rows inside the node, so the product is one 2-D
    matmul (and ``dL/dw = gᵀ x`` one more); operands of one dtype make a single :class:`Linear` node, mixed
    dtypes promote through ``matmul`` as PyTorch would.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.linalg import linear
    >>> linear(tl.ones(2, 3), tl.ones(4, 3), tl.zeros(4)).tolist()
    [[3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]
    """
    xs, ws = x._td.shape, w._td.shape  # (the views' shapes: no property call per test)
    if xs[-1:] != ws[-1:]:
        have = xs[-1] if xs else "no"
        raise ShapeError(
            f"linear: input has {have} features (shape {x.shape}), the weight expects "
            f"{ws[-1] if ws else 0} (weight shape {w.shape}); the input's last dimension "
            "must be the layer's in_features"
        )
    fused = (
        len(xs) >= 2
        and len(ws) == 2
        and x.dtype is w.dtype
        and x.dtype.is_floating_point
        and (b is None or (b.dtype is x.dtype and b._td.shape == ws[:1]))
    )
    if not fused:
        y = matmul(x, w.transpose(0, 1) if w.ndim == 2 else w)
        return y if b is None else y + b
    return Linear.apply(x, w, b)


def matmul(a, b):
    """``a @ b`` with PyTorch's rules (vectors, broadcast batch dimensions); behind
    :func:`torchlight.matmul`, whose docstring gives the shapes.
    """
    if (
        isinstance(b, TensorBase)
        and isinstance(a, TensorBase)
        and a.ndim == 2 == b.ndim
        and a.dtype is b.dtype
        and a.backend is b.backend
        and a.shape[1] == b.shape[0]
    ):  # the common case (every backward of a linear layer): nothing to promote or broadcast
        return MatMul.apply_binary(a, b)
    if isinstance(a, np.ndarray):
        a = ndarray_operand(a, b)
    b = ndarray_operand(b, a)
    if not isinstance(b, TensorBase):
        raise ShapeError(f"matmul: expected a tensor on the right, got {type(b).__name__}")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {a.shape} and {b.shape}"
        )
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
        out = MatMul.apply_binary(a2, b).reshape(a.shape[:-1] + (b.shape[-1],))
    else:
        out = MatMul.apply_binary(a.expand(batch + a.shape[-2:]), b.expand(batch + b.shape[-2:]))
    if b_vec:
        out = out.squeeze(-1)
    if a_vec:
        out = out.squeeze(-1 if b_vec else -2)
    return out


def mm(a, b):
    """Matrix product of two 2-D tensors: ``(n, k) @ (k, m) -> (n, m)``; no broadcasting.

    >>> import torchlight as tl
    >>> tl.mm(tl.ones(2, 3), tl.ones(3, 4)).shape
    (2, 4)
    """
    _check_ranks("mm", a, b, 2)
    return matmul(a, b)


def bmm(a, b):
    """Batched matrix product of two 3-D tensors: ``(B, n, k) @ (B, k, m) -> (B, n, m)``; the
    batch sizes must be equal (no broadcasting, as in PyTorch).

    >>> import torchlight as tl
    >>> tl.bmm(tl.ones(5, 2, 3), tl.ones(5, 3, 4)).shape
    (5, 2, 4)
    """
    _check_ranks("bmm", a, b, 3)
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: shapes {a.shape} and {b.shape}")
    return matmul(a, b)


def _check_ranks(name, a, b, ndim):
    for what, t in (("self", a), ("mat2", b)):
        if not isinstance(t, TensorBase) or t.ndim != ndim:
            got = t.shape if isinstance(t, TensorBase) else type(t).__name__
            raise ShapeError(f"{name}: {what} must be a {ndim}-D tensor, got {got}")


def dot(a, b):
    """Inner product of two 1-D tensors of equal length (a 0-d tensor).

    >>> import torchlight as tl
    >>> tl.dot(tl.tensor([1.0, 2.0]), tl.tensor([3.0, 4.0])).item()
    11.0
    """
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ShapeError(
            f"dot: expected two 1-D tensors of the same length, got {a.shape} and {b.shape}"
        )
    return matmul(a, b)


def outer(a, b):
    """Outer product of 1-D tensors: ``out[i, j] = a[i] b[j]``, shape ``(len(a), len(b))``.

    >>> import torchlight as tl
    >>> tl.outer(tl.tensor([1, 2]), tl.tensor([1, 10])).tolist()
    [[1, 10], [2, 20]]
    """
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: expected two 1-D tensors, got {a.shape} and {b.shape}")
    return a.unsqueeze(1) * b.unsqueeze(0)


def diag(x, diagonal=0):
    """1-D input: a square matrix with ``x`` on the ``diagonal``-th diagonal (zeros elsewhere).
    2-D input: its ``diagonal``-th diagonal as a 1-D tensor (positive: above the main one).

    >>> import torchlight as tl
    >>> tl.diag(tl.tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    >>> tl.diag(tl.tensor([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    if x.ndim == 1:
        n = x.shape[0] + abs(diagonal)
        rows = np.arange(x.shape[0]) + max(-diagonal, 0)
        cols = np.arange(x.shape[0]) + max(diagonal, 0)
        flat = from_numpy_on((rows * n + cols).astype(np.int64), x.backend, like=x)
        out = filled((n * n,), 0, x.dtype, x.backend, like=x)
        return out.scatter_add(0, flat, x).reshape(n, n)
    if x.ndim == 2:
        r, c = x.shape
        rows = np.arange(max(-diagonal, 0), r)
        cols = rows + diagonal
        keep = (cols >= 0) & (cols < c)
        flat = from_numpy_on((rows[keep] * c + cols[keep]).astype(np.int64), x.backend, like=x)
        return x.reshape(-1).index_select(0, flat)
    raise ShapeError(f"diag: expected a 1-D or 2-D tensor, got shape {x.shape}")


def einsum(equation, *operands):
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` is ``a @ b``.

    Each operand is permuted and unsqueezed onto the equation's full index set, the operands
    are multiplied with broadcasting and the indices missing from the output are summed out —
    so the memory used is that of the full broadcast product. ``...`` stands for the same
    leading dims in every operand; an index repeated within one operand (a diagonal) is not
    supported. Without ``->``, the output is the indices that appear once, in sorted order.

    >>> import torchlight as tl
    >>> a, b = tl.ones(2, 3), tl.ones(3, 4)
    >>> tl.einsum("ij,jk->ik", a, b).tolist() == (a @ b).tolist()
    True
    >>> tl.einsum("bi,bi->b", tl.ones(2, 3), tl.ones(2, 3)).tolist()
    [3.0, 3.0]
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ShapeError(f"einsum: {equation!r} names {len(terms)} operands, got {len(operands)}")
    ell = "".join(chr(ord("A") + k) for k in range(max((t.ndim for t in operands), default=0)))
    spelled = []
    for term, t in zip(terms, operands):
        if "..." in term:
            n = t.ndim - (len(term) - 3)
            term = term.replace("...", ell[len(ell) - n :] if n > 0 else "")
        if len(term) != t.ndim:
            raise ShapeError(
                f"einsum: term {term!r} has {len(term)} indices but the operand has shape {t.shape}"
            )
        if len(set(term)) != len(term):
            raise ShapeError(f"einsum: repeated index in {term!r} (a diagonal) is not supported")
        spelled.append(term)
    if arrow:
        out = out.replace("...", "".join(sorted({c for t in spelled for c in t if c.isupper()})))
    else:
        counts = {}
        for t in spelled:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c in counts if c.isupper())) + "".join(
            sorted(c for c, k in counts.items() if k == 1 and not c.isupper())
        )
    inputs = {c for t in spelled for c in t}
    if set(out) - inputs or len(set(out)) != len(out):
        raise ShapeError(
            f"einsum: output {out!r} must name distinct indices that appear in the inputs {spelled}"
        )
    letters = list(out) + sorted(inputs - set(out))
    product = None
    for term, t in zip(spelled, operands):
        present = [c for c in letters if c in term]
        x = t.permute(*[term.index(c) for c in present]) if present else t
        x = x.reshape(tuple(x.shape[present.index(c)] if c in term else 1 for c in letters))
        product = x if product is None else product * x
    summed = tuple(range(len(out), len(letters)))
    return product.sum(summed) if summed else product


def norm(x, p="fro", dim=None, keepdim=False):
    """Vector p-norm ``(Σ|x|ᵖ)^(1/p)`` over ``dim`` (all elements when ``None``); ``"fro"`` and
    2 are the Euclidean norm, ``float("inf")`` the largest ``|x|``, 1 the sum of ``|x|``.

    >>> import torchlight as tl
    >>> tl.norm(tl.tensor([3.0, 4.0])).item()
    5.0
    """
    if p == "fro" or p == 2:
        return (x * x).sum(dim, keepdim=keepdim).sqrt()
    if p == float("inf"):
        return x.abs().amax(dim, keepdim=keepdim)
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim)
    if isinstance(p, (int, float)) and p > 0:
        return (x.abs() ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)
    raise ShapeError(
        f"norm: p={p!r} is not supported; use 'fro', a positive number or float('inf')"
    )
