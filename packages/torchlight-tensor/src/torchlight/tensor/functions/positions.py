"""Which elements an advanced index selects: numpy's indexing rules, computed on the host as
flat positions into ``x``, with every index checked against its dimension first.

``x[idx]`` gathers at these positions and its gradient adds back at them; ``x[idx] = v``
writes at them. How they are computed depends on ``x``'s size (``ARANGE_POSITIONS``): a small
``x`` indexes an ``arange`` over all of it; a large one only the coordinates the index touches.
"""

import numpy as np

from .. import dtypes
from ..base import TensorBase
from ..errors import DTypeError, TensorIndexError
from ..indexing import contiguous_strides
from ..storage import index_out_of_range

__all__ = ["host_positions", "storage_offsets", "ARANGE_POSITIONS"]


def _host_index(item, x_shape_dim=None):
    if isinstance(item, TensorBase):
        if not (item.dtype is dtypes.int64 or item.dtype is dtypes.bool_):
            raise DTypeError(f"tensors used as indices must be int64 or bool, got {item.dtype}")
        return item.backend.to_numpy(item._td)
    arr = np.asarray(item)
    if arr.dtype != bool and arr.dtype.kind not in "iu":
        raise DTypeError(f"index arrays must be integer or bool, got {arr.dtype}")
    return arr


def host_positions(x, index):
    """The flat positions (an ndarray) that an expanded advanced ``index`` selects in ``x``, every
    index checked against its dimension first (``TensorIndexError``)."""
    host = []
    dim = 0
    for item in index:
        if item is None:
            host.append(None)
            continue
        if isinstance(item, (int, np.integer, slice)):
            host.append(item)
            dim += 1
            continue
        arr = _host_index(item)
        if arr.dtype == bool:
            want = x.shape[dim : dim + arr.ndim]
            if arr.shape != want:
                raise TensorIndexError(
                    f"boolean mask of shape {arr.shape} does not match the indexed dims {want} of shape {x.shape}"
                )
            dim += arr.ndim
        else:
            size = x.shape[dim]
            if arr.size and (arr.max() >= size or arr.min() < -size):
                bad = arr.max() if arr.max() >= size else arr.min()
                raise index_out_of_range(int(bad), dim, size)
            dim += 1
        host.append(arr)
    host = tuple(host)
    try:
        return _gathered_positions(x, host)
    except IndexError as e:  # the index arrays' shapes do not broadcast together
        raise TensorIndexError(f"{e} (x has shape {x.shape})") from None


def storage_offsets(td, positions):
    """Where the elements at flat (row-major) ``positions`` of the view ``td`` lie in its
    storage: ``td.offset`` plus each coordinate times its stride.

    >>> import numpy as np
    >>> from torchlight.tensor.storage import TensorData
    >>> from torchlight.tensor.functions.positions import storage_offsets
    >>> t = TensorData(np.arange(6.0), (2, 3)).permute((1, 0))  # shape (3, 2), strides (1, 3)
    >>> storage_offsets(t, np.array([1, 2]))
    array([3, 1])
    """
    if td.is_contiguous():
        return td.offset + positions
    offsets = np.full(positions.shape, td.offset, dtype=np.int64)
    for coords, stride in zip(np.unravel_index(positions, td.shape), td.strides):
        offsets += coords * stride
    return offsets


def _gathered_positions(x, host):
    n = x.numel()
    if n <= ARANGE_POSITIONS:
        return np.arange(n, dtype=np.int64).reshape(x.shape)[host]
    # Each dim cut down to the coordinates the index touches (its "column"), and the index
    # rewritten to pick from those: numpy's own rules still place the selected elements, in
    # memory O(index + selection) instead of O(x).
    items, columns = [], []
    strides = contiguous_strides(x.shape)
    dim = 0
    for item in host:
        if item is None or (isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype == bool):
            items.append(item)  # a new dim of its own, no coordinates of x
            continue
        if isinstance(item, np.ndarray) and item.dtype == bool:
            for coords in item.nonzero():  # numpy: a mask indexes as its nonzero() would
                items.append(np.arange(coords.size))
                columns.append(coords * strides[dim])
                dim += 1
            continue
        size = x.shape[dim]
        if isinstance(item, slice):
            columns.append(np.arange(*item.indices(size), dtype=np.int64) * strides[dim])
            items.append(slice(None))
        elif isinstance(item, np.ndarray):
            columns.append((item.reshape(-1).astype(np.int64) % size) * strides[dim])
            items.append(np.arange(item.size).reshape(item.shape))
        else:  # an int: its dim goes, as it would from x
            columns.append(np.array([(int(item) % size) * strides[dim]], dtype=np.int64))
            items.append(0)
        dim += 1
    for d in range(dim, x.ndim):  # dims the index leaves whole
        columns.append(np.arange(x.shape[d], dtype=np.int64) * strides[d])
        items.append(slice(None))
    compact = tuple(len(c) for c in columns)
    items = tuple(items)
    positions = None
    for d, column in enumerate(columns):
        grid = np.broadcast_to(column.reshape((-1,) + (1,) * (len(columns) - d - 1)), compact)
        part = grid[items]
        if positions is None:
            positions = part  # a copy: advanced indexing never returns a view
        else:
            positions += part
    return positions


ARANGE_POSITIONS = 1 << 15
"""Up to this many elements, :func:`host_positions` indexes an ``arange`` over all of ``x``;
above, each dim's touched coordinates, whose cost follows the index and the selection, not
``x`` (measured for 32 rows of 8: 10 against 33 µs at 4096 elements, 49 against 38 at 65536;
64 rows of a 60000x784 dataset took 101 ms the first way)."""
