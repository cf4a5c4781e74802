"""Rank 0 saves a checkpoint; every rank resumes from it and continues exactly."""

import os
import sys

import numpy as np

import torchlight as tl
import torchlight.distributed as dist
from torchlight import nn, optim

dist.init()
r, n = dist.rank(), dist.world_size()
path = os.path.join(sys.argv[1], "ckpt.npz")

writes = []
_save = tl.save


def counting_save(obj, p):
    writes.append(p)
    return _save(obj, p)


tl.save = counting_save


def build(seed):
    tl.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    ddp = dist.DistributedDataParallel(model, bucket_mb=0.0005)
    return model, ddp, optim.Adam(model.parameters(), lr=1e-2)


def train(ddp, opt, steps):
    for s in steps:
        rng = np.random.default_rng([s, r])
        x = tl.tensor(rng.normal(size=(6, 4)), dtype=tl.float32)
        y = tl.tensor(rng.normal(size=(6, 2)), dtype=tl.float32)
        opt.zero_grad()
        ((ddp(x) - y) ** 2).mean().backward()
        opt.step()


# uninterrupted: 6 steps
model_a, ddp_a, opt_a = build(0)
train(ddp_a, opt_a, range(6))

# interrupted: 3 steps, checkpoint by rank 0, then a fresh process state resumes
model_b, ddp_b, opt_b = build(0)
train(ddp_b, opt_b, range(3))
dist.save_on_rank0({"model": model_b.state_dict(), "optim": opt_b.state_dict(), "step": 3}, path)
assert os.path.exists(path)  # the barrier inside: complete on every rank before anyone goes on
assert dist.all_gather_object(len(writes)) == [1] + [0] * (n - 1), "only rank 0 writes"

for from_rank0 in (False, True):
    model_c, ddp_c, opt_c = build(100 + r)  # different init: everything must come from the file
    state = dist.load(path, from_rank0=from_rank0)
    model_c.load_state_dict(state["model"])
    opt_c.load_state_dict(state["optim"])
    train(ddp_c, opt_c, range(state["step"], 6))
    for (name, p), q in zip(model_c.named_parameters(), model_a.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
    assert dist.parameters_in_sync(model_c)

dist.barrier()
if r == 0:
    print(f"ALL OK {n}", flush=True)
