"""Views in every layout a kernel meets, and hypothesis strategies that draw them.

A kernel sees ``(storage, shape, strides, offset)``. :func:`make_view` builds, on any backend, a
``TensorData`` whose *logical* contents equal a given numpy array but whose layout is one of::

    ``contiguous``  C order from offset 0
    ``offset``      C order starting a few elements into the storage
    ``permuted``    stored with its dims reversed and viewed back through ``permute``
    ``sliced``      every dim a slice ``[1:1+n]`` and the last one with step 2 (gaps, offset)
    ``broadcast``   one dim of size > 1 has stride 0 (inputs only: the logical values change, so
                    ``make_view`` returns them)

Storage outside the view is filled with a sentinel so :func:`outside_untouched` can check that
a kernel writing through an ``out`` view never writes anywhere else.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from torchlight.tensor import dtypes as _dtypes
from torchlight.tensor.storage import TensorData

__all__ = [
    "LAYOUTS",
    "OUT_LAYOUTS",
    "SENTINEL",
    "make_view",
    "empty_view",
    "read",
    "read_storage",
    "outside_untouched",
    "shapes",
    "broadcastable_pair",
    "layouts",
    "dtype_names",
]

LAYOUTS = ("contiguous", "offset", "permuted", "sliced", "broadcast")
OUT_LAYOUTS = ("contiguous", "offset", "permuted", "sliced")
SENTINEL = {"float32": -7777.0, "float64": -7777.0, "int64": -7777, "bool": True}


def _np_dtype(name):
    return _dtypes.as_dtype(name).np


def _sentinel_array(n, dtype):
    return np.full(n, SENTINEL[dtype], dtype=_np_dtype(dtype))


def make_view(backend, values: np.ndarray, layout: str = "contiguous", dim: int | None = None):
    """``(TensorData, logical_values)`` of ``values`` on ``backend`` laid out as ``layout``.

    ``logical_values`` equals ``values`` except for ``broadcast``, whose view repeats slice 0
    along ``dim`` (default: the first dim of size > 1; a layout that does not apply to the
    shape, e.g. ``permuted`` of a 1-D array, degrades to an offset view).
    """
    values = np.array(values, copy=True)  # the backend may share memory with what it is given
    dtype = _dtypes.as_dtype(values.dtype).name
    shape = values.shape
    nd = len(shape)
    if layout == "contiguous" or values.size == 0 and layout != "offset":
        return TensorData(backend.from_numpy(values.reshape(-1).copy()), shape), values
    if layout == "permuted" and nd >= 2:
        perm = tuple(reversed(range(nd)))
        base = np.array(values.transpose(perm), order="C", copy=True)
        td = TensorData(backend.from_numpy(base.reshape(-1)), base.shape)
        return td.permute(tuple(int(i) for i in np.argsort(perm))), values
    if layout == "sliced" and nd >= 1:
        big_shape = tuple(s + 2 for s in shape[:-1]) + (2 * shape[-1] + 1,)
        big = np.full(big_shape, SENTINEL[dtype], dtype=values.dtype)
        index = tuple(slice(1, 1 + s) for s in shape[:-1]) + (slice(1, 1 + 2 * shape[-1], 2),)
        big[index] = values
        td = TensorData(backend.from_numpy(big.reshape(-1)), big_shape)
        for d, s in enumerate(shape[:-1]):
            td = td.slice(d, 1, 1 + s, 1)
        td = td.slice(nd - 1, 1, 1 + 2 * shape[-1], 2)
        return td, values
    if layout == "broadcast" and any(s > 1 for s in shape):
        d = next(k for k, s in enumerate(shape) if s > 1) if dim is None else dim
        one = np.ascontiguousarray(np.take(values, [0], axis=d))
        td = TensorData(backend.from_numpy(one.reshape(-1)), one.shape).expand(shape)
        return td, np.broadcast_to(one, shape).copy()
    # "offset", and the fallback of layouts that do not apply to this shape
    pad = 3
    flat = np.concatenate(
        [
            _sentinel_array(pad, dtype),
            np.ascontiguousarray(values).reshape(-1),
            _sentinel_array(2, dtype),
        ]
    )
    return TensorData(backend.from_numpy(flat), shape, None, pad), values


def empty_view(backend, shape, dtype: str, layout: str = "contiguous"):
    """An ``out`` view of ``shape`` in ``layout``, pre-filled with the sentinel."""
    values = np.full(shape, SENTINEL[dtype], dtype=_np_dtype(dtype))
    td, _ = make_view(backend, values, layout)
    return td


def read(backend, view) -> np.ndarray:
    """The logical contents of a view, as a fresh numpy array."""
    return np.array(backend.to_numpy(view), copy=True)


def read_storage(backend, view) -> np.ndarray:
    """Every element of the view's storage, flat."""
    n = _storage_len(backend, view)
    return read(backend, TensorData(view.storage, (n,)))


def _storage_len(backend, view):
    st_ = view.storage
    for attr in ("size", "__len__"):
        if hasattr(st_, attr):
            v = getattr(st_, attr)
            return int(v() if callable(v) else v)
    raise TypeError(f"cannot size the storage of backend {backend.name!r}")


def outside_untouched(backend, view, dtype: str) -> bool:
    """True when every storage element that ``view`` does not cover still holds the sentinel."""
    flat = read_storage(backend, view)
    covered = np.zeros(flat.shape[0], dtype=bool)
    if view.size:
        pos = np.full(view.size, view.offset, dtype=np.int64)
        if view.shape:
            idx = np.indices(view.shape).reshape(len(view.shape), -1)
            pos += sum(idx[k] * view.strides[k] for k in range(len(view.shape)))
        covered[pos] = True
    rest = flat[~covered]
    return bool(np.all(rest == SENTINEL[dtype]))


# --- hypothesis strategies -------------------------------------------------------------------


def dtype_names(allowed=("float32", "float64", "int64", "bool")):
    """A hypothesis strategy drawing one of the dtype names in ``allowed``."""
    return st.sampled_from(allowed)


def layouts(allowed=LAYOUTS):
    """A hypothesis strategy drawing one of the memory layouts in ``allowed`` (``contiguous``,
    ``offset``, ``permuted``, ``sliced``, ``broadcast``): how the kit lays a value out in storage.
    """
    return st.sampled_from(allowed)


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5, max_elements=1024):
    """Array shapes with at most ``max_elements`` elements."""
    return (
        st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims)
        .map(tuple)
        .filter(lambda s: int(np.prod(s, dtype=np.int64)) <= max_elements)
    )


@st.composite
def broadcastable_pair(draw, max_dims=4, max_side=5):
    """Two shapes that broadcast together (sizes equal or 1, ranks may differ)."""
    out = draw(shapes(0, max_dims, 1, max_side, 512))
    a, b = [], []
    for s in out:
        a.append(draw(st.sampled_from([s, 1])))
        b.append(draw(st.sampled_from([s, 1])))
    cut_a = draw(st.integers(0, len(out)))
    cut_b = draw(st.integers(0, len(out)))
    return tuple(a[cut_a:]), tuple(b[cut_b:])
