"""Live host values: Python numbers that a captured step re-reads on every replay.

A captured step (:mod:`torchlight.jit.step`) replays kernel calls without running the Python code
that produced their arguments, so a number computed on the host inside the step is frozen at its
captured value. That is right for a learning rate that never changes and wrong for Adam's bias
correction, which depends on the step count. Code that keeps such per-step host state declares
it with two calls, which behave exactly like plain Python outside a capture:

* :func:`count_up` — ``state[key] += 1``, returning the new count. Inside a capture the increment
  becomes a host operation of the replay, and the count it returns is a :class:`Live` number:
  arithmetic on it (``beta1 ** step``, ``lr / (1 - ...)``) builds an expression that the replay
  evaluates afresh before each kernel call that takes it.
* :func:`guard` — ``fn()`` is evaluated at capture and again before every replay; a different
  answer stops the replay with a :class:`~torchlight.jit.TraceError` (say, a learning rate
  changed by a scheduler).

A :class:`Live` number turned into a plain one (``float(step)``, ``if step > 10:``, a numpy array
built from it) can no longer follow the step; that conversion installs a guard, so a replay whose
value differs raises instead of reusing the stale number.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, MutableMapping
from typing import Any

from torchlight.tensor.recorders import active as _RECORDERS
from torchlight.tensor.recorders import capturing, is_recording

__all__ = ["Live", "count_up", "guard", "resolve", "capturing", "is_recording"]


def _value(x: Any) -> Any:
    return x.value() if isinstance(x, Live) else x


def resolve(x: Any) -> Any:
    """``x`` with every :class:`Live` number (also inside tuples and lists) replaced by its current
    value: what a kernel receives.

    >>> from torchlight.jit.live import Live, resolve
    >>> resolve((Live(lambda: 3) * 2, "a"))
    (6, 'a')
    """
    if isinstance(x, Live):
        return x.value()
    if isinstance(x, (tuple, list)) and any(isinstance(v, Live) for v in x):
        return type(x)(resolve(v) for v in x)
    return x


def _derived(label: str) -> str:
    prefix = "a number computed from "
    return label if label.startswith(prefix) else prefix + label


def _binary(op: Callable, reflected: bool = False) -> Callable:
    def method(self, other):
        if reflected:
            return Live(lambda: op(_value(other), self.value()), _derived(self.label))
        return Live(lambda: op(self.value(), _value(other)), _derived(self.label))

    return method


def _concrete(convert: Callable) -> Callable:
    def method(self, *args):
        if _RECORDERS:
            what = f"{convert.__name__}() of {self.label}"
            guard(
                lambda: convert(self.value(), *args),
                f"{what} (the number was used as a constant while capturing)",
            )
        return convert(self.value(), *args)

    return method


class Live:
    """A host number read at replay time: ``Live(fn)`` stands for ``fn()``.

    Arithmetic with numbers or other ``Live`` values gives a new ``Live`` (evaluated lazily);
    :func:`resolve` turns it into a plain number. ``float``, ``int``, ``bool``, comparisons and
    ``round`` return plain values (and, while capturing, install a :func:`guard`).

    >>> from torchlight.jit.live import Live
    >>> box = {"step": 1}
    >>> bias = 1 - 0.9 ** Live(lambda: box["step"])
    >>> round(float(bias), 6)
    0.1
    >>> box["step"] = 2
    >>> round(float(bias), 6)
    0.19
    """

    __slots__ = ("_fn", "label")

    def __init__(self, fn: Callable[[], Any], label: str = "a live host value") -> None:
        self._fn = fn
        self.label = label

    def value(self) -> Any:
        """The number this stands for right now."""
        return self._fn()

    __add__ = _binary(operator.add)
    __radd__ = _binary(operator.add, True)
    __sub__ = _binary(operator.sub)
    __rsub__ = _binary(operator.sub, True)
    __mul__ = _binary(operator.mul)
    __rmul__ = _binary(operator.mul, True)
    __truediv__ = _binary(operator.truediv)
    __rtruediv__ = _binary(operator.truediv, True)
    __pow__ = _binary(operator.pow)
    __rpow__ = _binary(operator.pow, True)

    def __neg__(self) -> Live:
        return Live(lambda: -self.value(), _derived(self.label))

    def __pos__(self) -> Live:
        return self

    def __abs__(self) -> Live:
        return Live(lambda: abs(self.value()), _derived(self.label))

    __float__ = _concrete(float)
    __int__ = _concrete(int)
    __index__ = _concrete(operator.index)
    __bool__ = _concrete(bool)
    __round__ = _concrete(round)
    __lt__ = _concrete(operator.lt)
    __le__ = _concrete(operator.le)
    __gt__ = _concrete(operator.gt)
    __ge__ = _concrete(operator.ge)
    __eq__ = _concrete(operator.eq)
    __ne__ = _concrete(operator.ne)
    __hash__ = None  # type: ignore[assignment]  # a value that changes cannot be a dict key

    def __repr__(self) -> str:
        return f"Live({self.value()!r})"


def count_up(state: MutableMapping, key: str) -> Any:
    """``state[key] += 1`` and return the new count — a step counter that capture understands.

    Outside a capture this is exactly the increment and returns the int. While a step is being
    captured, the increment is also recorded as a host operation (each replay repeats it, so
    ``state[key]`` keeps counting) and the return value is a :class:`Live` number reading
    ``state[key]``: numbers derived from it are recomputed on every replay. Optimizers count their
    steps with it (Adam's bias correction depends on the count).

    >>> import torchlight as tl
    >>> state = {"step": 0}
    >>> tl.jit.count_up(state, "step")
    1
    >>> state
    {'step': 1}
    """
    state[key] += 1
    if not _RECORDERS:
        return state[key]

    def increment() -> None:
        state[key] += 1

    def undo() -> None:
        state[key] -= 1

    _RECORDERS[-1].host_op(increment, undo)
    return Live(lambda: state[key], f"the counter {key!r}")


def guard(fn: Callable[[], Any], what: str) -> None:
    """Declare that a captured step is valid only while ``fn()`` keeps its current value.

    Outside a capture this does nothing. While capturing, ``fn()`` is evaluated now and again
    before each replay (with the host state it would see at this point of the step: earlier
    :func:`count_up` increments applied); when the answers differ the replay raises
    :class:`~torchlight.jit.TraceError` naming ``what`` (and runs nothing). Optimizers guard their
    hyper-parameters this way, so a learning-rate scheduler cannot be silently ignored.

    >>> import torchlight as tl
    >>> tl.jit.guard(lambda: 0.1, "the learning rate")  # no capture running: nothing happens
    """
    if _RECORDERS:
        _RECORDERS[-1].add_guard(fn, fn(), what)
