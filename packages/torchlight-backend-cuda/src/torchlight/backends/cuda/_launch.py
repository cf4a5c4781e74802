"""Launch configuration, kernel caches, and the shared index helpers compiled for the device.

Grid and block sizes come from the problem: elementwise kernels use ``BLOCK`` threads and
``ceil(n / BLOCK)`` blocks, capped at ``MAX_BLOCKS`` (a few waves of the device's multiprocessors);
every kernel walks its work with a grid-stride loop, so it is correct for any grid, and for element
counts that are not multiples of the block size. Row kernels (reductions, softmax, layer norm) run
one block per row, with ``ROW_BLOCK`` threads looping over rows wider than the block.

Under numba's CUDA simulator every CUDA thread is a Python thread (creating one costs ~0.3 ms)
and every ``syncthreads`` a round of thread switches, so the simulator gets small blocks (16
threads, 4 for row kernels) and at most 2 of them — the same kernels, the same code paths,
including multi-block grid-stride loops and rows wider than a block — and each simulated launch
runs with a short GIL switch interval. ``TORCHLIGHT_CUDA_BLOCK`` / ``TORCHLIGHT_CUDA_MAX_BLOCKS``
/ ``TORCHLIGHT_CUDA_ROW_BLOCK`` override the choice (powers of two for the block sizes);
``tests/test_launch_sizes.py`` runs GPU-sized launches under the simulator that way.

The index helpers are ``torchlight.tensor.indexing``'s pure functions, compiled unchanged with
``cuda.jit(device=True)`` — the same source the CPU backends use.
"""

import os
import sys
from typing import Any

import numpy as np

from ._numpy_compat import restore_numpy_aliases

restore_numpy_aliases()  # before numba-cuda compiles anything (see _numpy_compat)

from numba import config, cuda  # noqa: E402

from torchlight.tensor import indexing  # noqa: E402
from torchlight.tensor.errors import BackendError  # noqa: E402

__all__ = [
    "SIMULATOR",
    "BLOCK",
    "ROW_BLOCK",
    "MAX_BLOCKS",
    "MULTIPROCESSORS",
    "WARP_SHUFFLE",
    "grid_1d",
    "grid_rows",
    "launch",
    "coalesce",
    "index_to_position",
    "to_index",
    "cached",
    "DISK_CACHE",
    "enable_disk_cache",
    "sources_digest",
]

# getattr: numba.config sets its options at run time (from the environment), unseen by mypy
# getattr: numba's type stubs do not declare the setting, which exists at run time
SIMULATOR = bool(getattr(config, "ENABLE_CUDASIM"))  # noqa: B009


def _env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v else default


def _pow2(n):
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


if SIMULATOR:
    _sm = 1
else:  # pragma: no cover - needs a GPU
    try:
        _sm = cuda.get_current_device().MULTIPROCESSOR_COUNT
    except Exception:
        _sm = 80

MULTIPROCESSORS = _sm  # the simulator's one: it runs at most a couple of blocks at a time
BLOCK = _pow2(_env_int("TORCHLIGHT_CUDA_BLOCK", 16 if SIMULATOR else 256))
ROW_BLOCK = _pow2(_env_int("TORCHLIGHT_CUDA_ROW_BLOCK", 4 if SIMULATOR else 256))
MAX_BLOCKS = _env_int("TORCHLIGHT_CUDA_MAX_BLOCKS", 2 if SIMULATOR else 32 * _sm)
SIM_SWITCH_INTERVAL = float(os.environ.get("TORCHLIGHT_CUDASIM_SWITCH_INTERVAL", "2e-5"))
# warp-shuffle final stage of block reductions (the simulator has no shuffles; it uses the
# shared-memory tree all the way down). Needs ROW_BLOCK >= 64.
WARP_SHUFFLE = (
    not SIMULATOR and ROW_BLOCK >= 64 and os.environ.get("TORCHLIGHT_CUDA_WARP_SHUFFLE", "1") != "0"
)


def _thread_safe_simulator_shared_arrays():
    """numba's simulator creates a block's shared array lazily, keyed by the calling line, when
    the first of the block's threads asks for it; two threads asking at once can each get their
    own array, and a block reduction then reads garbage. Serialise that allocation."""
    import threading

    from numba.cuda.simulator import kernelapi

    if getattr(kernelapi.FakeCUDAShared.array, "_torchlight_locked", False):
        return
    orig = kernelapi.FakeCUDAShared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:
            return orig(self, shape, dtype, alignment)
        if isinstance(dtype, kernelapi.types.Type):
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        f = sys._getframe(1)
        caller = (f.f_code.co_filename, f.f_lineno)
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    array._torchlight_locked = True
    kernelapi.FakeCUDAShared.array = array


