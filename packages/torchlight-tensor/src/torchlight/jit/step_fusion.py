"""Fusing a captured step's consecutive elementwise calls into compiled kernels.

A captured step (:mod:`torchlight.jit.step`) is a flat list of backend calls. Runs of
*consecutive* ``map``/``zip`` calls with fusable ops (``FUSABLE_MAP``/``FUSABLE_ZIP`` of
:mod:`torchlight.jit.fusion`) on one backend, one output shape and one floating dtype become one
:class:`~torchlight.jit.fusion.ElementwiseChain`, compiled by the backend's ``"compile"``
capability and issued as a single call. A call joins the run when:

* its output is contiguous, of the run's shape and dtype;
* each input is contiguous of that shape, or a single element broadcast (stride 0);
* every full-shape view of a storage the run touches is the *same* view (same offset and
  strides) — the generated loop handles element ``i`` of every operand together, which is only
  what the op-by-op calls did when they agree on what element ``i`` is;
* it reads no single element from a storage the run writes (a broadcast scalar is read once,
  before the loop).

Inside the kernel a value written by an earlier call of the run is taken from that call's result;
every storage the run writes is still written (its last value), so the buffers hold exactly what
the op-by-op calls left there — replays agree with eager execution up to the compiled kernels'
rounding. A ``fill`` of a storage the run has not touched (a constant built between two of its
ops) is issued before the run instead of ending it. Calls that do not qualify run as recorded.
"""

from __future__ import annotations

from typing import Any

from torchlight.tensor.storage import TensorData

from .fusion import FUSABLE_MAP, FUSABLE_ZIP, ElementwiseChain
from .recording import Call

__all__ = ["fuse_calls", "FusedCall"]


class FusedCall:
    """Several recorded elementwise calls issued as one compiled kernel
    ``kernel(input_views, output_views)``; ``calls`` are the originals and ``chain`` the
    :class:`~torchlight.jit.fusion.ElementwiseChain` the backend compiled (for inspection).
    A captured step with ``fuse=True`` lists them among its ``calls``:
    ``[c for c in step.calls if isinstance(c, FusedCall)]``."""

    __slots__ = ("kernel", "ins", "outs", "calls", "chain", "name")

    def __init__(self, kernel: Any, ins: list, outs: list, calls: list, chain: ElementwiseChain):
        self.kernel = kernel
        self.ins = ins
        self.outs = outs
        self.calls = calls
        self.chain = chain
        self.name = "fused"

    def run(self) -> None:
        """Issue the compiled kernel."""
        self.kernel(self.ins, self.outs)

    def __repr__(self) -> str:
        return f"FusedCall({' -> '.join(op for op, _ in self.chain.ops)})"


def _dtype_of(storage: Any) -> Any:
    from torchlight.tensor.dtypes import _BY_NP

    npd = getattr(storage, "dtype", None)
    return None if npd is None else _BY_NP.get(npd)


