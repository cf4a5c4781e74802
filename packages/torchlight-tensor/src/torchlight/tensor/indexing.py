"""Pure index arithmetic over strided storage, shared by every kernel.

A tensor is a view ``(storage, shape, strides, offset)``: the element with multi-index
``(i_0, ..., i_{n-1})`` lives at ``storage[offset + sum_k i_k * strides[k]]``. Broadcasting gives
size-1 (or missing leading) dimensions stride 0, so one stored value serves a whole axis. These
helpers are written with plain loops over sequences so a JIT backend can compile them unchanged
for its kernels (the CUDA backend compiles ``to_index`` and ``index_to_position`` as device
functions); the CPU backends use ``coalesce`` and ``prod`` on the host before a launch, and the
numpy backend needs none of the per-element helpers. ``broadcast_index`` is what a hand-written
kernel uses to read a broadcast operand (the backend tutorial writes one with it).
"""

__all__ = [
    "contiguous_strides",
    "shape_broadcast",
    "index_to_position",
    "to_index",
    "broadcast_index",
    "prod",
    "row_layout",
    "coalesce",
]


def prod(shape) -> int:
    """The number of elements of ``shape`` (1 for ``()``).

    >>> from torchlight.tensor.indexing import prod
    >>> prod((2, 3, 4))
    24
    """
    n = 1
    for s in shape:
        n *= s
    return n


_CONTIGUOUS: dict = {}  # shape -> strides: every new tensor asks, and shapes repeat


def contiguous_strides(shape) -> tuple:
    """Row-major (C-order) strides in elements: the last dimension varies fastest."""
    if type(shape) is not tuple:  # callers on hot paths already pass a tuple
        shape = tuple(shape)
    strides = _CONTIGUOUS.get(shape)
    if strides is None:
        out = [1] * len(shape)
        acc = 1
        for k in range(len(shape) - 1, -1, -1):
            out[k] = acc
            acc *= max(shape[k], 1)
        strides = _CONTIGUOUS[shape] = tuple(out)
    return strides


_BROADCAST: dict = {}  # (shape, shape) -> their broadcast: a training loop repeats its pairs
_BROADCAST_MAX = 4096  # pairs kept at most (a program of ever new shapes does not grow it)


def shape_broadcast(a, b) -> tuple | None:
    """NumPy/PyTorch broadcasting: align from the right; sizes must match or one must be 1.

    Returns ``None`` when the shapes do not broadcast, so the caller can name both shapes.
    """
    key = (a, b)
    try:
        return _BROADCAST[key]
    except KeyError:
        pass
    except TypeError:  # a list: not kept
        return _broadcast(a, b)
    out = _BROADCAST[key] = _broadcast(a, b)
    if len(_BROADCAST) > _BROADCAST_MAX:
        del _BROADCAST[key]
    return out


def _broadcast(a, b) -> tuple | None:
    n = max(len(a), len(b))
    out = []
    for k in range(n):
        da = a[k - n + len(a)] if k - n + len(a) >= 0 else 1
        db = b[k - n + len(b)] if k - n + len(b) >= 0 else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            return None
    return tuple(out)


def index_to_position(index, strides, offset) -> int:
    """Storage position of a multi-index."""
    pos = offset
    for k in range(len(index)):
        pos += index[k] * strides[k]
    return pos


def to_index(ordinal, shape, out_index) -> None:
    """Write into ``out_index`` the multi-index of the ``ordinal``-th element in C order."""
    rest = ordinal
    for k in range(len(shape) - 1, -1, -1):
        out_index[k] = rest % shape[k]
        rest //= shape[k]


def broadcast_index(big_index, big_shape, shape, out_index) -> None:
    """Map an index of the broadcast (big) shape to the index of a smaller, broadcastable shape."""
    skip = len(big_shape) - len(shape)
    for k in range(len(shape)):
        out_index[k] = big_index[k + skip] if shape[k] > 1 else 0


def coalesce(shape, strides_list):
    """Drop size-1 dims and merge adjacent dims that are contiguous w.r.t. each other in every
    operand: dims ``d`` and ``d+1`` merge when ``strides[d] == strides[d+1] * shape[d+1]`` for all.

    Returns ``(shape, [strides per operand])`` as tuples, never 0-d (a scalar becomes ``(1,)``).
    JIT backends call it before every strided kernel: fewer dims mean less index
    arithmetic per element and fewer compiled specialisations.
    """
    out_shape = []
    out_strides = [[] for _ in strides_list]
    for d, s in enumerate(shape):
        if s == 1:
            continue
        if out_shape and all(st[-1] == ss[d] * s for st, ss in zip(out_strides, strides_list)):
            out_shape[-1] *= s
            for st, ss in zip(out_strides, strides_list):
                st[-1] = ss[d]
            continue
        out_shape.append(s)
        for st, ss in zip(out_strides, strides_list):
            st.append(ss[d])
    if not out_shape:
        return (1,), [(0,) for _ in strides_list]
    return tuple(out_shape), [tuple(st) for st in out_strides]


def row_layout(views, dim):
    """How a row-wise kernel (softmax, layernorm, cross-entropy, ... along ``dim``) walks its
    operands, which all have the same shape: the outer shape (``dim`` removed, dims coalesced
    across the views), the row count, the row length, and per view ``(outer strides, offset,
    step along dim)``. Coalescing usually leaves one outer dim, so that a kernel finds a row's
    start with one multiply instead of a divmod per dim.

    >>> from types import SimpleNamespace as View
    >>> from torchlight.tensor.indexing import row_layout
    >>> x = View(shape=(2, 3, 4), strides=(12, 4, 1), offset=0)
    >>> row_layout([x], 2)
    ((6,), 6, 4, [((4,), 0, 1)])
    """
    shape = views[0].shape
    outer, strides = coalesce(
        [s for d, s in enumerate(shape) if d != dim],
        [[s for d, s in enumerate(v.strides) if d != dim] for v in views],
    )
    nrows = 1
    for d, s in enumerate(shape):
        if d != dim:
            nrows *= s
    per = [(st, v.offset, v.strides[dim]) for st, v in zip(strides, views)]
    return outer, nrows, shape[dim], per
