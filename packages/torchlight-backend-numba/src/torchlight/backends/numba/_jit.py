"""How every kernel is compiled: twice, once parallel and once serial, chosen per call by size.

``@kernel`` compiles a function with ``@njit(parallel=True, cache=True, fastmath=False)`` —
``prange`` loops spread over numba's thread pool — and a copy of it without ``parallel`` (``prange``
is then a plain ``range``). Waking the pool costs microseconds on an idle machine and far more
on a busy one, while a 4k-element kernel runs in well under a microsecond per thousand
elements, so calls whose work is below ``PARALLEL_MIN`` elements (env
``TORCHLIGHT_NUMBA_PARALLEL_MIN``, default 32768) take the serial copy. The copy gets its own
``__qualname__`` so numba's on-disk cache (keyed by file, qualified name and signature, not by
compile flags) keeps the two apart. Both are compiled lazily, per signature, on first use.
Every cached function is registered with ``_freshness.refresh``, which empties numba's cache of
it when any source of this backend changed (numba checks only the function's own file).
"""

import os
from types import FunctionType
from typing import Any

from numba import get_num_threads, njit

from ._freshness import refresh

__all__ = ["kernel", "helper", "sum_helper", "Kernel", "PARALLEL_MIN", "JIT_OPTIONS", "SUM_OPTIONS"]

# ``Any``, not ``dict[str, Any]``: it is also passed as ``overload(..., jit_options=...)``, which
# numba's stubs type as a TypedDict without ``cache`` (numba forwards any ``jit`` option).
JIT_OPTIONS: Any = dict(cache=True, error_model="numpy", fastmath=False)
# Sums only: "reassoc" lets LLVM split ``t += v`` into SIMD partial sums (no nnan/ninf, so NaN and
# inf propagate as before). The order of the partial sums is fixed by the compiled vector width,
# not by the thread count, so results stay reproducible on a machine.
SUM_OPTIONS: dict[str, Any] = dict(JIT_OPTIONS, fastmath={"reassoc"})
PARALLEL_MIN = int(os.environ.get("TORCHLIGHT_NUMBA_PARALLEL_MIN", "32768"))


class Kernel:
    """A parallel and a serial compilation of one kernel; ``k.pick(work)`` chooses."""

    __slots__ = ("par", "ser", "__name__", "__dict__")

    def __init__(self, fn):
        self.par = njit(parallel=True, **JIT_OPTIONS)(fn)
        copy = FunctionType(
            fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__, fn.__closure__
        )
        copy.__qualname__ = fn.__qualname__ + "_serial"
        copy.__module__ = fn.__module__
        self.ser = njit(**JIT_OPTIONS)(copy)
        refresh(self.par)
        refresh(self.ser)
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def pick(self, work, minimum=None):
        if work >= (PARALLEL_MIN if minimum is None else minimum) and get_num_threads() > 1:
            return self.par
        return self.ser

    def __call__(self, *args):  # parallel by default (benchmarks, direct use)
        return self.par(*args)


def kernel(fn):
    return Kernel(fn)


def helper(fn):
    """A serial device function called from kernels. The call stays a call (each compiled function
    is its own LLVM library, ~15 ns with array arguments): fine per row or block, too much per
    short row — ``_fused._row`` is therefore ``inline="always"`` instead."""
    d = njit(**JIT_OPTIONS)(fn)
    refresh(d)
    return d


def sum_helper(fn):
    """A serial helper that only sums (``SUM_OPTIONS``): with ``fastmath`` off, ``t += v`` is one
    serial chain of adds (~0.25 ns per value even with four hand-made lanes); with ``reassoc``
    the loop becomes SIMD code, measured 4.5× faster on rows of 64 float32 values."""
    d = njit(**SUM_OPTIONS)(fn)
    refresh(d)
    return d