if SIMULATOR:
    _thread_safe_simulator_shared_arrays()

# --- the shared pure helpers, compiled for the device --------------------------------------
index_to_position = cuda.jit(device=True)(indexing.index_to_position)
to_index = cuda.jit(device=True)(indexing.to_index)
coalesce = indexing.coalesce  # host side, before each strided launch


def grid_1d(n, block=None):
    """``(blocks, threads)`` for ``n`` independent elements."""
    block = block or BLOCK
    return max(1, min((n + block - 1) // block, MAX_BLOCKS)), block


def grid_rows(nrows):
    """``(blocks, threads)`` for one block per row (grid-stride over rows beyond the cap)."""
    return max(1, min(nrows, MAX_BLOCKS)), ROW_BLOCK


def launch(kernel, grid, block, *args):
    """Launch after checking that no host array is passed (numba would copy it silently)."""
    for a in args:
        if type(a) is np.ndarray:
            raise BackendError(
                "cuda backend (internal): a host ndarray was passed to a kernel; "
                "that would be a hidden host->device copy"
            )
    if SIMULATOR:
        # The simulator runs each CUDA thread as a Python thread and a manager thread polls them
        # at every syncthreads(); with the default 5 ms GIL switch interval a barrier costs
        # milliseconds. A short interval, for the duration of the launch only, is ~10x faster.
        old = sys.getswitchinterval()
        sys.setswitchinterval(SIM_SWITCH_INTERVAL)
        try:
            kernel[grid, block](*args)
        finally:
            sys.setswitchinterval(old)
        return
    kernel[grid, block](*args)


_CACHE: dict[tuple[Any, ...], Any] = {}  # key -> compiled kernel
# numba-cuda's on-disk kernel cache (``cuda.jit(cache=True)``, files next to
# each kernel's module in __pycache__, one per compute capability): a second process loads the
# compiled kernels instead of compiling them again (seconds per kernel through NVVM). Not under
# the simulator, which compiles nothing. TORCHLIGHT_CUDA_CACHE=0 turns it off.
DISK_CACHE = not SIMULATOR and os.environ.get("TORCHLIGHT_CUDA_CACHE", "1") != "0"
CACHE_STAMP = "torchlight-cuda-sources.sha1"
# cache directory -> True when written from other sources (decided once)
_stale_dirs: dict[str, bool] = {}


def sources_digest():
    """SHA-1 over this package's modules and the core helpers its kernels compile."""
    import hashlib
    from pathlib import Path

    from torchlight.tensor.backend import scalar_ops

    h = hashlib.sha1()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")) + [
        Path(scalar_ops.__file__),
        Path(indexing.__file__),
    ]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _stale(directory):
    """True (once per directory and process) when the kernels cached there were compiled from
    other sources: numba checks only a kernel's own file, not the helpers compiled into it."""
    if directory not in _stale_dirs:
        digest, stamp = sources_digest(), os.path.join(directory, CACHE_STAMP)
        try:
            with open(stamp) as f:
                old = f.read().strip()
        except OSError:
            old = None
        _stale_dirs[directory] = old != digest
        if old != digest:
            try:
                os.makedirs(directory, exist_ok=True)
                with open(stamp, "w") as f:
                    f.write(digest)
            except OSError:  # read-only: numba will not write its cache there either
                pass
    return _stale_dirs[directory]


def enable_disk_cache(kernel):
    """Turn on numba-cuda's disk cache for ``kernel`` (emptied first if the sources changed).

    Kernels here are closures over their element types and device functions; numba-cuda keys a
    cached closure by the pickled cell contents, so a closure that does not pickle stays
    memory-cached only (returns False) rather than failing at its first launch."""
    from numba.cuda.serialize import dumps

    try:
        dumps(tuple(c.cell_contents for c in kernel.py_func.__closure__ or ()))
        kernel.enable_caching()
        cache = kernel._cache
        if _stale(cache.cache_path):
            cache.flush()
    except Exception:  # the disk cache is an optimisation: never a reason to fail a launch
        return False
    return True


def cached(key, factory):
    """Build (once) and return the kernel ``factory()`` for ``key``."""
    k = _CACHE.get(key)
    if k is None:
        k = _CACHE[key] = factory()
        if DISK_CACHE:
            enable_disk_cache(k)
    return k
