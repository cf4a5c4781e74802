"""Joining tensors along a dimension and splitting them back: ``cat``, ``stack``, ``split``,
``chunk``.

``cat`` and ``stack`` copy their inputs into one new tensor, in one backend call where the
backend has the ``join`` capability (:func:`join_views`, which ``roll`` uses too); their backward
hands each input its piece of the gradient, as views. ``split`` and ``chunk`` are views (narrows)
of their input, whose gradients the engine adds back into one.
"""

from torchlight.autograd import Function
from torchlight.autograd.grad_mode import GradMode

from .. import dtypes
from ..dispatch import alloc, common_backend, normalize_dim, same_backend, view_of
from ..errors import ShapeError
from .pointwise import to_dtype

__all__ = ["Cat", "Stack", "cat", "stack", "join_views", "split", "chunk"]


class Cat(Function):
    """Autograd function of :func:`cat`: backward narrows the gradient into each input's slice."""

    direct_forward = True

    @staticmethod
    def forward(ctx, dim, *xs):
        return _join(ctx, dim, xs, False)

    @staticmethod
    def backward(ctx, g):
        if not GradMode.enabled:  # no graph to record: the pieces are plain views of g
            return (None, *[view_of(g, td) for td in g._td.pieces(ctx.dim, ctx.sizes)])
        if ctx.sizes is None:  # stacked: input k is the slice at index k of the new dim
            return (None, *g.unbind(ctx.dim))
        grads, start = [None], 0
        for n in ctx.sizes:
            grads.append(g.narrow(ctx.dim, start, n))
            start += n
        return tuple(grads)


class Stack(Cat):
    """Autograd function of :func:`stack`: :class:`Cat` along a new dimension (each input is
    written into one index of it, so no per-input unsqueeze is recorded)."""

    @staticmethod
    def forward(ctx, dim, *xs):
        return _join(ctx, dim, xs, True)


def _join(ctx, dim, xs, new_dim):
    # loops, not comprehensions: a comprehension's frame costs more than a two-piece cat's list
    views = []
    for x in xs:
        views.append(x._td)
    sizes = None
    if not new_dim:
        sizes = []
        for v in views:
            sizes.append(v.shape[dim])
    ctx.dim, ctx.sizes = dim, sizes
    return join_views(views, dim, new_dim, xs[0], common_backend(*xs), sizes)


def join_views(views, dim, new_dim, like, backend, sizes=None):
    """A new tensor (of ``like``'s dtype and class, on ``backend``) holding the views ``views``
    joined along ``dim``: concatenated (``cat``; ``sizes``: the views' sizes along ``dim``, when
    the caller has them), or, with ``new_dim``, each at one index of a new dimension ``dim``
    (``stack``). The views must already fit (their callers checked)."""
    shape = views[0].shape
    if new_dim:
        shape = shape[:dim] + (len(views),) + shape[dim:]
    else:
        if sizes is None:
            sizes = [v.shape[dim] for v in views]
        shape = shape[:dim] + (sum(sizes),) + shape[dim + 1 :]
    out = alloc(shape, like.dtype, backend, like)
    if "join" in backend.capabilities:  # one call: per input, a copy's dispatch costs more
        backend.join(views, dim, out._td, new_dim)
        return out
    for v, target in zip(views, out._td.pieces(dim, sizes)):
        backend.map("copy", v, target)
    return out


