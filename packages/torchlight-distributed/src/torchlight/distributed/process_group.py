"""PyTorch's process-group API (``torch.distributed``) on torchlight's MPI communicator.

Programs written for PyTorch start with::

    dist.init_process_group(backend="nccl")      # or "gloo", "mpi"
    rank, world = dist.get_rank(), dist.get_world_size()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    dist.barrier()
    dist.destroy_process_group()

Here there is one process group, the MPI job started by ``mpiexec`` (or ``python -m
torchlight.distributed.run``): every backend name maps onto it, and ``rank``/``world_size``, when
given, must agree with MPI's. ``group=`` accepts ``None`` or ``dist.group.WORLD`` only.
Collectives are blocking; with ``async_op=True`` they return an already-completed :class:`Work`
whose ``wait()`` returns at once, so PyTorch code that waits on handles runs unchanged.
"""

from __future__ import annotations

from enum import Enum
from types import SimpleNamespace

from . import comm
from .comm import DistributedError

__all__ = [
    "ReduceOp",
    "Work",
    "group",
    "init_process_group",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "get_backend",
    "check_group",
    "maybe_work",
]

_BACKENDS = ("mpi", "gloo", "nccl", "cpu:gloo,cuda:nccl", None)
_WORLD = object()

group = SimpleNamespace(WORLD=_WORLD)
"""``dist.group.WORLD``: the group of all ranks (the only group torchlight has)."""


class ReduceOp(str, Enum):
    """How ``all_reduce`` combines the ranks' tensors: ``SUM``, ``PRODUCT``, ``MIN``, ``MAX`` or
    ``AVG`` (the sum divided by the world size; floating point only). Each member equals the
    string torchlight's own ``all_reduce(op=...)`` takes.

    >>> from torchlight.distributed import ReduceOp
    >>> ReduceOp.SUM == "sum", ReduceOp.AVG.value
    (True, 'mean')
    """

    SUM = "sum"
    PRODUCT = "prod"
    MIN = "min"
    MAX = "max"
    AVG = "mean"


class Work:
    """The handle ``async_op=True`` returns: the collective has already completed, so ``wait()``
    returns True at once and ``is_completed()`` is True.

    >>> from torchlight.distributed import Work
    >>> Work().wait()
    True
    """

    def wait(self, timeout=None) -> bool:
        """Return ``True`` at once: the collective completed before the handle was returned."""
        return True

    def is_completed(self) -> bool:
        """Always ``True`` (see the class docstring)."""
        return True

    def is_success(self) -> bool:
        """Always ``True``: a failed collective raises instead of returning a handle."""
        return True


def check_group(group, what: str) -> None:
    """Refuse sub-groups: torchlight has the world group only."""
    if group is not None and group is not _WORLD:
        raise DistributedError(
            f"{what}: only the default group (group=None or dist.group.WORLD) is supported"
        )


def maybe_work(async_op: bool, result):
    """What a collective returns: a completed :class:`Work` with ``async_op``, else ``result``."""
    return Work() if async_op else result


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """Join the job's process group: starts MPI (:func:`torchlight.distributed.init`).

    ``backend`` may be ``"mpi"``, ``"gloo"``, ``"nccl"`` or ``None``; all use MPI. ``init_method``,
    ``store``, ``timeout`` and ``pg_options`` are accepted and unused: ``mpiexec`` already did the
    rendezvous. ``world_size`` and ``rank`` (when not ``-1``) are checked against MPI's and a
    mismatch raises :class:`DistributedError`.

    >>> import torchlight.distributed as dist
    >>> dist.init_process_group("gloo")          # doctest: +SKIP
    >>> dist.get_rank(), dist.get_world_size()   # doctest: +SKIP
    (0, 1)
    """
    if backend is not None and str(backend).lower() not in _BACKENDS:
        raise ValueError(
            f"init_process_group: unknown backend {backend!r} (use 'mpi', 'gloo' or 'nccl'; all map to MPI)"
        )
    c = comm.init()
    size, me = c.Get_size(), c.Get_rank()
    if world_size not in (-1, None) and int(world_size) != size:
        raise DistributedError(
            f"init_process_group: world_size={world_size}, but the MPI job has {size} ranks "
            f"(start it with mpiexec -n {world_size})"
        )
    if rank not in (-1, None) and int(rank) != me:
        raise DistributedError(
            f"init_process_group: rank={rank}, but MPI numbered this process {me}"
        )


def destroy_process_group(group=None) -> None:
    """Leave the process group: frees torchlight's communicator, after which ``is_initialized()``
    is False (MPI itself is finalised when the process exits)."""
    check_group(group, "destroy_process_group")
    comm.shutdown()


def get_rank(group=None) -> int:
    """This process's rank (starts MPI if needed)."""
    check_group(group, "get_rank")
    return comm.rank()


def get_world_size(group=None) -> int:
    """The number of ranks (starts MPI if needed)."""
    check_group(group, "get_world_size")
    return comm.world_size()


def get_backend(group=None) -> str:
    """Always ``"mpi"``: every backend name maps onto the MPI communicator."""
    check_group(group, "get_backend")
    return "mpi"
