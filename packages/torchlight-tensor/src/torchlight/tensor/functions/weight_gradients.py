r"""A layer's weight gradient summed over the layer's uses as one kernel: a linear layer's as
one product, an embedding table's as one scatter.

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

An embedding table :math:`W` read at indices :math:`i_k` at every step gets, per use, its
gradient rows :math:`G_k` added at those indices; :class:`RowsGradient` joins the uses the same
way, so :math:`T` lookups (makemore's MLP reads its table once per context position) cost one
scatter of the stacked rows at the stacked indices instead of :math:`T` tables of zeros, :math:`T`
scatters and :math:`T-1` sums.

A sum holds its rows until then; past :data:`MERGE_MAX` elements it is computed, and later
uses are added into it one by one (the memory a long sequence would otherwise keep).
"""

from torchlight.autograd import PartialGradient

from ..creation import filled
from ..dispatch import alloc, reduce_op
from .concat import join_views

__all__ = ["ProductGradient", "RowsGradient", "MERGE_MAX"]

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


class RowsGradient(PartialGradient):
    r""":math:`\partial L/\partial W` of a table ``W`` of ``shape (V, D)`` over the uses ``k`` that
    read its rows at ``index_k (N_k,)``: each use's gradient rows ``G_k (N_k, D)`` added at its
    indices, :math:`\partial L/\partial W_v = \sum_k \sum_{n:\, i_{k,n} = v} G_{k,n}` (a repeated
    index adds up).

    Made by the backward of :class:`~torchlight.tensor.functions.gathering.Embedding`, one per
    use; only the engine calls its methods.

    >>> import torchlight as tl
    >>> from torchlight.tensor.functions.gathering import embedding
    >>> w = tl.zeros(3, 2, requires_grad=True)
    >>> y = embedding(tl.tensor([0, 2]), w).sum() * 2 + embedding(tl.tensor([2]), w).sum()
    >>> y.backward()
    >>> w.grad
    tensor([[2., 2.],
            [0., 0.],
            [3., 3.]])
    """

    __slots__ = ("gs", "indices", "shape", "size")

    def __init__(self, g, index, shape):
        self.gs = [g]
        self.indices = [index]
        self.shape = shape
        self.size = g._td.size + index._td.size

    def merge(self, other):
        """Join ``other``'s rows into this sum and return it, or ``None`` when they cannot be
        joined: another kind of gradient, another table shape or dtype, or more than
        :data:`MERGE_MAX` elements together."""
        if (
            type(other) is not RowsGradient
            or other.shape != self.shape
            or other.gs[0].dtype is not self.gs[0].dtype
            or self.size + other.size > MERGE_MAX
        ):
            return None
        self.gs += other.gs
        self.indices += other.indices
        self.size += other.size
        return self

    def dense(self):
        """The sum as a fresh tensor: the stacked rows added into zeros in one ``put_add``."""
        g = self.gs[0]
        return self._put(filled(self.shape, 0, g.dtype, g.backend, like=g))

    def add_into(self, buffer):
        """``buffer + self``: the rows added into ``buffer`` (a gradient the engine owns) where
        the dtypes and shapes agree; a new sum otherwise."""
        if buffer.dtype is not self.gs[0].dtype or buffer._td.shape != self.shape:
            return buffer + self.dense()
        return self._put(buffer)

    def _put(self, out):
        g, index = _stacked(self.gs), _stacked(self.indices)
        g.backend.put_add(out._td, 0, index._td, g._td)
        return out


def _stacked(tensors):
    """The rows of ``tensors`` (equal trailing dims) one under the other: the tensor itself when
    there is one."""
    if len(tensors) == 1:
        return tensors[0]
    first = tensors[0]
    return join_views([t._td for t in tensors], 0, False, first, first.backend)