class _Run:
    """The run being grown: its calls, the chain's program, inputs and outputs."""

    def __init__(self, call: Call, shape: tuple, dtype: Any) -> None:
        self.backend = call.backend
        self.shape = shape
        self.dtype = dtype
        self.calls: list[Call] = []
        self.prog: list = []
        self.ins: list[TensorData] = []
        self.scalar: list[bool] = []  # input k is one element, broadcast
        self.in_key: dict = {}  # (id(storage), offset, scalar) -> input number
        self.views: dict = {}  # id(storage) -> the full-shape view (offset, strides) used
        self.written: dict = {}  # id(storage) -> the op number whose result it holds
        self.out_view: dict = {}  # id(storage) -> output view

    def _operand(self, v: TensorData) -> tuple | None:
        """The chain operand reading view ``v``, or None when ``v`` cannot join the run."""
        sid = id(v.storage)
        if _dtype_of(v.storage) is not self.dtype:
            return None
        # a broadcast scalar: expanded by the core (strides all 0) or, on a backend with the
        # "broadcast" capability, as it is (one element of a smaller shape)
        if (v.shape == self.shape and v.size > 1 and not any(v.strides)) or (
            v.size == 1 and v.shape != self.shape
        ):
            if sid in self.written:  # read once before the loop: it must not change in the run
                return None
            key = (sid, v.offset, True)
            if key not in self.in_key:
                self.in_key[key] = len(self.ins)
                self.ins.append(TensorData(v.storage, (1,), (1,), v.offset))
                self.scalar.append(True)
            return ("in", self.in_key[key])
        if v.shape != self.shape or not v.is_contiguous():
            return None
        seen = self.views.get(sid)
        if seen is not None and seen != (v.offset, v.strides):
            return None
        self.views[sid] = (v.offset, v.strides)
        if sid in self.written:
            return ("tmp", self.written[sid])
        key = (sid, v.offset, False)
        if key not in self.in_key:
            self.in_key[key] = len(self.ins)
            self.ins.append(v)
            self.scalar.append(False)
        return ("in", self.in_key[key])

    def add(self, call: Call) -> bool:
        """Append ``call`` when it keeps the run fusable (False, and nothing changed, when not)."""
        op, *inputs, out = call.args
        if call.backend is not self.backend or out.shape != self.shape:
            return False
        if not out.is_contiguous() or _dtype_of(out.storage) is not self.dtype:
            return False
        saved = (len(self.ins), dict(self.in_key), dict(self.views))
        operands = [self._operand(v) for v in inputs]
        seen = self.views.get(id(out.storage))
        if None in operands or (seen is not None and seen != (out.offset, out.strides)):
            n, self.in_key, self.views = saved
            del self.ins[n:], self.scalar[n:]
            return False
        self.views[id(out.storage)] = (out.offset, out.strides)
        self.written[id(out.storage)] = len(self.prog)
        self.out_view[id(out.storage)] = out
        self.prog.append((op, tuple(operands)))
        self.calls.append(call)
        return True

    def finish(self, cache: dict) -> list:
        """The run as one :class:`FusedCall`, or its calls unchanged when it is too short or the
        backend declines the chain."""
        if len(self.calls) < 2:
            return list(self.calls)
        outputs = sorted(self.written.values())
        by_op = {j: sid for sid, j in self.written.items()}
        chain = ElementwiseChain(
            self.prog,
            len(self.ins),
            self.scalar,
            outputs,
            self.dtype,
        )
        key = (id(self.backend), chain.key)
        if key not in cache:
            cache[key] = self.backend.compile_elementwise(chain)
        kernel = cache[key]
        if kernel is None:
            return list(self.calls)
        outs = [self.out_view[by_op[j]] for j in outputs]
        return [FusedCall(kernel, self.ins, outs, self.calls, chain)]


def _fusable(call: Any) -> tuple | None:
    """(shape, dtype) of a call that may start or join a run, else None."""
    if not isinstance(call, Call) or call.live or call.name not in ("map", "zip"):
        return None
    caps = getattr(call.backend, "capabilities", ())
    if "compile" not in caps or not hasattr(call.backend, "compile_elementwise"):
        return None
    op = call.args[0]
    if op not in (FUSABLE_MAP if call.name == "map" else FUSABLE_ZIP):
        return None
    out = call.args[-1]
    dtype = _dtype_of(out.storage)
    if dtype is None or not dtype.is_floating_point or out.size == 0:
        return None
    return out.shape, dtype


def fuse_calls(calls: list, cache: dict | None = None) -> list:
    """``calls`` with each fusable run of consecutive elementwise calls replaced by one
    :class:`FusedCall` (``cache`` maps ``(id(backend), chain.key)`` to compiled kernels). Calls
    on a backend without the ``"compile"`` capability are returned as they are.

    >>> import torchlight as tl
    >>> from torchlight.jit.recording import Recording
    >>> from torchlight.jit.step_fusion import fuse_calls
    >>> x = tl.ones(4)
    >>> with Recording() as rec:
    ...     y = (x * 2.0 + 1.0).tanh()
    >>> fuse_calls(rec.calls) == rec.calls  # numpy ("cpu") does not compile: unchanged
    True
    """
    cache = {} if cache is None else cache
    out: list = []
    run: _Run | None = None
    ahead: list = []  # fills moved ahead of the run (see _fills_ahead)
    for call in calls:
        if run is not None and _fills_ahead(call, run):
            ahead.append(call)
            continue
        sig = _fusable(call)
        if run is not None and sig is not None and sig == (run.shape, run.dtype) and run.add(call):
            continue
        if run is not None:
            out.extend(ahead)
            out.extend(run.finish(cache))
            run, ahead = None, []
        if sig is not None:
            run = _Run(call, *sig)
            if run.add(call):
                continue
            run = None
        out.append(call)
    if run is not None:
        out.extend(ahead)
        out.extend(run.finish(cache))
    return out


def _fills_ahead(call: Any, run: _Run) -> bool:
    """Whether ``call`` is a ``fill`` (a constant such as ``x * 2.0``'s 2.0, written where the data
    lives) of a storage that no call of ``run`` has read or written yet: issued before the whole
    run it changes nothing the run's earlier calls see, and the run goes on past it."""
    if not isinstance(call, Call) or call.name != "fill" or call.live:
        return False
    sid = id(call.args[0].storage)
    return sid not in run.views and all(key[0] != sid for key in run.in_key)
