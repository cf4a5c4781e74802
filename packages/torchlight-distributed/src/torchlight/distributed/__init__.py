"""torchlight.distributed: data-parallel training over MPI (mpi4py).

Start N processes with ``mpiexec -n N python train.py`` (or ``python -m torchlight.distributed.run
-n N train.py``); each is a *rank*. In the script::

    import torchlight.distributed as dist

    dist.init()                                    # MPI + abort-on-exception hooks
    model = dist.DistributedDataParallel(model)    # same weights everywhere, averaged gradients
    sampler = dist.DistributedSampler(ds, seed=0)  # this rank's shard
    loader = DataLoader(ds, batch_size=32, sampler=sampler)
    for epoch in range(E):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = loss_fn(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
        dist.save_on_rank0({"model": model.module.state_dict()}, "ckpt.npz")

Modules::

    | module | holds |
    |---|---|
    | ``comm`` | ``init``, ``rank``, ``world_size``, ``barrier``, ``abort``, the fault hooks |
    | ``collectives`` | ``broadcast``, ``all_reduce``, ``all_gather``, ``broadcast_parameters``, ``check_same_module`` |
    | ``deadline`` | the collective timeout: ``set_collective_timeout``, ``CollectiveTimeoutError`` |
    | ``ddp`` | ``DistributedDataParallel`` (bucketed, overlapped ``Iallreduce``), ``parameters_in_sync`` |
    | ``sampler`` | ``DistributedSampler`` |
    | ``checkpoint`` | ``save_on_rank0``, ``load`` |
    | ``run`` | the launcher (``python -m torchlight.distributed.run``) |
    | ``process_group`` | PyTorch's ``init_process_group``, ``get_rank``, ``ReduceOp``, ... |

``import torchlight.distributed`` does not import mpi4py: MPI is loaded by :func:`init` (which
every function calls on first use), so this module imports on machines without MPI.
"""

from .checkpoint import load, save_on_rank0
from .collectives import (
    all_gather,
    all_gather_object,
    all_reduce,
    broadcast,
    broadcast_object,
    broadcast_parameters,
    check_same_module,
)
from .comm import (
    DistributedError,
    abort,
    barrier,
    get_comm,
    init,
    is_available,
    is_initialized,
    is_main_process,
    launched_by_mpiexec,
    local_rank,
    rank,
    world_size,
)
from .ddp import DistributedDataParallel, parameters_in_sync
from .deadline import CollectiveTimeoutError, collective_timeout, set_collective_timeout
from .process_group import (
    ReduceOp,
    Work,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
)
from .sampler import DistributedSampler

DDP = DistributedDataParallel

__all__ = [
    "init",
    "is_initialized",
    "is_available",
    "launched_by_mpiexec",
    "rank",
    "world_size",
    "local_rank",
    "is_main_process",
    "barrier",
    "abort",
    "get_comm",
    "broadcast",
    "all_reduce",
    "all_gather",
    "broadcast_parameters",
    "broadcast_object",
    "all_gather_object",
    "check_same_module",
    "set_collective_timeout",
    "collective_timeout",
    "CollectiveTimeoutError",
    "DistributedDataParallel",
    "DDP",
    "parameters_in_sync",
    "DistributedSampler",
    "save_on_rank0",
    "load",
    "DistributedError",
    # PyTorch's process-group API
    "init_process_group",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "get_backend",
    "ReduceOp",
    "Work",
    "group",
]
