"""Freed host memory is reused, not faulted back in (``torchlight.tensor.backend.allocator``).

The oracle is the kernel's count of minor page faults: a step that frees 64 MiB of 4 MiB arrays
and allocates them again costs thousands of faults (one per 4 KiB page) when the C library
handed the memory back to the OS (glibc trims the top of its heap once more than a few MiB is
free), and almost none when it kept it. Each case runs in a fresh interpreter, since the
setting is process-wide; ``TORCHLIGHT_MALLOC=system`` is the control.
"""

import os
import subprocess
import sys

import pytest

from torchlight.tensor.backend.allocator import keep_freed_memory

CHILD = """
import resource
import numpy as np
import torchlight as tl
tl.zeros(1)  # loads the cpu backend, which applies the allocator settings
for _ in range(3):  # the steady state of a training loop: each step frees what it made
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step = [np.ones(1 << 19) for _ in range(16)]  # 16 x 4 MiB
    del step
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(faults)
"""


def _faults(**env):
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


@pytest.mark.skipif(not keep_freed_memory(), reason="needs glibc's mallopt (Linux)")
def test_a_freed_block_is_reused_without_page_faults():
    kept = _faults()
    returned = _faults(TORCHLIGHT_MALLOC="system")
    assert returned > 500, (
        f"control: the C library's defaults should fault the pages in again ({returned})"
    )
    assert kept < 50, f"with torchlight's settings the block should be reused ({kept} faults)"
