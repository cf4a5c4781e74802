"""``capture_step``: record a whole training step once, replay it as a flat list of kernel calls.

A training step — forward, ``loss.backward()``, ``optimizer.step()`` — is mostly Python overhead
on a small model: autograd builds a graph, modules dispatch, every op allocates. The kernels it
ends up calling are the same every step; only the batch changes. :func:`capture_step` runs the
step eagerly a few times, records every backend call of two consecutive steps
(:mod:`torchlight.jit.recording`), checks that both made the same calls on the same buffers,
and from then on replays the second recording: the new batch is copied into the captured input
buffers and the recorded calls are issued again, in order, on the buffers allocated during
capture. No autograd graph, no module code, no allocation. The same idea as CUDA graphs and
tinygrad's ``TinyJit`` (which also runs the first calls eagerly).

The calls, step by step:

* the first ``warmup`` calls run eagerly (an optimizer creates its state lazily on its first
  step; kernels compile);
* the next two run eagerly while recording; they must agree (same kernels, shapes, buffers and
  constants), else :class:`~torchlight.jit.TraceError` says what changed — Python control flow,
  a host number that changes per step (the call that raises has run the step eagerly, unless
  it stopped at a host read such as ``.item()``);
* every later call is a replay. Its tensor arguments must have the captured shapes, dtypes and
  devices, its other arguments the captured values, and every :func:`~torchlight.jit.guard` its
  captured answer; otherwise it raises :class:`~torchlight.jit.TraceError` before running
  anything (:meth:`CapturedStep.reset` captures afresh).

What a replay does not do: run the step's Python code. Python state the step reads besides
tensors (``model.train()``/``eval()``, flags in a closure) is frozen at capture: ``.reset()``
after changing it. Host state the step changes must be declared
(:func:`~torchlight.jit.count_up` counts steps; torchlight's optimizers use it, so Adam's bias
correction follows the step). Random draws of torchlight's generators (dropout, ``tl.rand``,
``randint``, ``randperm``, ``normal_``, ...) are drawn afresh by every replay, from the same
streams in the same order as an eager step: a replay draws what the eager step would have
drawn (``manual_seed`` between steps included). Reading a value on the host inside the step
(``.item()``) is refused while recording. Tensors the step reads that are not arguments
(parameters, optimizer state) are read by reference, their current values at each replay.
Tensors returned by the step are returned as fresh copies, detached from autograd.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from torchlight.tensor.dispatch import alloc, index_range, same_backend, set_index_range
from torchlight.tensor.storage import TensorData
from torchlight.tensor.tensor import Tensor

from .live import capturing
from .recording import Call, Recording, first_difference
from .step_fusion import fuse_calls
from .tape import TraceError

__all__ = ["capture_step", "CapturedStep"]


class CapturedStep:
    """A training step that is captured once and then replayed (see :func:`capture_step`).

    Call it like the function it wraps. ``state`` is ``"warmup"``, ``"recording"``,
    ``"captured"`` (replays from now on); ``n_calls`` is the number of kernel calls a replay
    issues; ``calls`` lists them (fused runs as ``FusedCall``).

    >>> import torchlight as tl
    >>> w = tl.zeros(3)
    >>> step = tl.jit.CapturedStep(lambda x: w.add_(x))
    >>> for _ in range(5):
    ...     _ = step(tl.ones(3))
    >>> step.state, w.tolist()
    ('captured', [5.0, 5.0, 5.0])
    """

    def __init__(
        self, fn: Callable, warmup: int = 1, fuse: bool = False, on_mismatch: str = "error"
    ) -> None:
        if warmup < 0:
            raise TraceError(f"warmup must be >= 0, got {warmup}")
        if on_mismatch not in ("error", "eager"):
            raise TraceError(f"on_mismatch must be 'error' or 'eager', got {on_mismatch!r}")
        self.on_mismatch = on_mismatch
        self.fn = fn
        self.warmup = warmup
        self.fuse = bool(fuse)
        functools.update_wrapper(self, fn, updated=())
        self.reset()

    def reset(self) -> None:
        """Forget the capture: the next calls run eagerly and record again (after a shape change
        you want, a learning-rate change, a model change)."""
        self._eager_left = self.warmup
        self._first: Recording | None = None
        self._signature: tuple | None = None
        self._buffers: list = []
        self._replay: list[Call] = []
        self._guards: list = []
        self._outputs: Any = None
        self._keep: Recording | None = None

    @property
    def state(self) -> str:
        """``"warmup"``, ``"recording"`` or ``"captured"``."""
        if self._keep is not None:
            return "captured"
        return "warmup" if self._eager_left > 0 else "recording"

    @property
    def calls(self) -> list:
        """The calls one replay issues, in order (a copy of the list)."""
        return list(self._replay)

    @property
    def n_calls(self) -> int:
        """How many kernel calls (and host operations) one replay issues (0 before capture)."""
        return len(self._replay)

    # --- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if capturing():
            # its replays call kernels directly, past the outer recording: they would be lost
            raise TraceError(
                "a captured step was called inside another step that is being captured; "
                "capture only the outer step (call the inner function itself there)"
            )
        if self._keep is not None:
            return self._run_replay(args, kwargs)
        if self._eager_left > 0:
            self._eager_left -= 1
            return self.fn(*args, **kwargs)
        return self._record(args, kwargs)

    def _split(self, args: tuple, kwargs: dict) -> tuple[list, tuple]:
        """The tensor arguments (in order) and the signature the capture is valid for."""
        tensors: list = []
        sig: list[tuple] = []
        for key, a in list(enumerate(args)) + sorted(kwargs.items()):
            if isinstance(a, Tensor):
                if a.requires_grad:
                    raise TraceError(
                        f"argument {key!r} of the captured step requires grad: pass data "
                        "(batches) as arguments; parameters are read from the model itself"
                    )
                tensors.append(a)
                sig.append((key, "tensor", a.shape, a.dtype.name, a.device))
            else:
                sig.append((key, "value", a))
        return tensors, tuple(sig)

    def _record(self, args: tuple, kwargs: dict) -> Any:
        tensors, sig = self._split(args, kwargs)
        if self._signature is None:
            self._signature = sig
            self._buffers = [_buffer_like(t) for t in tensors]
        elif sig != self._signature:
            return self._mismatch(sig, args, kwargs)
        for buf, t in zip(self._buffers, tensors):
            _load(buf, t, index_bounds=True)
        it = iter(self._buffers)
        b_args = tuple(next(it) if isinstance(a, Tensor) else a for a in args)
        b_kwargs = {k: next(it) if isinstance(v, Tensor) else v for k, v in sorted(kwargs.items())}
        with Recording() as rec:
            result = self.fn(*b_args, **b_kwargs)
        outputs = _output_template(result, rec)
        if self._first is None:
            self._first = rec
        else:
            why = first_difference(self._first, rec)
            self._first = None
            if why is not None:
                self._signature = None
                raise TraceError(
                    f"cannot capture this step: two consecutive calls did not run the same "
                    f"kernels — {why}. Call the function eagerly instead, or change it so every "
                    "step runs the same ops"
                )
            self._install(rec, outputs)
        return _materialise(outputs)

    def _install(self, rec: Recording, outputs: Any) -> None:
        self._replay = _restores(rec) + (fuse_calls(rec.calls) if self.fuse else rec.calls)
        last = max((i for i, e in enumerate(rec.host_program) if e[0] == "guard"), default=-1)
        self._guards = rec.host_program[
            : last + 1
        ]  # host operations after the last guard: not needed
        self._outputs = outputs
        self._keep = rec

    def _run_replay(self, args: tuple, kwargs: dict) -> Any:
        tensors, sig = self._split(args, kwargs)
        if sig != self._signature:
            return self._mismatch(sig, args, kwargs)
        self._check_guards()
        for buf, t in zip(self._buffers, tensors):
            _load(buf, t)
        for call in self._replay:
            call.run()
        return _materialise(self._outputs)

    def _mismatch(self, sig: tuple, args: tuple, kwargs: dict) -> Any:
        if self.on_mismatch == "eager":
            return self.fn(*args, **kwargs)
        raise TraceError(
            f"the captured step was called with arguments that differ from the captured ones: "
            f"{_signature_change(self._signature, sig)}. A capture replays fixed shapes and "
            "takes its non-tensor arguments as constants: keep batches the same size (a "
            "DataLoader's drop_last=True), pass numbers that change as tensors, or call .reset() "
            "to capture again"
        )

    def _check_guards(self) -> None:
        """Dry-run the step's host operations, checking each guard where the step met it; the
        host state is left as it was whatever the outcome."""
        undo = []
        try:
            for entry in self._guards:
                if entry[0] == "op":
                    entry[1]()
                    undo.append(entry[2])
                    continue
                _, fn, value, what = entry
                now = fn()
                if now != value:
                    raise TraceError(
                        f"{what} changed since the step was captured (was {_brief(value)}, now "
                        f"{_brief(now)}); the replay would use the old value. Call .reset() on "
                        "the captured step to capture it again with the new value"
                    )
        finally:
            for fn in reversed(undo):
                fn()

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", repr(self.fn))
        return f"CapturedStep({name}, state={self.state!r}, calls={self.n_calls})"


def capture_step(
    fn: Callable | None = None, *, warmup: int = 1, fuse: bool = False, on_mismatch: str = "error"
) -> Any:
    """Capture a whole training step (forward, backward, optimizer update) and replay it.

    ``fn(*tensors, ...)`` is any callable that runs one step and returns what you want back
    (usually the loss). The result is a :class:`CapturedStep`: its first ``warmup`` calls run
    eagerly, the next two run eagerly while recording every kernel call, and later calls replay
    the recorded calls on the new arguments' values without running ``fn``'s Python code (see
    :mod:`torchlight.jit.step` for what that implies). Results agree with eager execution.
    Works as ``capture_step(fn)``, ``@capture_step`` or ``@capture_step(warmup=2)``.
    ``fuse=True`` compiles runs of consecutive elementwise calls into one kernel each on backends
    with the ``"compile"`` capability (:mod:`torchlight.jit.step_fusion`; the first replay pays
    the compilation).

    Replays need the same argument shapes (and equal non-tensor arguments): another call raises
    :class:`~torchlight.jit.TraceError`, or with ``on_mismatch="eager"`` runs ``fn`` eagerly
    (say, for the last, smaller batch of an epoch) and keeps the capture for the next calls —
    tensors the step leaves on Python objects, such as ``p.grad``, are then the eager call's
    until the next capture. Host values that change per step must be declared
    (:func:`~torchlight.jit.count_up`, :func:`~torchlight.jit.guard`); ``.item()`` inside the
    step and data-dependent control flow are refused with a
    :class:`~torchlight.jit.TraceError`. Dropout and other draws of torchlight's generators are
    drawn anew by every replay, as by the eager step.

    >>> import torchlight as tl
    >>> from torchlight import nn
    >>> model = nn.Linear(4, 1)
    >>> opt = tl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> @tl.jit.capture_step
    ... def train_step(x, y):
    ...     opt.zero_grad()
    ...     loss = ((model(x) - y) ** 2).mean()
    ...     loss.backward()
    ...     opt.step()
    ...     return loss
    >>> x, y = tl.randn(8, 4), tl.randn(8, 1)
    >>> losses = [train_step(x, y).item() for _ in range(10)]
    >>> train_step.state, losses[-1] < losses[0]
    ('captured', True)
    """
    if fn is None:
        return lambda f: CapturedStep(f, warmup=warmup, fuse=fuse, on_mismatch=on_mismatch)
    return CapturedStep(fn, warmup=warmup, fuse=fuse, on_mismatch=on_mismatch)


# --- inputs --------------------------------------------------------------------------------------
def _buffer_like(t: Any) -> Any:
    return alloc(t.shape, t.dtype, t.backend, t)


def _load(buf: Any, t: Any, index_bounds: bool = False) -> None:
    """Copy ``t``'s values into the captured buffer ``buf`` (a kernel call, no allocation)."""
    same_backend(buf, t)
    buf.backend.map("copy", t._td, buf._td)
    if index_bounds and t.dtype.name == "int64":
        # the recorded step must not read indices back to check them: their bounds go along
        lo, hi = index_range(t)
        set_index_range(buf, lo, hi)


