"""Host↔device transfer counters: the instrument behind "tensors live on the GPU".

Every copy the backend makes between host and device memory goes through :func:`to_device` or
:func:`to_host` here, which count calls and bytes. Kernels only ever receive device arrays
(``_launch.launch`` refuses a host ndarray, which numba would otherwise copy silently), so
these counters are the complete record of data crossing the bus. For example::

    from torchlight.backends.cuda import transfers
    with transfers.counting() as c:
        ...training step...
    print(c.h2d, c.d2h)           # calls; c.h2d_bytes / c.d2h_bytes for volume
"""

import contextlib
import traceback

__all__ = ["Counts", "counts", "reset", "counting", "to_device", "to_host"]


class Counts:
    """Transfer tallies; ``log`` keeps (direction, nbytes, caller) when ``trace`` is on."""

    __slots__ = ("h2d", "d2h", "h2d_bytes", "d2h_bytes", "trace", "log")

    def __init__(self, trace=False):
        self.h2d = self.d2h = self.h2d_bytes = self.d2h_bytes = 0
        self.trace = trace
        self.log = []

    def snapshot(self):
        """The four tallies as a dict (``h2d``, ``d2h``, ``h2d_bytes``, ``d2h_bytes``)."""
        return {
            "h2d": self.h2d,
            "d2h": self.d2h,
            "h2d_bytes": self.h2d_bytes,
            "d2h_bytes": self.d2h_bytes,
        }

    def __repr__(self):
        return f"Counts(h2d={self.h2d}, d2h={self.d2h}, h2d_bytes={self.h2d_bytes}, d2h_bytes={self.d2h_bytes})"


_TOTAL = Counts()
_active: list[Counts] = []  # nested counting() scopes


def counts() -> Counts:
    """Totals since import (or the last :func:`reset`)."""
    return _TOTAL


def reset() -> None:
    """Set the process-wide transfer tallies back to zero."""
    global _TOTAL
    _TOTAL = Counts()


@contextlib.contextmanager
def counting(trace=False):
    """Count the transfers made inside the ``with`` block (``trace=True`` records call sites)."""
    c = Counts(trace)
    _active.append(c)
    try:
        yield c
    finally:
        _active.remove(c)


def _record(direction, nbytes):
    for c in (_TOTAL, *_active):
        if direction == "h2d":
            c.h2d += 1
            c.h2d_bytes += nbytes
        else:
            c.d2h += 1
            c.d2h_bytes += nbytes
        if c.trace:
            stack = traceback.extract_stack(limit=12)[:-3]
            frames = [
                f"{f.filename.split('/src/')[-1]}:{f.lineno} {f.name}"
                for f in stack
                if "backends/cuda" not in f.filename
            ]
            c.log.append((direction, nbytes, frames[-4:]))


def to_device(cuda, array):
    """``cuda.to_device(array)``, counted."""
    _record("h2d", array.nbytes)
    return cuda.to_device(array)


def to_host(device_array):
    """``device_array.copy_to_host()``, counted."""
    _record("d2h", device_array.nbytes)
    return device_array.copy_to_host()
