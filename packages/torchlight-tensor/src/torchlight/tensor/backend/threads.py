"""How many threads one operation may use on the CPU: PyTorch's ``set_num_threads`` and
``get_num_threads``.

A backend that can limit its threads lists the ``"threads"`` capability and implements
``set_num_threads(n)`` (the numpy backend caps the BLAS library behind its matrix products;
the numba backend its own thread pool). :func:`set_num_threads` asks every loaded backend, and
the registry asks each backend loaded later (:func:`configure`), so the order of
``set_num_threads`` and the first tensor on a device does not matter.

Environment variables read before Python starts (``OMP_NUM_THREADS``, ``NUMBA_NUM_THREADS``)
set the pools' sizes as before; :func:`get_num_threads` reports ``OMP_NUM_THREADS`` (else the
cores this process may run on) until :func:`set_num_threads` is called.
"""

from __future__ import annotations

import operator
import os
from typing import Any

from ..errors import TorchlightError
from .protocol import THREADS

__all__ = ["set_num_threads", "get_num_threads", "configure", "ThreadCountError"]


class ThreadCountError(TorchlightError, ValueError):
    """``set_num_threads`` was given something other than a positive integer."""


_CHOSEN: list[int] = []  # the number set_num_threads was last given (empty: never called)
_LOADED: list = []  # the loaded backends with the capability (the registry shows each one)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def get_num_threads() -> int:
    """The number of threads one operation may use on the CPU: the last
    :func:`set_num_threads`, else ``$OMP_NUM_THREADS``, else the cores this process may run on.

    >>> import torchlight as tl
    >>> tl.get_num_threads() >= 1
    True
    """
    if _CHOSEN:
        return _CHOSEN[0]
    env = os.environ.get("OMP_NUM_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else _cores()


def set_num_threads(n: int) -> None:
    """Let one operation use at most ``n`` threads on the CPU (``n >= 1``), from now on.

    Every loaded backend with the ``"threads"`` capability is told now, one loaded later when it
    loads: on the numpy backend it caps the BLAS library (matrix products; its other kernels run
    on the calling thread), on the numba backend its thread pool, which cannot grow past
    ``NUMBA_NUM_THREADS`` (the cores, unless that variable said otherwise when numba started).

    >>> import torchlight as tl
    >>> before = tl.get_num_threads()
    >>> tl.set_num_threads(1)
    >>> tl.get_num_threads()
    1
    >>> tl.set_num_threads(before)
    """
    try:
        count = operator.index(n)
    except TypeError:
        raise ThreadCountError(
            f"set_num_threads expects a positive integer, got {type(n).__name__} {n!r}"
        ) from None
    if isinstance(n, bool) or count < 1:
        raise ThreadCountError(f"set_num_threads expects a positive integer, got {n!r}")
    _CHOSEN[:] = [count]
    for backend in _LOADED:
        backend.set_num_threads(count)


def configure(backend: Any) -> None:
    """Called by the registry for every backend it loads: one with the ``"threads"``
    capability is told the number :func:`set_num_threads` chose (if it was called), and every
    later one."""
    if THREADS not in getattr(backend, "capabilities", ()):
        return
    if all(b is not backend for b in _LOADED):
        _LOADED.append(backend)
    if _CHOSEN:
        backend.set_num_threads(_CHOSEN[0])
