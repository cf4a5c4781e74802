"""``TensorData``: a flat storage plus the metadata that makes it an n-dimensional view.

Every layout change is metadata arithmetic on ``(shape, strides, offset)`` and shares the storage:

* ``permute`` reorders shape and strides together (``x.T`` is a permute),
* ``expand`` gives broadcast dimensions stride 0,
* slicing ``a:b:c`` moves the offset by ``a * stride`` and multiplies the stride by ``c``,
* ``unfold(dim, size, step)`` adds a window axis whose stride is the old stride and multiplies the
  sliding axis's stride by ``step`` (sliding windows without a copy: the basis of conv and pooling),
* ``view`` re-splits dimensions, which is possible without a copy exactly when the dimensions it
  merges are laid out contiguously with respect to each other.

The storage object is owned by a backend (a 1-D numpy array for ``cpu``); ``TensorData`` never
looks inside it, so the same code serves every backend.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .errors import ShapeError, TensorIndexError
from .indexing import _CONTIGUOUS, contiguous_strides

Shape = tuple[int, ...]

VIEW_MEMO = 8
"""How many derived views (:meth:`TensorData.permute`, :meth:`TensorData.expand`) a view keeps
for reuse."""
_new_view = object.__new__

__all__ = ["TensorData", "index_out_of_range"]


def index_out_of_range(index: int, dim: int, size: int) -> TensorIndexError:
    """The error for an integer index outside ``[-size, size)`` on dimension ``dim``: the one
    message of every indexing path (``x[i]``, ``x[i, :, j]``, an index tensor's values)."""
    return TensorIndexError(f"index {index} is out of range for dimension {dim} with size {size}")


class TensorData:
    """A strided view ``(storage, shape, strides, offset)``; strides and offset count elements."""

    __slots__ = ("storage", "shape", "strides", "offset", "size", "cache", "views")

    storage: Any  # owned by the backend (a 1-D ndarray for cpu); never looked inside here
    shape: Shape
    strides: Shape
    offset: int
    size: int
    cache: Any
    views: dict | None

    def __init__(
        self,
        storage: Any,
        shape: Iterable[int],
        strides: Iterable[int] | None = None,
        offset: int = 0,
    ) -> None:
        self.storage = storage
        self.shape = tuple(shape)
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(strides)
        self.offset = offset
        self.size = math.prod(self.shape)
        self.cache = None  # a backend may keep its own handle on this view here (e.g. an ndarray)
        self.views = None  # the permuted and expanded views made of this one (see _remember)

    @property
    def ndim(self) -> int:
        """The number of dimensions of the view."""
        return len(self.shape)

    def is_contiguous(self) -> bool:
        """True when the view walks its storage in C order without gaps (size-1 dims ignored;
        an empty view is contiguous, as in PyTorch and numpy)."""
        if self.size == 0 or self.strides == contiguous_strides(self.shape):
            return True  # the second test is a cached lookup: most views are packed
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def _new(self, shape: Shape, strides: Shape, offset: int) -> TensorData:
        # every caller passes tuples: skip the converting constructor (views are made per op)
        return TensorData.of(self.storage, shape, strides, offset, math.prod(shape))

    @staticmethod
    def of(storage: Any, shape: Shape, strides: Shape, offset: int, size: int) -> TensorData:
        """A view from parts its caller already has as tuples, with its element count: what
        the hot paths (a new tensor, a reshape) use instead of the converting constructor."""
        td = _new_view(TensorData)
        td.storage = storage
        td.shape = shape
        td.strides = strides
        td.offset = offset
        td.size = size
        td.cache = None
        td.views = None
        return td

    @staticmethod
    def packed(storage: Any, shape: Shape, size: int, cache: Any) -> TensorData:
        """The C-order view of all of a new ``storage`` of ``size`` elements, with ``cache``
        its backend handle (or ``None``): what every new tensor gets, so :meth:`of` and
        :func:`contiguous_strides` are written out here (two calls fewer per op)."""
        td = _new_view(TensorData)
        td.storage = storage
        td.shape = shape
        td.strides = _CONTIGUOUS.get(shape) or contiguous_strides(shape)
        td.offset = 0
        td.size = size
        td.cache = cache
        td.views = None
        return td

    def _remember(self, key: tuple, td: TensorData) -> TensorData:
        """Keep ``td``, a view derived from this one, for the next request with ``key``.

        A view never changes (only its storage's values do), so a parameter's transpose in every
        ``Linear`` call, or a bias broadcast to the batch, is built once, and the backend's handle
        on it (``cache``: the numpy backend's ndarray) with it. At most ``VIEW_MEMO`` per view:
        a tensor seen at ever new shapes does not grow a table.
        """
        views = self.views
        if views is None:
            self.views = {key: td}
        elif len(views) < VIEW_MEMO:
            views[key] = td
        return td

    # --- zero-copy views ---------------------------------------------------------------------
    def permute(self, dims: Sequence[int]) -> TensorData:
        """The same storage with the dimensions reordered (strides permuted, no copy)."""
        key = (0, tuple(dims))
        if self.views is not None:
            td = self.views.get(key)
            if td is not None:
                return td
        shape, strides = self.shape, self.strides
        if sorted(dims) != list(range(len(shape))):
            raise ShapeError(
                f"permute: {tuple(dims)} is not a permutation of the {self.ndim} dims of shape {self.shape}"
            )
        # [...] rather than generators: a view is made per op, and a generator is slower
        td = self._new(
            tuple([shape[d] for d in dims]), tuple([strides[d] for d in dims]), self.offset
        )
        return self._remember(key, td)

    def expand(self, shape: Iterable[int]) -> TensorData:
        """Broadcast to ``shape``: new leading dims and size-1 dims get stride 0 (the view itself
        when it has ``shape`` already)."""
        shape = tuple(shape)
        if shape == self.shape:
            return self
        key = (1, shape)
        if self.views is not None:
            td = self.views.get(key)
            if td is not None:
                return td
        if not self.shape and min(shape, default=0) >= 0:  # a scalar fills every position
            return self._remember(key, self._new(shape, (0,) * len(shape), self.offset))
        own, own_strides = self.shape, self.strides
        lead = len(shape) - len(own)
        if lead < 0:
            raise ShapeError(f"cannot expand shape {self.shape} to fewer dimensions {shape}")
        if lead and min(shape[:lead]) < 0:
            raise ShapeError(
                f"cannot expand shape {self.shape} to {shape}: -1 is not allowed in a new leading dimension"
            )
        strides = [0] * lead
        for k in range(len(own)):  # a plain loop: expand runs for every broadcast operand
            s, target = own[k], shape[lead + k]
            if target == s or target == -1:
                strides.append(own_strides[k])
            elif s == 1:
                strides.append(0)
            else:
                raise ShapeError(
                    f"cannot expand shape {self.shape} to {shape}: dimension {k} has size {s}, "
                    "only size-1 dimensions can be expanded"
                )
        full = shape
        if -1 in shape:
            full = tuple([own[k - lead] if t == -1 else t for k, t in enumerate(shape)])
        return self._remember(key, self._new(full, tuple(strides), self.offset))

    def view(self, shape: Iterable[int]) -> TensorData | None:
        """Reshape without copying (one size may be -1); ``None`` when the layout makes that
        impossible."""
        return self.reshaped(infer_shape(shape, self.size, self.shape))

    def reshaped(self, shape: Shape) -> TensorData | None:
        """:meth:`view` for a ``shape`` that :func:`infer_shape` already resolved (only its element
        count is checked again: a replayed tape hands in shapes it adapted itself)."""
        if type(shape) is not tuple:
            shape = tuple(shape)
        _check_count(shape, self.size, self.shape)
        strides = (
            contiguous_strides(shape)
            if self.is_contiguous()
            else _view_strides(self.shape, self.strides, shape)
        )
        if strides is None:
            return None
        return TensorData.of(self.storage, shape, strides, self.offset, self.size)

    def select(self, dim: int, index: int) -> TensorData:
        """Drop dimension ``dim`` at position ``index`` (what ``x[..., i, ...]`` does)."""
        size = self.shape[dim]
        if not -size <= index < size:
            raise index_out_of_range(index, dim, size)
        index %= size
        shape = self.shape[:dim] + self.shape[dim + 1 :]
        strides = self.strides[:dim] + self.strides[dim + 1 :]
        return self._new(shape, strides, self.offset + index * self.strides[dim])

    def select_leading(self, indices: Sequence[int]) -> TensorData:
        """Drop the first ``len(indices)`` dimensions at those positions (``x[i, j]``): one view,
        not one per index as chained :meth:`select` calls would make."""
        shape, strides = self.shape, self.strides
        offset = self.offset
        for dim, index in enumerate(indices):
            size = shape[dim]
            if not -size <= index < size:
                raise index_out_of_range(index, dim, size)
            offset += (index % size) * strides[dim]
        n = len(indices)
        return self._new(shape[n:], strides[n:], offset)

    def select_ints(self, index: Sequence[Any]) -> TensorData:
        """``x[index]`` for an index of ints and whole-dimension slices (``x[i, :, j]``): the
        dims at the ints dropped, the others kept, as one view."""
        shape, strides = [], []
        offset = self.offset
        for dim, item in enumerate(index):
            size, stride = self.shape[dim], self.strides[dim]
            if type(item) is int:
                if not -size <= item < size:
                    raise index_out_of_range(item, dim, size)
                offset += (item % size) * stride
            else:
                shape.append(size)
                strides.append(stride)
        n = len(index)
        return self._new(tuple(shape) + self.shape[n:], tuple(strides) + self.strides[n:], offset)

    def slice(self, dim: int, start: int | None, stop: int | None, step: int | None) -> TensorData:
        """``x[start:stop:step]`` along ``dim``, Python semantics (negative and clipped bounds)."""
        if step is not None and step <= 0:
            raise ShapeError(f"slice step must be positive, got {step}")
        begin, end, stride = slice(start, stop, step).indices(self.shape[dim])
        n = max(0, (end - begin + stride - 1) // stride)
        shape = self.shape[:dim] + (n,) + self.shape[dim + 1 :]
        strides = self.strides[:dim] + (self.strides[dim] * stride,) + self.strides[dim + 1 :]
        return self._new(
            shape, strides, self.offset + begin * self.strides[dim] if n else self.offset
        )

    def pieces(self, dim: int, sizes: Sequence[int] | None) -> list[TensorData]:
        """Consecutive views along ``dim``: ``sizes[k]`` elements each (``narrow``), or, with
        ``sizes`` None, one per index with ``dim`` dropped (``select``): where ``cat`` and
        ``stack`` write their inputs. Sizes are trusted to fit (their caller built this view)."""
        storage, step, offset = self.storage, self.strides[dim], self.offset
        head, tail = self.shape[:dim], self.shape[dim + 1 :]
        out = []
        if sizes is None:
            strides = self.strides[:dim] + self.strides[dim + 1 :]
            for i in range(self.shape[dim]):
                out.append(TensorData(storage, head + tail, strides, offset + i * step))
        else:
            for n in sizes:
                out.append(TensorData(storage, head + (n,) + tail, self.strides, offset))
                offset += n * step
        return out

    def unsqueeze(self, dim: int) -> TensorData:
        """The same storage with a size-1 dimension inserted at ``dim``."""
        stride = self.strides[dim] * self.shape[dim] if dim < self.ndim else 1
        return self._new(
            self.shape[:dim] + (1,) + self.shape[dim:],
            self.strides[:dim] + (stride,) + self.strides[dim:],
            self.offset,
        )

    def unfold(self, dim: int, size: int, step: int) -> TensorData:
        """Sliding windows of ``size`` every ``step`` along ``dim``, as a new last dimension."""
        length = self.shape[dim]
        if size > length or size <= 0 or step <= 0:
            raise ShapeError(
                f"unfold: window size {size} (step {step}) does not fit dimension {dim} of size {length}"
            )
        count = (length - size) // step + 1
        shape = self.shape[:dim] + (count,) + self.shape[dim + 1 :] + (size,)
        strides = (
            self.strides[:dim]
            + (self.strides[dim] * step,)
            + self.strides[dim + 1 :]
            + (self.strides[dim],)
        )
        return self._new(shape, strides, self.offset)

    def __repr__(self) -> str:
        return f"TensorData(shape={self.shape}, strides={self.strides}, offset={self.offset})"


_INFERRED: dict[tuple, Shape] = {}
INFERRED_MAX = 1024
"""How many resolved shapes :func:`infer_shape` keeps: a program views a handful of shapes
(``x.view(-1, 1)`` per row of a loop, a loss's ``reshape(-1, C)``) over and over."""


def infer_shape(shape: Iterable[int], size: int, old_shape: Sequence[int] = ()) -> Shape:
    """Resolve one ``-1`` in a requested shape and check the element count is unchanged.

    A request of plain ints is resolved once per element count and kept (the resolution cost a
    third of a ``view``): the same request of the same count resolves alike."""
    key = (shape, size) if type(shape) is tuple else None
    if key is not None:
        try:
            known = _INFERRED.get(key)
        except TypeError:  # an unhashable entry: not a shape, _resolve says what is wrong
            known = key = None
        if known is not None:
            return known
    resolved = _resolve(shape, size, old_shape)
    if key is not None and len(_INFERRED) < INFERRED_MAX and all(type(s) is int for s in shape):
        _INFERRED[key] = resolved
    return resolved


def _resolve(shape: Iterable[int], size: int, old_shape: Sequence[int]) -> Shape:
    shape = tuple(map(int, shape))
    if -1 in shape:
        if shape.count(-1) > 1:
            raise ShapeError(f"only one dimension can be inferred (-1), got shape {shape}")
        known = -math.prod(shape)  # the product of the other sizes
        if known == 0 or size % known:
            raise _invalid_shape(shape, size, old_shape)
        shape = tuple([size // known if s == -1 else s for s in shape])
    _check_count(shape, size, old_shape)
    return shape


def _check_count(shape: Shape, size: int, old_shape: Sequence[int]) -> None:
    if math.prod(shape) != size or (shape and min(shape) < 0):
        raise _invalid_shape(shape, size, old_shape)


def _invalid_shape(shape: Shape, size: int, old_shape: Sequence[int]) -> ShapeError:
    return ShapeError(
        f"shape {shape} is invalid for input of shape {tuple(old_shape)} ({size} elements)"
    )


def _view_strides(old_shape: Shape, old_strides: Shape, new_shape: Shape) -> Shape | None:
    """Strides that let ``new_shape`` read the same elements, or ``None`` (PyTorch's rule).

    Walk the old dims from the right, grouping dims that are contiguous with respect to each
    other into chunks; each chunk may be re-split freely into new dims of the same element count.
    """
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base = old_strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    return None if view_d != -1 else tuple(new_strides)
