"""Who records the running step for capture, as the tensor layer sees it.

``torchlight.jit.capture_step`` records a training step as a flat list of kernel calls and then
replays that list without the step's Python code (:mod:`torchlight.jit.recording`). The tensor
layer does not know ``torchlight.jit``, but two of its decisions depend on a recording:

* a shortcut chosen from values read on the host (an index's range read back to take the
  whole-row gather) must not read while a step is recorded — the read is refused, and a replay
  would not decide again. :func:`is_recording` says when to take the general path;
* a random draw must be repeated by each replay, not frozen at the recorded numbers: the draws
  report to the recorder (:mod:`torchlight.tensor.random`).

:data:`active` is the list both look at: ``torchlight.jit`` pushes its recorder there for the
length of a recording.
"""

from torchlight.autograd import Function

__all__ = ["active", "capturing", "is_recording"]

active: list = []
"""The recorder of the step being captured (pushed and popped by ``torchlight.jit``), else
empty. It receives the host operations, guards and random draws declared during the step."""


def capturing() -> bool:
    """True while a step is being recorded for capture (inside :func:`torchlight.jit.capture_step`'s
    recording calls).

    >>> import torchlight as tl
    >>> tl.jit.capturing()
    False
    """
    return bool(active)


def is_recording() -> bool:
    """True while the ops that run are recorded to be replayed without this Python: by a
    :func:`torchlight.jit.trace` tape or a captured step. A shortcut chosen from the values at
    hand (no ignored targets in this batch, a fused whole-sequence layer the replay would not
    see) must take the general path then, because a replay does not decide again.

    >>> import torchlight as tl
    >>> tl.jit.is_recording()
    False
    """
    return bool(Function.tracers) or bool(active)