def _joined_dtype(tensors, dim, new_dim):
    """Check that ``tensors`` can be joined along ``dim`` (normalised; unused when ``new_dim``) and
    return the dtype they are promoted to. ``stack`` needs equal shapes, ``cat`` equal ones
    outside ``dim`` and none 0-d; all must be on one device."""
    first = tensors[0]
    shape, backend, dt = first._td.shape, first.backend, first.dtype
    for i, t in enumerate(tensors):
        if t.dtype is not dt:
            dt = dtypes.promote(dt, t.dtype)
        other = t._td.shape
        if not other and not new_dim:
            raise ShapeError(
                f"cat: zero-dimensional tensor (at position {i}) cannot be concatenated; "
                "use tl.stack to join scalars, or reshape them to (1,) first"
            )
        if other != shape and (
            new_dim
            or len(other) != len(shape)
            or other[:dim] != shape[:dim]
            or other[dim + 1 :] != shape[dim + 1 :]
        ):
            if new_dim:
                raise ShapeError(
                    f"stack: tensor #{i} has shape {other}, tensor #0 has {shape}; all must match"
                )
            raise ShapeError(
                f"cat: tensor #{i} has shape {other}, which does not match tensor #0's shape "
                f"{shape} outside dimension {dim}"
            )
        if t.backend is not backend:
            same_backend(first, t)
    return dt


def cat(tensors, dim=0):
    """Concatenate tensors along an existing dimension ``dim``.

    All tensors must have the same shape except in ``dim``; dtypes are promoted to a common one. The
    result's ``dim`` has the sum of the sizes; gradients are split back into the pieces.

    >>> a, b = tl.zeros(2, 3), tl.ones(1, 3)
    >>> tl.cat([a, b]).shape, tl.cat([a, a], dim=1).shape
    ((3, 3), (2, 6))
    """
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    rank = len(tensors[0]._td.shape)
    dim = normalize_dim(dim, rank) if rank else 0  # a 0-d first tensor: refused just below
    dt = _joined_dtype(tensors, dim, False)
    return Cat.apply(dim, *_promoted(tensors, dt))


def stack(tensors, dim=0):
    """Join tensors of identical shape along a *new* dimension ``dim``: ``n`` tensors of shape
    ``S`` give shape ``S`` with ``n`` inserted at ``dim``; dtypes are promoted as by :func:`cat`.

    >>> tl.stack([tl.tensor([1, 2]), tl.tensor([3, 4])])
    tensor([[1, 2],
            [3, 4]])
    >>> tl.stack([tl.zeros(2, 3)] * 4, dim=1).shape
    (2, 4, 3)
    """
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    dt = _joined_dtype(tensors, None, True)
    dim = normalize_dim(dim, tensors[0].ndim, allow_end=True)
    return Stack.apply(dim, *_promoted(tensors, dt))


def _promoted(tensors, dt):
    """``tensors`` converted to ``dt`` where they differ (the list itself when none does)."""
    for t in tensors:
        if t.dtype is not dt:
            return [t if t.dtype is dt else to_dtype(t, dt) for t in tensors]
    return tensors


def split(x, split_size_or_sections, dim=0):
    """Views of ``x`` along ``dim``: pieces of ``split_size_or_sections`` elements (the last may be
    shorter), or, given a list, pieces of exactly those sizes (which must add up to the dimension).

    >>> [t.tolist() for t in tl.split(tl.arange(5), 2)]
    [[0, 1], [2, 3], [4]]
    >>> [t.shape for t in tl.split(tl.zeros(5, 2), [1, 4])]
    [(1, 2), (4, 2)]
    """
    dim = normalize_dim(dim, x.ndim)
    n = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        if split_size_or_sections <= 0:
            raise ShapeError(f"split: split_size must be positive, got {split_size_or_sections}")
        sizes = [min(split_size_or_sections, n - s) for s in range(0, n, split_size_or_sections)]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise ShapeError(
                f"split: sections {sizes} sum to {sum(sizes)}, but dim {dim} has size {n}"
            )
    out, start = [], 0
    for s in sizes:
        out.append(x.narrow(dim, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks, dim=0):
    r"""``x`` split into ``chunks`` views of :math:`\lceil n/\text{chunks}\rceil` elements along ``dim``
    (fewer chunks when the sizes do not allow that many).

    >>> q, k, v = tl.chunk(tl.zeros(4, 9), 3, dim=1)
    >>> q.shape
    (4, 3)
    """
    dim = normalize_dim(dim, x.ndim)
    n = x.shape[dim]
    size = -(-n // chunks) if n else 1
    return split(x, size, dim) if n else (x,)
