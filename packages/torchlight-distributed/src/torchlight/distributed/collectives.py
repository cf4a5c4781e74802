"""Collectives on tensors: ``broadcast``, ``all_reduce``, ``all_gather``, ``broadcast_parameters``.

They work on the tensor's numpy storage. A contiguous tensor on a numpy-backed device (``cpu``,
``numba``) is a slice of a flat ``ndarray``; MPI reads and writes that slice directly (``MPI.IN_PLACE``),
with no copy. A strided view is copied into a contiguous buffer and the result written back; a
device whose storage is not a numpy array (``cuda``) is staged through the host.

The operations are not differentiable (as in PyTorch): they change the data in place, outside
autograd, and bump the tensor's version counter. Each one is posted non-blocking and waited on
with the collective timeout (:mod:`~torchlight.distributed.deadline`), so a rank that never
arrives is named in a :class:`~torchlight.distributed.deadline.CollectiveTimeoutError` instead
of hanging the job.
"""

from __future__ import annotations

import hashlib

import numpy as np

import torchlight as tl
from torchlight import Tensor
from torchlight.tensor.extension import host_memory

from .comm import DistributedError, _import_mpi, get_comm
from .deadline import arrive, wait
from .process_group import ReduceOp, check_group, maybe_work

__all__ = [
    "broadcast",
    "all_reduce",
    "all_gather",
    "broadcast_parameters",
    "check_same_module",
    "broadcast_object",
    "all_gather_object",
    "flat_view",
]

_OPS = ("sum", "mean", "max", "min", "prod")


def flat_view(t: Tensor) -> np.ndarray | None:
    """The 1-D ndarray slice of the storage that holds ``t`` (shares memory), or ``None`` when
    ``t`` is not contiguous or its backend keeps its storage in device memory."""
    td = t._td
    st = td.storage
    if not host_memory(t.backend) or not td.is_contiguous():
        return None
    return st[td.offset : td.offset + td.size]


def _mpi_op(op: str):
    MPI = _import_mpi()
    if op not in _OPS:
        raise ValueError(f"all_reduce: op must be one of {_OPS}, got {op!r}")
    return {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}[op]


def _write_back(t: Tensor, values: np.ndarray) -> None:
    """Store ``values`` (contiguous, ``t``'s shape) into ``t`` whatever its layout or device."""
    view = t.numpy_view()
    if host_memory(t.backend):
        view[...] = values.reshape(t.shape)
    else:  # device storage: copy through the backend
        with tl.no_grad():
            src = tl.from_numpy(np.ascontiguousarray(values.reshape(t.shape))).to(t.device)
            t.detach().copy_(src)


def _bump(t: Tensor) -> None:
    t._version[0] += 1


def _check(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} expects a torchlight Tensor, got {type(t).__name__}")


def broadcast(
    tensor: Tensor, src: int = 0, group=None, async_op: bool = False, *, root: int | None = None
):
    """Overwrite ``tensor`` on every rank with its value on rank ``src`` (in place; returns it).

    ``root=`` is the same as ``src``. With ``async_op=True`` a completed ``Work`` handle is
    returned instead (PyTorch's signature).
    """
    _check(tensor, "broadcast")
    check_group(group, "broadcast")
    root = src if root is None else root
    comm = get_comm()
    buf = flat_view(tensor)
    if buf is not None:
        wait([comm.Ibcast(buf, root=root)], "broadcast", comm)
    else:
        tmp = np.ascontiguousarray(tensor.numpy_view()).reshape(-1)
        wait([comm.Ibcast(tmp, root=root)], "broadcast", comm)
        _write_back(tensor, tmp)
    _bump(tensor)
    return maybe_work(async_op, tensor)


def all_reduce(tensor: Tensor, op: str = "sum", group=None, async_op: bool = False):
    """Reduce ``tensor`` over all ranks and leave the result on every rank, in place.

    ``op``: ``"sum"``, ``"mean"`` (floating point only: the sum divided by the world size),
    ``"max"``, ``"min"``, ``"prod"``, or the matching ``ReduceOp`` member (``ReduceOp.SUM``,
    ``ReduceOp.AVG``, ...). Returns ``tensor`` (a completed ``Work`` with ``async_op=True``).
    """
    _check(tensor, "all_reduce")
    check_group(group, "all_reduce")
    op = op.value if isinstance(op, ReduceOp) else op
    mpi_op = _mpi_op(op)
    if op == "mean" and not tensor.dtype.is_floating_point:
        raise TypeError(f"all_reduce(op='mean') needs a floating point tensor, got {tensor.dtype}")
    comm = get_comm()
    MPI = _import_mpi()
    buf = flat_view(tensor)
    if buf is None:
        buf = np.ascontiguousarray(tensor.numpy_view()).reshape(-1).copy()
    wait([comm.Iallreduce(MPI.IN_PLACE, buf, op=mpi_op)], f"all_reduce({op!r})", comm)
    if op == "mean":
        np.divide(buf, comm.Get_size(), out=buf)
    if flat_view(tensor) is None:
        _write_back(tensor, buf)
    _bump(tensor)
    return maybe_work(async_op, tensor)


