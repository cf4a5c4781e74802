"""Host memory that a training step frees is kept for the next step, not handed back to the OS.

A backend that keeps tensors in host memory allocates every op's output with ``malloc`` (numpy
does), and an autograd graph frees most of them within the same step: an intermediate as soon as
the program drops it, a saved value as soon as backward has used it. With glibc's defaults,
a block above the *mmap threshold* (128 KiB, raised adaptively) is its own ``mmap`` and goes
back to the OS when freed, and the top of the heap is trimmed above 128 KiB of free space; the
next step then page-faults the same memory back in, zeroed, one 4 KiB page at a time. On the
mini-GPT training step (``bench_gpt_phases.py --devices cpu``) that made the numpy backend 25%
slower. Raising both thresholds keeps freed blocks in the heap for reuse: blocks up to
:data:`MMAP_THRESHOLD` come from the heap, and up to :data:`TRIM_THRESHOLD` of free heap is
kept. The process's resident memory then stays near its peak instead of following every free.

The registry applies this once, when it loads the first backend with the ``host_memory``
capability; ``TORCHLIGHT_MALLOC=system`` (in the environment) leaves the C library's settings
alone. Only glibc has these settings: elsewhere (macOS, musl) nothing changes.

>>> from torchlight.tensor.backend.allocator import keep_freed_memory
>>> keep_freed_memory() in (True, False)   # True where glibc took the settings
True
"""

import ctypes
import os
import sys

__all__ = ["keep_freed_memory", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 32 << 20
"""Blocks up to this size come from the heap (32 MiB: glibc's largest allowed value on 64-bit)."""

TRIM_THRESHOLD = 1 << 30
"""Up to this much free memory at the top of the heap is kept for reuse (1 GiB)."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
_applied: list = []


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds (see the module docstring), once per process.
    Returns True when the settings are in effect."""
    if not _applied:
        _applied.append(_apply())
    return _applied[0]


def _apply() -> bool:
    if os.environ.get("TORCHLIGHT_MALLOC") == "system" or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return False
    # mmap threshold first: setting either one turns glibc's adaptive threshold off
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
