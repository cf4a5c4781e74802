"""broadcast, all_reduce (sum/mean/max/min), all_gather, broadcast_parameters on 2+ ranks."""

import numpy as np

import torchlight as tl
import torchlight.distributed as dist
from torchlight import nn

dist.init()
r, n = dist.rank(), dist.world_size()
assert dist.is_initialized() and n >= 2

# broadcast: in place, from root 0 and from the last rank
t = tl.full((3, 4), float(r), dtype=tl.float64)
storage = t._td.storage
dist.broadcast(t, root=0)
assert t._td.storage is storage  # in place, same storage
assert np.all(t.numpy() == 0.0)
t = tl.arange(5) * (r + 1)
dist.broadcast(t, root=n - 1)
assert t.tolist() == [i * n for i in range(5)], t.tolist()

# all_reduce: values of every op, float and int
base = np.arange(6, dtype=np.float64).reshape(2, 3)
expect = {
    "sum": sum(base + k for k in range(n)),
    "mean": sum(base + k for k in range(n)) / n,
    "max": base + (n - 1),
    "min": base,
}
for op, want in expect.items():
    x = tl.tensor(base + r, dtype=tl.float64)
    out = dist.all_reduce(x, op=op)
    assert out is x
    np.testing.assert_array_equal(x.numpy(), want, err_msg=op)
xi = tl.tensor([r, 10 * r, 1], dtype=tl.int64)
dist.all_reduce(xi)
assert xi.tolist() == [sum(range(n)), 10 * sum(range(n)), n], xi.tolist()
# float32 and a strided (non-contiguous) view: the result is written back into the view
x32 = tl.tensor(np.full((4, 4), r + 1.0, np.float32))
col = x32[:, 1]  # stride 4: not contiguous
assert not col.is_contiguous()
dist.all_reduce(col, op="sum")
arr = x32.numpy()
assert np.all(arr[:, 1] == sum(k + 1 for k in range(n))) and np.all(arr[:, 0] == r + 1), arr
# a tensor that requires grad (e.g. a parameter): data changes, outside autograd
p = tl.ones(3, requires_grad=True)
dist.all_reduce(p, op="mean")
assert p.requires_grad and p.detach().tolist() == [1.0, 1.0, 1.0]
try:
    dist.all_reduce(tl.tensor([1, 2]), op="mean")
    raise AssertionError("mean of ints should raise")
except TypeError:
    pass

# all_gather: list and stacked
g = dist.all_gather(tl.tensor([[r, r + 0.5]], dtype=tl.float64))
assert len(g) == n and all(gi.shape == (1, 2) for gi in g)
assert [gi.tolist() for gi in g] == [[[k, k + 0.5]] for k in range(n)]
s = dist.all_gather(tl.tensor([r, -r]), stack=True)
assert s.shape == (n, 2) and s.tolist() == [[k, -k] for k in range(n)]
assert dist.all_gather_object({"rank": r}) == [{"rank": k} for k in range(n)]
assert dist.broadcast_object("hello" if r == 0 else None) == "hello"

# broadcast_parameters: different initialisations become rank 0's, parameters and buffers
tl.manual_seed(100 + r)
m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
m[1].running_mean.copy_(tl.full((8,), float(r)))
dist.broadcast_parameters(m)
state = {k: v.to_numpy() for k, v in m.state_dict().items()}
gathered = dist.all_gather_object(state)
for other in gathered[1:]:
    for k in state:
        np.testing.assert_array_equal(other[k], gathered[0][k], err_msg=k)
assert np.all(m[1].running_mean.numpy() == 0.0)
assert dist.parameters_in_sync(m)

dist.barrier()  # every rank got here
if r == 0:
    print(f"ALL OK {n}", flush=True)
