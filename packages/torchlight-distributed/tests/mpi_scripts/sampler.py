"""DistributedSampler on real ranks: shards disjoint and complete, reshuffled per epoch."""

import torchlight as tl
import torchlight.distributed as dist
from torchlight.data import DataLoader, TensorDataset

dist.init()
r, n = dist.rank(), dist.world_size()

for size, drop_last in ((20, False), (21, False), (21, True)):
    ds = TensorDataset(tl.arange(size))
    sampler = dist.DistributedSampler(ds, shuffle=True, seed=3, drop_last=drop_last)
    assert (sampler.num_replicas, sampler.rank) == (n, r)  # defaults from MPI
    loader = DataLoader(ds, batch_size=3, sampler=sampler)
    orders = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        mine = [int(v) for (xb,) in loader for v in xb.tolist()]
        assert len(mine) == len(sampler)
        shards = dist.all_gather_object(mine)
        flat = [i for s in shards for i in s]
        if drop_last:
            assert len(set(flat)) == len(flat) == n * (size // n)  # disjoint, tail dropped
        else:
            assert set(flat) == set(range(size))  # complete
            assert len(flat) == n * -(-size // n)  # padded to equal shards
            assert len(set(flat)) == len(flat) - (len(flat) - size)  # only the padding repeats
        assert all(len(s) == len(shards[0]) for s in shards)  # equal shard sizes: no rank waits
        orders.append(flat)
    assert orders[0] != orders[1] != orders[2], "each epoch must reshuffle"
    sampler.set_epoch(1)  # set_epoch replays an epoch exactly (resuming mid-run)
    again = [int(v) for (xb,) in loader for v in xb.tolist()]
    assert dist.all_gather_object(again) == [
        orders[1][k * len(again) : (k + 1) * len(again)] for k in range(n)
    ]

dist.barrier()
if r == 0:
    print(f"ALL OK {n}", flush=True)
