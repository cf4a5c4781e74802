"""``torchlight.jit``: trace a forward pass to an op tape, inspect it, replay it, fuse it; capture
a whole training step and replay its kernel calls.

::

    tape = tl.jit.trace(model, x)        # runs model(x) once, recording every op
    y = tape(x2)                          # replays the ops on new inputs (no autograd graph)
    tape.count_ops()                      # Counter({'matmul': 2, 'add': 2, 'relu': 1})
    print(tape.summary())                 # op, shapes, FLOPs, bytes
    tape.to_dot()                         # Graphviz text
    tape.replay(x2, fuse=True)            # elementwise chains as kernels of the backend's compiler

The tracer hooks ``Function.apply`` (``Function.tracers``), so it records any model — raw tensor
code or ``torchlight.nn`` modules — without the model knowing. Parameters are held by
reference: a replay after an optimizer step uses the new weights.

**What a tape cannot capture.** A tape replays the ops that ran while tracing, nothing else.
Data-dependent Python control flow is *not* captured: an ``if`` on a tensor value, a loop whose
trip count depends on data, or a Python number computed from a tensor (``x.sum().item()``) is
evaluated once, during the trace, and the tape replays that branch forever. Randomness drawn
while tracing (dropout masks) is replayed as a constant: trace in ``eval()`` mode. Sizes other
than the traced ones (typically the batch) replay when the ops allow it; a shape the tape
cannot take raises :class:`TraceError` naming the first op that disagrees.

**Whole-step capture.** :func:`capture_step` wraps a training step (forward, ``backward()``,
``optimizer.step()``); after one eager warm-up call and two eager recording calls, every call
copies the new batch into the captured input buffers and re-issues the recorded backend calls —
no autograd graph, no module code, no allocation::

    step = tl.jit.capture_step(train_step)   # or @tl.jit.capture_step on the definition
    for x, y in loader:
        loss = step(x, y)

Replays need the captured argument shapes (``on_mismatch="capture"`` keeps one capture per shape,
for steps whose shapes take a few values); Python numbers that change per step must be declared
(:func:`count_up` makes a step counter :class:`Live`; :func:`guard` stops replays when a setting
changes — torchlight's optimizers do both). Random draws (dropout) are drawn anew by each replay,
as by an eager step. ``.item()`` inside the step and changing control flow are refused with
:class:`TraceError`. See :mod:`torchlight.jit.step`.
"""

from .fusion import ElementwiseChain, get_compiler
from .live import Live, capturing, count_up, guard, is_recording
from .step import CapturedStep, capture_step
from .tape import GraphTape, Node, Slot, TraceError, Value
from .trace import trace

__all__ = [
    "trace",
    "GraphTape",
    "TraceError",
    "Node",
    "Value",
    "Slot",
    "ElementwiseChain",
    "get_compiler",
    "capture_step",
    "CapturedStep",
    "count_up",
    "guard",
    "capturing",
    "is_recording",
    "Live",
]
