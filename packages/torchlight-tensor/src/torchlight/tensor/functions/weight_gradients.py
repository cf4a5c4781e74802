r"""A linear layer's weight gradient summed over the layer's uses as one product.

The gradient of :math:`Y = X W^\top + b` is :math:`\partial L/\partial W = G^\top X` and
:math:`\partial L/\partial b = \sum_n G_n` (rows :math:`n`). A layer called at every step of a
loop (an RNN cell's gates, a character model fed one step at a time) gets one such term per
call, and the chain rule sums them:

.. math::

    \frac{\partial L}{\partial W} = \sum_k G_k^\top X_k
    = \begin{bmatrix} G_1 \\ \vdots \\ G_T \end{bmatrix}^\top
      \begin{bmatrix} X_1 \\ \vdots \\ X_T \end{bmatrix}

— one product of the stacked rows instead of :math:`T` small products and :math:`T-1` sums
(on a makemore GRU, 34 small kernels per weight and step become four). :class:`ProductGradient`
is that sum, not computed until the engine needs it: it is a
:class:`~torchlight.autograd.PartialGradient` whose :meth:`~ProductGradient.merge` joins the
terms of two uses, and whose :meth:`~ProductGradient.dense` computes the product. A weight used
once gets its product when the engine reaches it, which is right after its one use.

A sum holds its rows until then; past :data:`MERGE_MAX` elements it is computed, and later
uses are added into it one by one (the memory a long sequence would otherwise keep).
"""

from torchlight.autograd import PartialGradient

from ..dispatch import alloc, reduce_op
from .concat import join_views

__all__ = ["ProductGradient", "MERGE_MAX"]

MERGE_MAX = 1 << 22
"""The most elements (of all the ``G`` and ``X`` rows together) one :class:`ProductGradient`
holds before it is computed: 16 MiB of float32, beyond which holding the rows of more uses costs
more memory than the product saves in calls."""


class ProductGradient(PartialGradient):
    r""":math:`\sum_k G_k^\top X_k` over the uses ``k`` of a linear layer's weight, or, without
    ``x`` (a bias), :math:`\sum_k \sum_n G_{k,n}`; each ``G_k (N_k, out)``, ``X_k (N_k, in)``.

    Made by the backward of :class:`~torchlight.tensor.functions.linalg.Linear`, one per use
    and per parameter; only the engine calls its methods.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.linalg import linear
    >>> w = tl.ones(2, 3, requires_grad=True)
    >>> x = tl.tensor([[1.0, 2.0, 3.0]])
    >>> h = linear(x, w)                         # one use of w ...
    >>> y = linear(h @ tl.ones(2, 3), w)         # ... and another
    >>> y.sum().backward()
    >>> w.grad
    tensor([[18., 24., 30.],
            [18., 24., 30.]])
    """

    __slots__ = ("gs", "xs", "size")

    def __init__(self, g, x=None):
        self.gs = [g]
        self.xs = None if x is None else [x]
        self.size = g._td.size + (0 if x is None else x._td.size)

    def merge(self, other):
        """Join ``other``'s terms into this sum and return it, or ``None`` when they cannot be
        joined: another kind of gradient, a bias with a weight, other columns or dtype, or more
        than :data:`MERGE_MAX` elements together."""
        if (
            type(other) is not ProductGradient
            or (self.xs is None) is not (other.xs is None)
            or self.size + other.size > MERGE_MAX
        ):
            return None
        g, h = self.gs[0], other.gs[0]
        if g.dtype is not h.dtype or g._td.shape[1:] != h._td.shape[1:]:
            return None
        if self.xs is not None:
            x, y = self.xs[0], other.xs[0]
            if x.dtype is not y.dtype or x._td.shape[1:] != y._td.shape[1:]:
                return None
            self.xs += other.xs
        self.gs += other.gs
        self.size += other.size
        return self

    def dense(self):
        """The sum as a fresh tensor: one product of the stacked rows (one row sum for a bias)."""
        g = _stacked(self.gs)
        if self.xs is None:
            return reduce_op("sum", g, (0,))
        x = _stacked(self.xs)
        gt = g._td.permute((1, 0))
        out = alloc(gt.shape[:1] + x._td.shape[1:], g.dtype, g.backend, g)
        g.backend.matmul(gt, x._td, out._td)
        return out

    def add_into(self, buffer):
        """``buffer + self``, written into ``buffer`` (a gradient the engine owns) where the
        dtypes and shapes agree; a new sum otherwise."""
        d = self.dense()
        if buffer.dtype is not d.dtype or buffer._td.shape != d._td.shape:
            return buffer + d
        td = buffer._td
        buffer.backend.zip("add", td, d._td, td)
        return buffer


def _stacked(tensors):
    """The rows of ``tensors`` (2-D, equal columns) one under the other: the tensor itself when
    there is one."""
    if len(tensors) == 1:
        return tensors[0]
    first = tensors[0]
    return join_views([t._td for t in tensors], 0, False, first, first.backend)
