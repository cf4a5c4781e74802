"""Ranks that build different models: ``DistributedDataParallel`` raises on every rank, with
``init_sync`` on or off, naming the tensors that differ.

argv[1]: ``shape`` (rank 1's first layer is wider) or ``dtype`` (rank 1's model is float64).
"""

import sys

import torchlight as tl
import torchlight.distributed as dist
from torchlight import nn

dist.init()
r = dist.rank()
what = sys.argv[1]


def model():
    width = 4 if (what == "shape" and r == 1) else 3
    m = nn.Sequential(nn.Linear(5, width), nn.Tanh(), nn.Linear(width, 2))
    return m.to(tl.float64) if (what == "dtype" and r == 1) else m


for init_sync in (False, True):
    try:
        dist.DistributedDataParallel(model(), init_sync=init_sync)
    except dist.DistributedError as exc:
        msg = str(exc)
        assert "different models" in msg and "rank 1 differs from rank 0" in msg, msg
        if what == "shape":
            assert "0.weight: rank 0 (3, 5) float32, rank 1 (4, 5) float32" in msg, msg
            assert "2.weight" in msg and "0.bias" in msg, msg
        else:
            assert "float64" in msg, msg
    else:
        raise AssertionError(
            f"rank {r}: DistributedDataParallel(init_sync={init_sync}) accepted different models"
        )
# identical models still wrap (the check is not over-eager)
tl.manual_seed(r)
ddp = dist.DistributedDataParallel(nn.Linear(5, 3), init_sync=False)
dist.barrier()
if r == 0:
    print("ALL OK 2", flush=True)
