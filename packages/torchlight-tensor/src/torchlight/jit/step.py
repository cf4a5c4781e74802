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
  anything (:meth:`CapturedStep.reset` captures afresh), or, as ``on_mismatch`` asks, runs
  eagerly or goes to another capture for its own signature (each one a :class:`CapturedStep`
  of its own, going through the same calls).

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
import warnings
from collections.abc import Callable
from typing import Any

from torchlight.tensor.tensor import Tensor

from .live import capturing
from .recording import Call, Recording, first_difference
from .step_buffers import buffer_like, load_input, materialise, output_template, restores
from .step_fusion import fuse_calls
from .tape import TraceError

__all__ = ["capture_step", "CapturedStep", "MAX_CAPTURES", "ON_MISMATCH"]

ON_MISMATCH = ("error", "eager", "capture")
"""What a captured step does with a call whose arguments do not match its capture: raise, run
it eagerly, or capture that signature too (:func:`capture_step`)."""
MAX_CAPTURES = 8
"""How many signatures ``on_mismatch="capture"`` captures before running others eagerly: as
``torch.compile``'s default recompile limit; each capture holds its own buffers."""


class CapturedStep:
    """A training step that is captured once and then replayed (see :func:`capture_step`).

    Call it like the function it wraps. ``state`` is ``"warmup"``, ``"recording"``,
    ``"captured"`` (replays from now on); ``n_calls`` is the number of kernel calls a replay
    issues; ``calls`` lists them (fused runs as ``FusedCall``). With ``on_mismatch="capture"``
    these describe the first signature's capture, and ``n_captures`` counts them all.

    >>> import torchlight as tl
    >>> w = tl.zeros(3)
    >>> step = tl.jit.CapturedStep(lambda x: w.add_(x))
    >>> for _ in range(5):
    ...     _ = step(tl.ones(3))
    >>> step.state, w.tolist()
    ('captured', [5.0, 5.0, 5.0])
    """

    def __init__(
        self,
        fn: Callable,
        warmup: int = 1,
        fuse: bool = False,
        on_mismatch: str = "error",
        max_captures: int = MAX_CAPTURES,
    ) -> None:
        if warmup < 0:
            raise TraceError(f"warmup must be >= 0, got {warmup}")
        if on_mismatch not in ON_MISMATCH:
            raise TraceError(
                f"on_mismatch must be one of {', '.join(map(repr, ON_MISMATCH))}, "
                f"got {on_mismatch!r}"
            )
        if max_captures < 1:
            raise TraceError(f"max_captures must be >= 1, got {max_captures}")
        self.on_mismatch = on_mismatch
        self.max_captures = max_captures
        self.fn = fn
        self.warmup = warmup
        self.fuse = bool(fuse)
        functools.update_wrapper(self, fn, updated=())
        self.reset()

    def reset(self) -> None:
        """Forget the capture (every one, with ``on_mismatch="capture"``): the next calls run
        eagerly and record again (after a shape change you want, a learning-rate change, a
        model change)."""
        self._eager_left = self.warmup
        self._first: Recording | None = None
        self._signature: tuple | None = None
        self._buffers: list = []
        self._replay: list[Call] = []
        self._guards: list = []
        self._outputs: Any = None
        self._keep: Recording | None = None
        # on_mismatch="capture": (signature, CapturedStep) for each other signature; a list, as
        # a signature may hold unhashable arguments, and it holds fewer than max_captures
        self._others: list[tuple[tuple, CapturedStep]] = []
        self._warned = False

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
        """How many kernel calls (and host operations) one replay issues (0 before capture);
        with several captures (``on_mismatch="capture"``), the first one's."""
        return len(self._replay)

    @property
    def n_captures(self) -> int:
        """How many argument signatures (shapes, dtypes, devices, other arguments) have a
        capture that replays: at most 1, or up to ``max_captures`` with
        ``on_mismatch="capture"``."""
        return (self._keep is not None) + sum(s._keep is not None for _, s in self._others)

    # --- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if capturing():
            # its replays call kernels directly, past the outer recording: they would be lost
            raise TraceError(
                "a captured step was called inside another step that is being captured; "
                "capture only the outer step (call the inner function itself there)"
            )
        return self._call(args, kwargs, None)

    def _call(self, args: tuple, kwargs: dict, split: tuple | None) -> Any:
        """Run, record or replay one call; ``split`` is its ``(tensors, signature)`` when the
        first capture already took them apart (a call it passes on to another signature's)."""
        if self._keep is None and self._eager_left > 0:
            self._eager_left -= 1
            return self.fn(*args, **kwargs)
        tensors, sig = split or self._split(args, kwargs)
        if self._keep is not None:
            return self._run_replay(tensors, sig, args, kwargs)
        return self._record(tensors, sig, args, kwargs)

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

    def _record(self, tensors: list, sig: tuple, args: tuple, kwargs: dict) -> Any:
        if self._signature is None:
            self._signature = sig
            self._buffers = [buffer_like(t) for t in tensors]
        elif sig != self._signature:
            return self._mismatch(tensors, sig, args, kwargs)
        for buf, t in zip(self._buffers, tensors):
            load_input(buf, t, index_bounds=True)
        it = iter(self._buffers)
        b_args = tuple(next(it) if isinstance(a, Tensor) else a for a in args)
        b_kwargs = {k: next(it) if isinstance(v, Tensor) else v for k, v in sorted(kwargs.items())}
        with Recording() as rec:
            result = self.fn(*b_args, **b_kwargs)
        outputs = output_template(result)
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
        return materialise(outputs)

    def _install(self, rec: Recording, outputs: Any) -> None:
        self._replay = restores(rec) + (fuse_calls(rec.calls) if self.fuse else rec.calls)
        last = max((i for i, e in enumerate(rec.host_program) if e[0] == "guard"), default=-1)
        self._guards = rec.host_program[
            : last + 1
        ]  # host operations after the last guard: not needed
        self._outputs = outputs
        self._keep = rec

    def _run_replay(self, tensors: list, sig: tuple, args: tuple, kwargs: dict) -> Any:
        if sig != self._signature:
            return self._mismatch(tensors, sig, args, kwargs)
        self._check_guards()
        for buf, t in zip(self._buffers, tensors):
            load_input(buf, t)
        for call in self._replay:
            call.run()
        return materialise(self._outputs)

    def _mismatch(self, tensors: list, sig: tuple, args: tuple, kwargs: dict) -> Any:
        if self.on_mismatch == "capture":
            for known, other in self._others:
                if known == sig:
                    return other._call(args, kwargs, (tensors, sig))
            if 1 + len(self._others) < self.max_captures:
                other = CapturedStep(self.fn, self.warmup, self.fuse)
                self._others.append((sig, other))
                return other._call(args, kwargs, (tensors, sig))
            if not self._warned:  # as torch.compile past its recompile limit: eager, said once
                self._warned = True
                warnings.warn(
                    f"{self!r} holds max_captures={self.max_captures} captures; calls with "
                    f"other arguments run eagerly ({_signature_change(self._signature, sig)}). "
                    "Pass a larger max_captures, or fewer shapes (pad or bucket the batches)",
                    RuntimeWarning,
                    stacklevel=5,  # the user's line: __call__ -> _call -> _record/_run_replay
                )
            return self.fn(*args, **kwargs)
        if self.on_mismatch == "eager":
            return self.fn(*args, **kwargs)
        raise TraceError(
            f"the captured step was called with arguments that differ from the captured ones: "
            f"{_signature_change(self._signature, sig)}. A capture replays fixed shapes and "
            "takes its non-tensor arguments as constants: keep batches the same size (a "
            "DataLoader's drop_last=True), pass numbers that change as tensors, call .reset() "
            'to capture again, or capture each shape with on_mismatch="capture"'
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
    fn: Callable | None = None,
    *,
    warmup: int = 1,
    fuse: bool = False,
    on_mismatch: str = "error",
    max_captures: int = MAX_CAPTURES,
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
    until the next capture. ``on_mismatch="capture"`` captures each new signature in turn (its
    own warmup and two recordings, then replays), up to ``max_captures`` of them, after which
    other signatures run eagerly with a warning: for steps whose shapes take a few values (the
    length of a name or a sentence). Each capture keeps its own buffers, and ``p.grad`` and the
    like are then the last recorded signature's tensors, not the last replayed one's. Host
    values that change per step must be declared (:func:`~torchlight.jit.count_up`,
    :func:`~torchlight.jit.guard`); ``.item()`` inside the step and data-dependent control flow
    are refused with a :class:`~torchlight.jit.TraceError`. Dropout and other draws of
    torchlight's generators are drawn anew by every replay, as by the eager step.

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
        return lambda f: capture_step(
            f, warmup=warmup, fuse=fuse, on_mismatch=on_mismatch, max_captures=max_captures
        )
    return CapturedStep(fn, warmup, fuse, on_mismatch, max_captures)


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
