"""``DistributedDataParallel``: one model replica per rank, gradients averaged in buckets.

How one training step goes::

    out = ddp(x_local)           # forward: the wrapped module on this rank's shard of the batch
    loss.backward()              # gradients; each bucket is all-reduced (MPI Iallreduce) as soon
                                 # as all of its gradients exist, while backward goes on
    opt.step()                   # every rank applies the same averaged gradient

Buckets. The parameters are split, in reverse registration order (roughly the order backward
produces their gradients; re-ordered after the first step to the order actually observed), into
buckets of at most ``bucket_mb`` MiB of one dtype. Each bucket owns one flat numpy buffer and each
parameter's ``.grad`` becomes a view of its slice of that buffer ("gradient as bucket view"):
when the optimizer zeroes gradients in place (``zero_grad(set_to_none=False)``) backward accumulates
straight into the buffer and the all-reduce needs no copy at all; with ``set_to_none=True`` (the
default) each gradient is copied into its slice once.

Overlap. Each parameter gets a post-accumulate-grad hook. When a bucket's last gradient arrives its
``Iallreduce`` starts (buckets always start in index order, so every rank issues the same
sequence of collectives); every later hook calls ``Testall`` to let MPI progress the transfers
in flight. When the last parameter's gradient arrives, the hook waits for all of them and divides
by the world size, so by the time ``loss.backward()`` returns ``.grad`` holds the average: no extra
call is needed before ``optimizer.step()``. How much communication hides behind backward depends
on *when* the engine accumulates leaf gradients: torchlight-autograd 0.1.0 walks a topological
order in which most parameters come last, so today the buckets mostly start near the end of
backward (``stats["wait_s"]`` measures what is not hidden); an order that visits each weight right
after its consumer (the engine's DFS exploring an op's first input first) gives real overlap with
no change here.

Parameters that get no gradient. Synchronisation completes when *every* parameter's gradient has
arrived. If some parameters may take no part in a forward (a branch not taken, a frozen layer that
still ``requires_grad``) either pass ``find_unused_parameters=True`` (the forward's graph is walked
to find them; a parameter that no rank used keeps ``grad=None``, as without DDP) or call
:meth:`DistributedDataParallel.finish_gradient_synchronization` before ``optimizer.step()``.
Otherwise the next forward raises, naming the parameters.

Bit-identical replicas. Every rank receives the same all-reduced bytes and applies the same
deterministic optimizer update, so parameters stay bit-identical step after step;
:func:`parameters_in_sync` checks it (with a digest, not by moving the weights).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import weakref

import numpy as np

import torchlight as tl
from torchlight import Tensor, nn
from torchlight.autograd import engine
from torchlight.autograd.grad_mode import GradMode
from torchlight.tensor.extension import TensorData, host_memory, wrap

from .collectives import broadcast, broadcast_parameters, check_same_module
from .comm import DistributedError, _import_mpi, init
from .deadline import arrive, wait
from .process_group import check_group

__all__ = ["DistributedDataParallel", "parameters_in_sync"]

_MiB = 1 << 20


class _Bucket:
    """Parameters whose gradients travel in one ``Iallreduce``."""

    __slots__ = ("index", "members", "offsets", "buffer", "pending", "request")

    def __init__(self, index: int, members: list[int], params: list[Tensor]):
        self.index = index
        self.members = members  # parameter indices
        dtype = params[members[0]].dtype.np
        self.offsets = {}
        n = 0
        for i in members:
            self.offsets[i] = n
            n += params[i].numel()
        self.buffer = np.zeros(n, dtype=dtype)
        self.pending = len(members)
        self.request = None

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes


def _plan_buckets(params: list[Tensor], order: list[int], cap_bytes: int) -> list[list[int]]:
    """Split ``order`` (parameter indices) into buckets of one dtype and at most ``cap_bytes``
    (a parameter larger than the cap gets a bucket of its own)."""
    open_buckets: dict = {}  # dtype -> (members, bytes) of the bucket being filled
    plan = []
    for i in order:
        p = params[i]
        key = p.dtype.np.str
        nbytes = p.numel() * p.dtype.np.itemsize
        members, size = open_buckets.get(key, (None, 0))
        if members is not None and size + nbytes > cap_bytes:
            members = None
        if members is None:
            members, size = [], 0
            plan.append(members)
        members.append(i)
        open_buckets[key] = (members, size + nbytes)
    return plan


class DistributedDataParallel(nn.Module):
    """Data-parallel wrapper of ``module`` (PyTorch's ``torch.nn.parallel.DistributedDataParallel``).

    * ``bucket_mb`` — largest bucket of gradients sent in one all-reduce (MiB). Smaller buckets
      start communicating earlier in backward; larger ones have less per-message overhead.
    * ``broadcast_buffers`` — copy rank 0's buffers (e.g. BatchNorm running statistics) to every
      rank at each training-mode forward.
    * ``find_unused_parameters`` — see the module docstring.
    * ``init_sync`` — broadcast rank 0's parameters and buffers to all ranks at construction.
      Whatever it says, the ranks' parameter and buffer names, shapes and dtypes are compared
      first (one all-gather of a digest) and a mismatch raises on every rank.

    ``ddp(x)`` calls ``module(x)``; ``ddp.module`` is the wrapped model (save
    ``ddp.module.state_dict()`` to get keys without the ``module.`` prefix).

    PyTorch's keywords are accepted too: ``bucket_cap_mb`` (= ``bucket_mb``), ``device_ids`` (also
    as the second positional argument, as in PyTorch) and ``output_device`` (the module stays on
    the device it is on: one rank drives one device), ``process_group`` (``None`` or
    ``dist.group.WORLD``), and ``dim``, ``check_reduction``, ``gradient_as_bucket_view`` (always
    the case here) and ``static_graph``, which change nothing.
    """

    def __init__(
        self,
        module: nn.Module,
        bucket_mb: float = 25.0,
        output_device=None,
        dim: int = 0,
        *,
        broadcast_buffers: bool = True,
        find_unused_parameters: bool = False,
        init_sync: bool = True,
        comm=None,
        device_ids=None,
        process_group=None,
        bucket_cap_mb=None,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
    ):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(
                f"DistributedDataParallel wraps an nn.Module, got {type(module).__name__}"
            )
        if bucket_mb is None or isinstance(
            bucket_mb, (list, tuple)
        ):  # PyTorch: DDP(model, [local_rank])
            device_ids, bucket_mb = bucket_mb, 25.0
        if bucket_cap_mb is not None:
            bucket_mb = bucket_cap_mb
        check_group(process_group, "DistributedDataParallel")
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        if bucket_mb <= 0:
            raise ValueError(f"bucket_mb must be positive, got {bucket_mb}")
        self.module = module
        self._comm = comm if comm is not None else init()
        self._MPI = _import_mpi()
        self.world_size = self._comm.Get_size()
        self.rank = self._comm.Get_rank()
        self.bucket_mb = float(bucket_mb)
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.require_backward_grad_sync = True
        # counters for benchmarks: synchronised rounds, bytes all-reduced, seconds blocked in the
        # final wait (communication *not* hidden behind backward)
        self.stats = {"rounds": 0, "bytes": 0, "wait_s": 0.0}

        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        if self.world_size > 1:
            check_same_module(module, "DistributedDataParallel", comm=self._comm)
        if init_sync and self.world_size > 1:
            broadcast_parameters(module)
        self._observed_order: list[int] = []
        self._rebuilt = False
        self._build_buckets(list(reversed(range(len(self._params)))))
        self._reset_round()
        self._round_active = False
        if self.world_size > 1:
            ref = weakref.ref(self)
            for i, p in enumerate(self._params):
                hooks = getattr(p, "_hooks", None)
                if hooks:  # forget the hooks of wrappers that no longer exist
                    hooks[:] = [h for h in hooks if getattr(h, "ddp_ref", ref)() is not None]
                p.register_post_accumulate_grad_hook(_make_hook(ref, i))

    # --- buckets -----------------------------------------------------------------------------
    def _build_buckets(self, order: list[int]) -> None:
        plan = _plan_buckets(self._params, order, int(self.bucket_mb * _MiB))
        self._buckets = [_Bucket(k, members, self._params) for k, members in enumerate(plan)]
        self._bucket_of = {}
        for b in self._buckets:
            for i in b.members:
                self._bucket_of[i] = b

    @property
    def bucket_sizes(self) -> list[int]:
        """Bytes of each bucket, in launch order."""
        return [b.nbytes for b in self._buckets]

    def _reset_round(self) -> None:
        self._ready = [False] * len(self._params)
        self._had_grad = np.zeros(len(self._params), dtype=np.uint8)
        self._n_ready = 0
        self._next_launch = 0
        self._inflight: list = []  # MPI requests of the buckets launched this round
        for b in self._buckets:
            b.pending = len(b.members)
            b.request = None

    # --- forward ------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        if self.world_size > 1 and GradMode.enabled and self.require_backward_grad_sync:
            if self._round_active:
                missing = [self._names[i] for i, r in enumerate(self._ready) if not r]
                raise DistributedError(
                    "DistributedDataParallel: the previous backward produced no gradient for "
                    f"{len(missing)} parameter(s) ({', '.join(missing[:8])}"
                    f"{', ...' if len(missing) > 8 else ''}), so their gradients were never averaged "
                    "and the ranks may have diverged. Pass find_unused_parameters=True, or call "
                    "ddp.finish_gradient_synchronization() before optimizer.step()."
                )
        if self.world_size > 1 and self.broadcast_buffers and self.module.training:
            for buf in self.module.buffers():
                broadcast(buf, root=0)
        out = self.module(*args, **kwargs)
        if (
            self.world_size > 1
            and self.find_unused_parameters
            and GradMode.enabled
            and self.require_backward_grad_sync
        ):
            self._mark_unused(out)
        return out

    def _mark_unused(self, out) -> None:
        """Mark ready, now, the parameters the forward's graph does not reach."""
        reached: set[int] = set()  # ids of the tensors the graph reaches
        for t in _tensors_in(out):
            if t.requires_grad:
                reached.update(id(v) for v in engine.topological_order(t) if v._history is None)
        unused = [i for i, p in enumerate(self._params) if id(p) not in reached]
        for i in unused:
            self._grad_ready(i)

    # --- backward side --------------------------------------------------------------------------
    def _grad_ready(self, i: int) -> None:
        """Parameter ``i``'s gradient is final for this backward: put it in its bucket's slice."""
        if not self.require_backward_grad_sync:
            return
        if not self._round_active:
            self._reset_round()
            self._round_active = True
        if self._ready[i]:
            raise DistributedError(
                f"DistributedDataParallel: parameter {self._names[i]!r} received a gradient twice "
                "in one synchronisation round (is it used by two backward passes without a "
                "forward in between? wrap the extra ones in ddp.no_sync())"
            )
        self._ready[i] = True
        self._n_ready += 1
        if not self._rebuilt:
            self._observed_order.append(i)
        p = self._params[i]
        b = self._bucket_of[i]
        off = b.offsets[i]
        n = p.numel()
        g = p.grad
        if g is None:
            b.buffer[off : off + n] = 0
        else:
            self._had_grad[i] = 1
            td = g._td
            if not (td.storage is b.buffer and td.offset == off and td.is_contiguous()):
                np.copyto(
                    b.buffer[off : off + n].reshape(p.shape), g.numpy_view(), casting="unsafe"
                )
                if host_memory(p.backend):
                    p.grad = wrap(TensorData(b.buffer, p.shape, None, off), p.backend, p.dtype, p)
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready()
        elif self._inflight:
            self._MPI.Request.Testall(self._inflight)  # let MPI progress what is in flight
        if self._n_ready == len(self._params):
            self._finish_round()

    def _launch_ready(self) -> None:
        MPI = self._MPI
        buckets = self._buckets
        while self._next_launch < len(buckets) and buckets[self._next_launch].pending == 0:
            b = buckets[self._next_launch]
            b.request = self._comm.Iallreduce(MPI.IN_PLACE, b.buffer, op=MPI.SUM)
            self._inflight.append(b.request)
            self._next_launch += 1

    def _finish_round(self) -> None:
        MPI = self._MPI
        had = self._had_grad  # which parameters had a gradient on at least one rank
        self._inflight.append(self._comm.Iallreduce(MPI.IN_PLACE, had, op=MPI.MAX))
        t0 = time.perf_counter()
        wait(self._inflight, "DistributedDataParallel gradient all-reduce", self._comm)
        stats = self.stats
        stats["wait_s"] += time.perf_counter() - t0
        stats["rounds"] += 1
        stats["bytes"] += sum(b.nbytes for b in self._buckets)
        scale = self.world_size
        for b in self._buckets:
            np.divide(b.buffer, scale, out=b.buffer)
        for i, p in enumerate(self._params):
            b = self._bucket_of[i]
            off = b.offsets[i]
            if not had[i]:
                p.grad = None  # no rank produced a gradient: as in single-process training
                continue
            if host_memory(p.backend):
                td = p.grad._td if p.grad is not None else None
                if td is None or td.storage is not b.buffer or td.offset != off:
                    p.grad = wrap(TensorData(b.buffer, p.shape, None, off), p.backend, p.dtype, p)
            else:  # device storage: bring the average back to the device
                host = b.buffer[off : off + p.numel()].reshape(p.shape).copy()
                p.grad = tl.from_numpy(host).to(p.device)
        self._round_active = False
        self._inflight = []
        if not self._rebuilt:
            self._rebuild_from_observed_order()

    def _rebuild_from_observed_order(self) -> None:
        """Once, after the first synchronised backward: re-bucket in the order gradients arrived
        (rank 0's observation, so every rank builds the same buckets)."""
        self._rebuilt = True
        arrive(self._comm, "DistributedDataParallel bucket rebuild")
        order = self._comm.bcast(self._observed_order if self.rank == 0 else None, root=0)
        self._observed_order = []
        if sorted(order) != list(range(len(self._params))):
            return
        old = [b.members for b in self._buckets]
        new = _plan_buckets(self._params, order, int(self.bucket_mb * _MiB))
        if new != old:
            self._build_buckets(order)
            for i, p in enumerate(self._params):  # move the averaged gradients into the new buffers
                if p.grad is not None and host_memory(p.backend):
                    b = self._bucket_of[i]
                    off = b.offsets[i]
                    np.copyto(b.buffer[off : off + p.numel()].reshape(p.shape), p.grad.numpy_view())
                    p.grad = wrap(TensorData(b.buffer, p.shape, None, off), p.backend, p.dtype, p)
        self._reset_round()

    def finish_gradient_synchronization(self) -> None:
        """Complete this round now: parameters whose gradient has not arrived contribute zeros
        (their ``.grad`` stays ``None`` if no rank had one). A no-op when nothing is pending.

        Needed before ``optimizer.step()`` only when backward may not reach every parameter and
        ``find_unused_parameters`` is off. Call it on every rank, right after ``backward()`` (before
        any other collective); doing so after every backward is always safe.
        """
        if self.world_size == 1 or not self._round_active:
            return
        for i in range(len(self._params)):
            if not self._ready[i] and self._round_active:
                self._grad_ready(i)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate local gradients without communicating; the first
        backward after the block averages everything accumulated (gradient accumulation)."""
        prev = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev

    def extra_repr(self) -> str:
        return (
            f"world_size={self.world_size}, buckets={len(self._buckets)}, "
            f"bucket_mb={self.bucket_mb:g}"
        )


def _make_hook(ref, i):
    def hook(_tensor):
        ddp = ref()
        if ddp is not None:
            ddp._grad_ready(i)

    hook.ddp_ref = ref
    return hook


def _tensors_in(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


def parameters_in_sync(module, comm=None) -> bool:
    """True when every rank's parameters and buffers are bit-identical (compares digests)."""
    comm = comm if comm is not None else init()
    h = hashlib.blake2b(digest_size=16)
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        h.update(name.encode())
        h.update(np.ascontiguousarray(t.detach().numpy_view()).tobytes())
    arrive(comm, "parameters_in_sync")
    digests = comm.allgather(h.hexdigest())
    return all(d == digests[0] for d in digests)
