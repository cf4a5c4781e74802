"""PyTorch's process-group API (init_process_group, get_rank, ReduceOp, ...) on 2+ ranks, written
the way a PyTorch program is."""

import numpy as np

import torchlight as tl
import torchlight.distributed as dist
from torchlight import nn

assert dist.is_available()
dist.init_process_group(backend="gloo")
assert dist.is_initialized()
r, n = dist.get_rank(), dist.get_world_size()
assert n >= 2 and 0 <= r < n and dist.get_backend() == "mpi"
assert dist.get_rank(group=dist.group.WORLD) == r

try:
    dist.init_process_group("nccl", world_size=n + 1)
    raise AssertionError("a wrong world_size should raise")
except dist.DistributedError as exc:
    assert "world_size" in str(exc)

# all_reduce with every ReduceOp
base = np.arange(1.0, 7.0).reshape(2, 3)
want = {
    dist.ReduceOp.SUM: sum(base + k for k in range(n)),
    dist.ReduceOp.AVG: sum(base + k for k in range(n)) / n,
    dist.ReduceOp.MAX: base + n - 1,
    dist.ReduceOp.MIN: base,
    dist.ReduceOp.PRODUCT: np.prod([base + k for k in range(n)], axis=0),
}
for op, expected in want.items():
    t = tl.tensor(base + r, dtype=tl.float64)
    assert dist.all_reduce(t, op=op) is t
    np.testing.assert_allclose(t.numpy(), expected, err_msg=str(op))
t = tl.tensor([float(r)])
work = dist.all_reduce(t, dist.ReduceOp.SUM, async_op=True)
assert work.wait() and work.is_completed()
assert t.item() == sum(range(n))

# broadcast from src (positional, as in PyTorch) and as async
t = tl.full((3,), float(r))
dist.broadcast(t, n - 1)
assert t.tolist() == [n - 1.0] * 3
t = tl.full((2,), float(r))
dist.broadcast(t, src=0, async_op=True).wait()
assert t.tolist() == [0.0, 0.0]

# all_gather into a list
out = [tl.zeros(2, dtype=tl.float64) for _ in range(n)]
assert dist.all_gather(out, tl.tensor([r, 2.0 * r], dtype=tl.float64)) is None
assert [o.tolist() for o in out] == [[k, 2.0 * k] for k in range(n)]

# DistributedDataParallel reached through torch.nn.parallel's path, with PyTorch's arguments
from torchlight.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

tl.manual_seed(r)  # different initialisations: DDP broadcasts rank 0's
model = nn.Linear(3, 1).double()
ddp = DDP(model, device_ids=None, output_device=None, bucket_cap_mb=1, find_unused_parameters=False)
assert ddp.bucket_mb == 1 and ddp.device_ids is None
rng = np.random.default_rng(0)
X, Y = rng.standard_normal((2 * n, 3)), rng.standard_normal((2 * n, 1))
x, y = tl.tensor(X[2 * r : 2 * r + 2]), tl.tensor(Y[2 * r : 2 * r + 2])
((ddp(x) - y) ** 2).mean().backward()
w = model.weight.detach().numpy()[0]
b = model.bias.detach().numpy()[0]
resid = X @ w + b - Y[:, 0]
# the average over ranks of per-rank means = the mean over the whole batch
np.testing.assert_allclose(model.weight.grad.numpy()[0], 2 * (resid @ X) / (2 * n), rtol=1e-12)
np.testing.assert_allclose(model.bias.grad.numpy(), [2 * resid.sum() / (2 * n)], rtol=1e-12)
ddp2 = DDP(nn.Linear(2, 2), [0])  # PyTorch's positional device_ids
assert ddp2.device_ids == [0] and ddp2.bucket_mb == 25.0

try:
    dist.all_reduce(tl.zeros(1), group=object())
    raise AssertionError("sub-groups are not supported")
except dist.DistributedError:
    pass

assert dist.barrier(async_op=True).wait()
if r == 0:
    print(f"ALL OK {n}", flush=True)
dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