def all_gather(tensor, stack=False, group=None, async_op: bool = False):
    """Every rank's ``tensor``, in rank order, on every rank.

    Returns a list of ``world_size()`` new tensors, or with ``stack=True`` one tensor of shape
    ``(world_size(), *tensor.shape)``. All ranks must pass tensors of the same shape and dtype.
    PyTorch's form ``all_gather(tensor_list, tensor)`` works too: it copies the results into the
    ``world_size()`` tensors of ``tensor_list`` and returns None (a ``Work`` with ``async_op``).
    """
    check_group(group, "all_gather")
    if isinstance(tensor, (list, tuple)):
        out_list, tensor = tensor, stack
        _check(tensor, "all_gather")
        parts = all_gather(tensor)
        if len(out_list) != len(parts):
            raise DistributedError(
                f"all_gather: tensor_list has {len(out_list)} tensors, the world has {len(parts)} ranks"
            )
        with tl.no_grad():
            for dst, part in zip(out_list, parts):
                dst.copy_(part.to(dst.device))
        return maybe_work(async_op, None)
    _check(tensor, "all_gather")
    comm = get_comm()
    size = comm.Get_size()
    send = flat_view(tensor)
    if send is None:
        send = np.ascontiguousarray(tensor.numpy_view()).reshape(-1)
    arrive(comm, "all_gather")
    shapes = comm.allgather((tuple(tensor.shape), str(send.dtype)))
    if any(s != shapes[0] for s in shapes):
        raise DistributedError(f"all_gather: ranks passed different shapes/dtypes: {shapes}")
    out = np.empty((size, send.size), dtype=send.dtype)
    wait([comm.Iallgather(send, out)], "all_gather", comm)
    out = out.reshape((size, *tensor.shape))
    device = tensor.device
    if stack:
        res = tl.from_numpy(out)
        return res if device == "cpu" else res.to(device)
    parts = [tl.from_numpy(out[i]) for i in range(size)]
    return parts if device == "cpu" else [p.to(device) for p in parts]


def broadcast_parameters(module, root: int = 0) -> None:
    """Make every rank's parameters *and* buffers equal to ``root``'s (in place, by name order).

    Call it once after building the model (``DistributedDataParallel`` does) so that ranks that
    initialised their weights differently start from the same point. The ranks must hold the same
    architecture: names, shapes and dtypes are checked first (:func:`check_same_module`).
    """
    check_same_module(module, "broadcast_parameters")
    for _, t in list(module.named_parameters()) + list(module.named_buffers()):
        broadcast(t, root=root)


def _signature(module) -> list:
    tensors = list(module.named_parameters()) + list(module.named_buffers())
    return [
        (n, tuple(int(d) for d in t.shape), getattr(t.dtype, "name", str(t.dtype)))
        for n, t in tensors
    ]


def _describe(entry) -> str:
    return "absent" if entry is None else f"{entry[0]} {entry[1]}"


def check_same_module(module, what: str = "check_same_module", comm=None) -> None:
    """Raise :class:`DistributedError` on **every** rank unless all ranks' ``module`` has the same
    parameter and buffer names, shapes and dtypes. Call it on every rank.

    Costs one all-gather of a 16-byte digest (the full signatures travel only when they differ),
    so ``DistributedDataParallel`` runs it whether or not it broadcasts the weights.
    """
    comm = comm if comm is not None else get_comm()
    if comm.Get_size() == 1:
        return
    sig = _signature(module)
    digest = hashlib.blake2b(repr(sig).encode(), digest_size=16).hexdigest()
    arrive(comm, what)
    digests = comm.allgather(digest)
    if all(d == digests[0] for d in digests):
        return
    sigs = comm.allgather(sig)
    lines = []
    ref = dict((s[0], s[1:]) for s in sigs[0])
    for r in range(1, len(sigs)):
        mine = dict((s[0], s[1:]) for s in sigs[r])
        if mine == ref:
            continue
        diff = [
            f"{n}: rank 0 {_describe(ref.get(n))}, rank {r} {_describe(mine.get(n))}"
            for n in sorted(set(ref) | set(mine))
            if ref.get(n) != mine.get(n)
        ]
        lines.append(
            f"rank {r} differs from rank 0 in {len(diff)} tensor(s): "
            + "; ".join(diff[:5])
            + ("; ..." if len(diff) > 5 else "")
        )
    raise DistributedError(
        f"{what}: the ranks hold different models (shape and dtype by name):\n\t"
        + "\n\t".join(lines)
        + "\nEvery rank must build the same architecture before wrapping or broadcasting it."
    )


def broadcast_object(obj=None, root: int = 0):
    """``root``'s picklable ``obj`` on every rank (small things: configs, a path, a step count)."""
    comm = get_comm()
    arrive(comm, "broadcast_object")
    return comm.bcast(obj, root=root)


def all_gather_object(obj) -> list:
    """Every rank's picklable ``obj``, in rank order."""
    comm = get_comm()
    arrive(comm, "all_gather_object")
    return comm.allgather(obj)