# --- outputs -------------------------------------------------------------------------------------
def _output_template(result: Any, rec: Recording) -> Any:
    if isinstance(result, Tensor):
        td = result._td
        view = TensorData(td.storage, td.shape, td.strides, td.offset)
        return ("tensor", view, result.backend, result.dtype)  # not the tensor: its graph may go
    if isinstance(result, (tuple, list)):
        return (type(result), [_output_template(r, rec) for r in result])
    if result is None:
        return None
    raise TraceError(
        f"a captured step may return tensors, tuples or lists of them, or None; it returned "
        f"{type(result).__name__}. Return the tensor and convert it outside the step"
    )


def _materialise(template: Any) -> Any:
    if template is None:
        return None
    if template[0] == "tensor":
        _, td, backend, dtype = template
        out = alloc(td.shape, dtype, backend, Tensor)
        backend.map("copy", td, out._td)
        return out
    kind, items = template
    return kind(_materialise(t) for t in items)


def _restores(rec: Recording) -> list[Call]:
    """Calls that put back host data the step wrote over (a tensor built from Python numbers and
    then modified in place), so every replay starts from the same constants."""
    calls = []
    for k, data in rec.host_data.items():
        storage, backend = rec.storages[k], rec.owner[k]
        n = data.size
        view = TensorData(storage, (n,))
        if np.array_equal(backend.to_numpy(view), data.reshape(-1), equal_nan=True):
            continue
        pristine = TensorData(backend.from_numpy(np.ascontiguousarray(data.reshape(-1))), (n,))
        calls.append(Call("map", backend.map, ("copy", pristine, view), {}, backend))
    return calls


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _signature_change(old: tuple | None, new: tuple) -> str:
    if old is None:
        return "the capture was discarded"
    for a, b in zip(old, new):
        if a != b:
            if a[1] == "tensor" and b[1] == "tensor":
                return (
                    f"argument {a[0]!r} was captured as shape {tuple(a[2])} {a[3]} on {a[4]!r}, "
                    f"got shape {tuple(b[2])} {b[3]} on {b[4]!r}"
                )
            return f"argument {a[0]!r} was captured as {a[2:]!r}, got {b[2:]!r}"
    return f"{len(old)} arguments were captured, got {len(new)}"
