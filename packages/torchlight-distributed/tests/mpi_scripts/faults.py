"""One rank fails while the others wait in a collective: the job must end, not hang.

argv[1], what rank 1 does: ``raise`` (an exception), ``exit`` (``sys.exit(3)``), ``abort``
(``dist.abort(5)``), ``die`` (killed by SIGKILL: no Python code runs).
"""

import os
import signal
import sys
import time

import torchlight as tl
import torchlight.distributed as dist

dist.init()
r = dist.rank()
mode = sys.argv[1]
dist.barrier()
if r == 1:
    time.sleep(0.2)  # let the other ranks block in the all_reduce below
    if mode == "raise":
        raise ValueError("rank one failed on purpose")
    if mode == "exit":
        sys.exit(3)
    if mode == "abort":
        dist.abort(5, "giving up on purpose")
    if mode == "die":
        os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(tl.ones(3))  # rank 1 never gets here: without the abort this blocks forever
print("should not be reached", flush=True)
