"""Bounds safety of data-dependent indexing: what every backend promises, and its one message.

Kernels that read or write at a position taken from data — ``take``, ``put_add``, ``gather``,
``scatter_add``, and the target column of ``cross_entropy`` — must never touch memory outside
their buffers, whatever the index holds. The core checks indices before it calls a backend
(``check_index``), but that check can be bypassed: an index tensor written through a shared
``.numpy()`` view keeps the bounds the core recorded for it. So the guarantee sits in the
backends themselves:

* ``cpu`` (numpy) checks the index values on the host before indexing (:func:`check_host`):
  numpy would otherwise wrap negative indices silently or raise a bare ``IndexError``;
* compiled CPU kernels (the JIT backend) skip an out-of-range entry and record it in a small
  flag array that the backend reads right after the launch (:func:`new_flag`,
  :func:`raise_if_flagged`);
* GPU kernels do the same into a flag in host-mapped memory, read at the next point where the
  host waits for the device anyway (a device→host copy), as PyTorch's device asserts are.

Every path raises the same :class:`TensorIndexError`, from :func:`index_error`.

Flag layout (int64): ``[hit, bad value, dimension size, op code]``; ``hit`` is 0 until a kernel
meets an index outside ``[0, size)``. Op codes are positions in :data:`OPS`.
"""

import numpy as np

from ..errors import TensorIndexError

__all__ = [
    "OPS",
    "index_error",
    "check_host",
    "value_range",
    "SHORT_RANGE",
    "new_flag",
    "raise_if_flagged",
    "FLAG_LEN",
]

OPS = ("take", "put_add", "gather", "scatter_add", "cross_entropy", "cross_entropy_backward")
"""The backend primitives that index by data; a flag stores the position of its op here."""

FLAG_LEN = 4
"""Length of a bounds flag: ``[hit, bad value, dimension size, op code]``."""


def index_error(op, value, size):
    """The error every backend raises for an index outside ``[0, size)`` met by primitive ``op``."""
    return TensorIndexError(
        f"{op}: index {int(value)} is out of range for a dimension of size {int(size)} "
        f"(a backend takes indices 0 to {int(size) - 1}; the core turns negative ones into these). "
        "If the index looked valid when it was made, it was changed in place behind torchlight's "
        "back (e.g. through a shared .numpy() view): build the index with tl.tensor(...) instead"
    )


SHORT_RANGE = 64
"""Up to this many values, :func:`value_range` takes the min and max in Python: numpy's two
reductions cost ~1.3 µs each before they read a value, more than Python's over a data loader's
row of a few indices."""


def value_range(array: np.ndarray) -> tuple[int, int]:
    """``(min, max)`` of a non-empty host array of integers, as Python ints.

    >>> import numpy as np
    >>> from torchlight.tensor.backend.bounds import value_range
    >>> value_range(np.array([[3, -1], [7, 2]]))
    (-1, 7)
    """
    if array.size <= SHORT_RANGE:
        values = array.ravel().tolist()
        return int(min(values)), int(max(values))
    return int(array.min()), int(array.max())


def check_host(op, index, size):
    """Raise unless every value of the host array ``index`` lies in ``[0, size)`` (no-op if empty)."""
    if index.size == 0:
        return
    if index.size <= SHORT_RANGE:  # a loss's few targets, a character's index: no reduction
        lo, hi = value_range(index)
    else:
        if index.dtype == np.int64:  # one reduction: as unsigned, a negative one is above any size
            if np.maximum.reduce(index.view(np.uint64), axis=None) < size:
                return
        lo, hi = index.min(), index.max()
    if lo < 0 or hi >= size:
        raise index_error(op, hi if hi >= size else lo, size)


def new_flag():
    """A cleared host flag for one kernel launch (see the module docstring for the layout)."""
    return np.zeros(FLAG_LEN, np.int64)


def raise_if_flagged(flag, op=None):
    """Raise the :func:`index_error` a kernel recorded in ``flag`` (a host array), clearing it.

    ``op`` names the primitive when the caller knows it; otherwise the flag's op code does."""
    if flag[0]:
        value, size, code = int(flag[1]), int(flag[2]), int(flag[3])
        flag[:] = 0
        if op is None:
            op = OPS[code] if 0 <= code < len(OPS) else "indexing"
        raise index_error(op, value, size)
