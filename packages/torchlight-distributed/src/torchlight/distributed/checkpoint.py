"""Checkpoints in a data-parallel job: rank 0 writes, every rank can read.

All ranks hold bit-identical parameters and optimizer state (``DistributedDataParallel`` keeps
them so), so one copy is enough: :func:`save_on_rank0` writes it from rank 0 with torchlight's
atomic ``.npz`` format (``tl.save``: temporary file, fsync, rename) and then waits at a barrier, so
that no rank goes on — and possibly reads the file — before it is complete. Every rank resumes
with :func:`load` (``tl.load``) from a filesystem they share; on machines without a shared
filesystem use ``load(path, from_rank0=True)``: rank 0 reads and broadcasts.

If rank 0 fails while writing, its exception aborts the job (see :mod:`~torchlight.distributed.comm`)
instead of leaving the others blocked at the barrier; the previous checkpoint stays intact.
"""

from __future__ import annotations

import io
import os

import torchlight as tl

from .comm import barrier, get_comm
from .deadline import arrive

__all__ = ["save_on_rank0", "load"]


def save_on_rank0(obj, path: str | os.PathLike) -> None:
    """Rank 0 saves ``obj`` (anything ``tl.save`` takes) to ``path``; every rank then waits until
    the file is complete. Call it on **every** rank (it contains a barrier)."""
    if get_comm().Get_rank() == 0:
        tl.save(obj, path)
    barrier()


def load(path: str | os.PathLike, from_rank0: bool = False):
    """Load a checkpoint on every rank. With ``from_rank0=True`` only rank 0 reads the file and
    broadcasts its content (for ranks that do not share rank 0's filesystem); call it on every rank.
    """
    if not from_rank0:
        return tl.load(path)
    comm = get_comm()
    data = None
    if comm.Get_rank() == 0:
        with open(path, "rb") as f:
            data = f.read()
    arrive(comm, "checkpoint load")
    data = comm.bcast(data, root=0)
    return tl.load(io.BytesIO(data))
