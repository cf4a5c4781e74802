"""DistributedDataParallel against single-process training on the concatenated batch."""

import copy

import numpy as np

import torchlight as tl
import torchlight.distributed as dist
from torchlight import nn, optim

dist.init()
r, n = dist.rank(), dist.world_size()
B = 4  # per-rank batch


def make_model(dtype, seed):
    tl.manual_seed(seed)
    m = nn.Sequential(
        nn.Linear(5, 16),
        nn.Tanh(),
        nn.LayerNorm(16),
        nn.Linear(16, 16),
        nn.Tanh(),
        nn.Linear(16, 3),
    )
    return m.to(dtype)


def global_batch(step, dtype):
    rng = np.random.default_rng([7, step])
    x = rng.normal(size=(n * B, 5))
    y = rng.normal(size=(n * B, 3))
    return tl.tensor(x, dtype=dtype), tl.tensor(y, dtype=dtype)


def shard(t):
    return t[r * B : (r + 1) * B]


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def grads(model):
    return [None if p.grad is None else p.grad.to_numpy() for p in model.parameters()]


# --- 1. gradients == single-process gradients on the concatenated batch (float64) ------------
for bucket_mb in (25.0, 0.001):  # one bucket; one bucket per parameter (1 KiB cap)
    model = make_model(tl.float64, seed=r)  # different init per rank: DDP broadcasts rank 0's
    ddp = dist.DistributedDataParallel(model, bucket_mb=bucket_mb)
    assert dist.parameters_in_sync(model)
    if bucket_mb < 1:
        assert len(ddp.bucket_sizes) > 2, ddp.bucket_sizes
    ref = copy.deepcopy(model)
    for step in range(3):
        x, y = global_batch(step, tl.float64)
        loss_of(ref, x, y).backward()
        loss_of(ddp, shard(x), shard(y)).backward()  # synchronised by the time backward returns
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            np.testing.assert_allclose(
                p.grad.numpy(),
                q.grad.numpy(),
                rtol=1e-11,
                atol=1e-13,
                err_msg=f"step {step} {name} bucket_mb={bucket_mb}",
            )
        # after backward each .grad is a view of its bucket's buffer
        bufs = {id(b.buffer) for b in ddp._buckets}
        assert all(id(p.grad._td.storage) in bufs for p in model.parameters())
        # alternate the two ways of zeroing: in place (backward then accumulates straight into
        # the bucket buffer, no copy) and set_to_none (one copy into the buffer)
        for m in (model, ref):
            if step % 2:
                m.zero_grad()
            else:
                for p in m.parameters():
                    with tl.no_grad():
                        p.grad.zero_()

# --- 2. ten optimizer steps: bit-identical across ranks, equal to single-process -------------
for dtype in (tl.float32, tl.float64):
    model = make_model(dtype, seed=3)
    ref = copy.deepcopy(model)
    ddp = dist.DistributedDataParallel(model, bucket_mb=0.002)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    ref_opt = optim.Adam(ref.parameters(), lr=1e-2)
    for step in range(10):
        x, y = global_batch(100 + step, dtype)
        opt.zero_grad()
        loss_of(ddp, shard(x), shard(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_of(ref, x, y).backward()
        ref_opt.step()
        assert dist.parameters_in_sync(model), f"replicas diverged at step {step} ({dtype})"
    if dtype is tl.float64:
        for p, q in zip(model.parameters(), ref.parameters()):
            np.testing.assert_allclose(
                p.detach().numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-11
            )
    # the digests compare all bytes; check a raw gather too
    flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    everyone = dist.all_gather(tl.from_numpy(flat), stack=True).numpy()
    assert all(np.array_equal(everyone[0], everyone[k]) for k in range(n))

# --- 3. no_sync: gradient accumulation over two micro-batches --------------------------------
model = make_model(tl.float64, seed=5)
ref = copy.deepcopy(model)
ddp = dist.DistributedDataParallel(model, bucket_mb=0.001)
x1, y1 = global_batch(200, tl.float64)
x2, y2 = global_batch(201, tl.float64)
with ddp.no_sync():
    loss_of(ddp, shard(x1), shard(y1)).backward()
local = model[0].weight.grad.to_numpy()
others = dist.all_gather(tl.from_numpy(local), stack=True).numpy()
assert not np.allclose(others[0], others[1]), "no_sync must not communicate"
loss_of(ddp, shard(x2), shard(y2)).backward()  # synchronises everything accumulated
loss_of(ref, x1, y1).backward()
loss_of(ref, x2, y2).backward()
for p, q in zip(model.parameters(), ref.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-11, atol=1e-13)


# --- 4. parameters without a gradient -----------------------------------------------------------
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(3, 2)  # used by rank 0 only
        self.never = nn.Linear(3, 2)  # used by no rank

    def forward(self, x, use_b):
        out = self.a(x)
        return out + self.b(x) if use_b else out


tl.manual_seed(0)
net = Branchy().to(tl.float64)
ddp = dist.DistributedDataParallel(net, find_unused_parameters=True, bucket_mb=0.0001)
x = tl.tensor(np.random.default_rng(r).normal(size=(4, 3)))
ddp(x, use_b=(r == 0)).sum().backward()
assert net.never.weight.grad is None and net.never.bias.grad is None
gb = net.b.weight.grad.to_numpy()
want_b = np.ones((4, 2)).T @ np.random.default_rng(0).normal(size=(4, 3)) / n  # rank 0's / n
np.testing.assert_allclose(gb, want_b, rtol=1e-12)
ga = dist.all_gather(net.a.weight.grad, stack=True).numpy()
np.testing.assert_array_equal(ga[0], ga[1])

# without find_unused_parameters: the next forward says what went wrong ...
net.zero_grad()
ddp = dist.DistributedDataParallel(net, bucket_mb=0.0001)
ddp(x, use_b=True).sum().backward()  # `never` gets no gradient: the round cannot complete
try:
    ddp(x, use_b=True)
    raise AssertionError("expected a DistributedError naming the unused parameters")
except dist.DistributedError as exc:
    assert "never.weight" in str(exc), exc
# ... and finish_gradient_synchronization() completes it
ddp.finish_gradient_synchronization()
assert net.never.weight.grad is None
gb = dist.all_gather(net.b.weight.grad, stack=True).numpy()
np.testing.assert_array_equal(gb[0], gb[1])
ddp.finish_gradient_synchronization()  # a no-op now

dist.barrier()  # every rank got here
if r == 0:
    print(f"ALL OK {n}", flush=True)
