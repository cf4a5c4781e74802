"""One rank hangs (sleeps) while the others wait in a collective: the collective timeout must
name it and end the job.

argv[1], the collective the others wait in: ``barrier``, ``all_reduce``, ``broadcast_object``,
``ddp`` (the gradient all-reduce at the end of backward), or ``leave`` (the last rank does not
hang but ends its script with status 0 while the others wait in a barrier); argv[2], the
timeout in seconds, or ``env`` to take it from $TORCHLIGHT_COLLECTIVE_TIMEOUT. The last rank is
the one that hangs.
"""

import sys
import time

import torchlight as tl
import torchlight.distributed as dist
from torchlight import nn

mode, timeout = sys.argv[1], sys.argv[2]
dist.init(timeout=None if timeout == "env" else float(timeout))
r, n = dist.rank(), dist.world_size()
model = dist.DistributedDataParallel(nn.Linear(3, 2))
dist.barrier()  # everyone is here: collectives work while every rank takes part
dist.all_reduce(tl.ones(2))
if r == n - 1:
    if mode == "leave":
        sys.exit(0)
    time.sleep(120)  # the hang: no MPI call, no exception, no exit
    print("should not be reached", flush=True)
if mode in ("barrier", "leave"):
    dist.barrier()
elif mode == "all_reduce":
    dist.all_reduce(tl.ones(4))
elif mode == "broadcast_object":
    dist.broadcast_object({"a": 1})
elif mode == "ddp":
    model(tl.randn(4, 3)).sum().backward()
print("should not be reached", flush=True)
