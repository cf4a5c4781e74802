"""Recording one eager step as a flat list of backend calls.

While a :class:`Recording` is active, every backend that has been loaded is watched: each
*top-level* call of one of its public methods (a call made by the core, not one a backend makes
on itself) is run as usual and appended to the list, with its arguments as they were — the
``TensorData`` views (copied, so later changes to a view object cannot alter the record),
op names, dims and Python constants. The backend is watched by shadowing its methods with
instance attributes, which keeps the core unaware of capture (no hook in the dispatch code, and
kernels called from anywhere in the core are seen).

Storage allocated during the step (``empty``, ``empty_handle``, ``from_numpy``) is numbered in
allocation order and kept alive: it becomes the capture's preallocated buffers. Storage that
existed before the step (parameters, optimizer state, the capture's input buffers) is named by
identity. Two recordings of consecutive steps can therefore be compared call by call
(:func:`first_difference`).

Random draws are repeated, not frozen: a tensor drawn on the host (``tl.rand`` on the numpy
backend, ``randint``, ``randperm``, ``normal_``) is refilled by a host operation of the replay
from a new draw of the same stream, and a backend's own random fill (``random_``) takes its
``(seed, k)`` as live numbers counted afresh at each replay (:mod:`torchlight.tensor.random`
reports both to the recorder in :data:`torchlight.tensor.recorders.active`). A replay therefore
draws exactly what the eager step would have drawn.

A device→host read (``to_numpy``: ``.item()``, ``.tolist()``, ``.numpy()``) stops the recording
with a :class:`~torchlight.jit.TraceError`: what the step does with a host value cannot be
replayed. The same goes for asking a backend to compile a kernel mid-step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchlight.tensor.dispatch import freeze_constants
from torchlight.tensor.storage import TensorData

from . import live
from .tape import TraceError

__all__ = ["Recording", "Call", "first_difference", "loaded_backends"]

_PASS_THROUGH = frozenset({"synchronize", "empty_cache", "device_name", "is_available"})
"""Backend methods that neither compute nor allocate: called directly, never recorded."""
_DECLINED = frozenset({"map_new", "zip_new"})
"""Backend methods that allocate the storage they compute into (capability ``new_result``):
declined while recording (they answer ``None``), so that the core allocates the result
(numbered like every allocation) and calls ``map``/``zip`` into it, which a replay repeats."""
_REFUSED = {
    "to_numpy": "read a tensor's values on the host (.item(), .tolist(), .numpy(), print, or a "
    "Python `if` on a tensor)",
    "dlpack_source": "exported a tensor through DLPack",
    "from_dlpack": "imported a tensor through DLPack",
    "compile_elementwise": "compiled a kernel",
}


def _decline(*args: Any, **kwargs: Any) -> None:
    """A :data:`_DECLINED` method while recording: nothing computed, the core takes over."""
    return None


def loaded_backends() -> list:
    """Every backend object loaded so far (``torchlight.get_backend`` caches them).

    >>> import torchlight as tl
    >>> from torchlight.jit.recording import loaded_backends
    >>> tl.get_backend("cpu") in loaded_backends()
    True
    """
    from torchlight.tensor.backend import registry

    return list({id(b): b for b in registry._loaded.values()}.values())


class Call:
    """One recorded backend call: ``fn(*args, **kwargs)``, ``name`` the method's name; or, with
    ``fn`` a host callable and ``name`` ``"host"``, a host operation (``count_up``'s increment).
    Arguments that are :class:`~torchlight.jit.Live` numbers are evaluated at each :meth:`run`.

    >>> from torchlight.jit.live import Live
    >>> from torchlight.jit.recording import Call
    >>> box, seen = {"n": 1}, []
    >>> call = Call("host", seen.append, (Live(lambda: box["n"]),), {})
    >>> call.run(); box["n"] = 2; call.run()
    >>> seen
    [1, 2]
    """

    __slots__ = ("name", "fn", "args", "kwargs", "live", "backend")

    def __init__(self, name, fn, args, kwargs, backend=None):
        self.name = name
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.backend = backend
        self.live = any(_has_live(a) for a in args) or any(_has_live(v) for v in kwargs.values())

    def run(self) -> None:
        """Issue the call again (live host numbers evaluated now)."""
        if self.live:
            self.fn(
                *[live.resolve(a) for a in self.args],
                **{k: live.resolve(v) for k, v in self.kwargs.items()},
            )
        else:
            self.fn(*self.args, **self.kwargs)

    def __repr__(self) -> str:
        return f"Call({self.name})"


def _has_live(a: Any) -> bool:
    return isinstance(a, live.Live) or (
        isinstance(a, (tuple, list)) and any(isinstance(v, live.Live) for v in a)
    )


def _snapshot(a: Any) -> Any:
    if isinstance(a, TensorData):
        return TensorData(a.storage, a.shape, a.strides, a.offset)
    if isinstance(a, list):
        return [_snapshot(v) for v in a]
    if isinstance(a, tuple):
        return tuple(_snapshot(v) for v in a)
    return a


class Recording:
    """The backend calls, allocations, host operations and guards of one eager step (used as a
    context manager around the step; see the module docstring).

    >>> import torchlight as tl
    >>> from torchlight.jit.recording import Recording
    >>> x = tl.ones(3)
    >>> with Recording() as rec:
    ...     y = x * 2.0
    >>> [c.name for c in rec.calls], len(rec.storages)  # the scalar 2.0 (filled) and y allocated
    (['fill', 'zip'], 2)
    """

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.created: dict[int, int] = {}  # id(storage) -> allocation number
        self.storages: list = []  # allocation number -> storage (kept alive)
        self.host_data: dict[int, np.ndarray] = {}  # allocation number -> from_numpy's data
        self.owner: list = []  # allocation number -> the backend that allocated it
        self.host_program: list = []  # host operations and guards, in step order
        self._depth = 0
        self._patched: list = []

    # --- watching the backends ---------------------------------------------------------------
    def __enter__(self) -> Recording:
        self.backends = loaded_backends()
        for backend in self.backends:
            for name in dir(type(backend)):
                if name.startswith("_") or name in _PASS_THROUGH or name in vars(backend):
                    continue
                method = getattr(backend, name)
                if callable(method):
                    watched = _decline if name in _DECLINED else self._watch(backend, name, method)
                    setattr(backend, name, watched)
                    self._patched.append((backend, name))
        live._RECORDERS.append(self)
        freeze_constants(True)
        return self

    def __exit__(self, *exc: Any) -> None:
        freeze_constants(False)
        live._RECORDERS.remove(self)
        for backend, name in self._patched:
            delattr(backend, name)
        self._patched.clear()
        if exc[0] is None and len(loaded_backends()) != len(self.backends):
            raise TraceError(
                "a backend was loaded for the first time inside the captured step, so its "
                "kernel calls were not recorded; run the step eagerly once first (warmup=1)"
            )

    def _watch(self, backend: Any, name: str, method: Any) -> Any:
        def watched(*args, **kwargs):
            if self._depth:  # the backend calling itself: part of the outer call
                return method(*args, **kwargs)
            if name in _REFUSED:
                raise TraceError(
                    f"the captured step {_REFUSED[name]} (backend.{name}); a capture replays kernel "
                    "calls only, without the Python code around them. Move the read out of the "
                    "step (return the tensor and call .item() on the result), or run this step "
                    "eagerly"
                )
            self._depth += 1
            try:
                result = method(
                    *[live.resolve(a) for a in args],
                    **{k: live.resolve(v) for k, v in kwargs.items()},
                )
            finally:
                self._depth -= 1
            if name == "empty":
                self._created(result, backend)
            elif name == "empty_handle":  # (storage, the backend's handle on its view)
                self._created(result[0], backend)
            elif name == "from_numpy":
                k = self._created(result, backend)
                self.host_data[k] = np.array(args[0], copy=True)
            else:
                args = tuple(_snapshot(a) for a in args)
                kwargs = {k: _snapshot(v) for k, v in kwargs.items()}
                self.calls.append(Call(name, method, args, kwargs, backend))
            return result

        return watched

    def _created(self, storage: Any, backend: Any) -> int:
        k = len(self.storages)
        self.created[id(storage)] = k
        self.storages.append(storage)
        self.owner.append(backend)
        return k

    # --- host side (called by torchlight.jit.live) -----------------------------------------
    def host_op(self, fn: Any, undo: Any) -> None:
        """Append a host operation, repeated by every replay at this point of the step
        (``undo()`` reverses it: guards are checked on a dry run of the host operations; ``None``
        for an operation no guard can see, which the dry run skips)."""
        self.calls.append(Call("host", fn, (), {}))
        if undo is not None:
            self.host_program.append(("op", fn, undo))

    # --- random draws (called by torchlight.tensor.random) ---------------------------------
    def host_fill(self, view: TensorData, draw: Any) -> None:
        """``view``'s storage was just made from ``draw()``'s host random numbers: each replay
        refills it from a new ``draw()`` at this point of the step (so the recorded numbers are
        neither compared between the two recordings nor restored)."""
        k = self.created[id(view.storage)]
        data = self.host_data.pop(k)
        backend, target = self.owner[k], TensorData(self.storages[k], (data.size,))

        def refill() -> None:
            fresh = np.ascontiguousarray(draw(), dtype=data.dtype).reshape(-1)
            backend.map("copy", TensorData(backend.from_numpy(fresh), (fresh.size,)), target)

        self.host_op(refill, None)  # no guard reads a random stream

    def device_fill(self, take: Any) -> tuple:
        """The ``(seed, k)`` that ``take()`` gives a backend's random fill, as live numbers: each
        replay calls ``take()`` again at this point of the step (counting the fill on its
        generator, as the eager step does) and the fill reads the new pair."""
        pair = [take()]

        def again() -> None:
            pair[0] = take()

        self.host_op(again, None)  # no guard reads a random stream
        what = "a random fill's seed and number"
        return live.Live(lambda: pair[0][0], what), live.Live(lambda: pair[0][1], what)

    def add_guard(self, fn: Any, value: Any, what: str) -> None:
        """Require ``fn()``, evaluated at this point of the step, to keep ``value`` for the capture
        to be replayed."""
        self.host_program.append(("guard", fn, value, what))

    # --- comparing ---------------------------------------------------------------------------
    def key(self, a: Any) -> Any:
        """A comparable description of an argument: storages by allocation number or identity."""
        if isinstance(a, TensorData):
            k = self.created.get(id(a.storage))
            where = ("new", k) if k is not None else ("old", id(a.storage))
            return ("view", where, a.shape, a.strides, a.offset)
        if isinstance(a, (tuple, list)):
            return tuple(self.key(v) for v in a)
        if isinstance(a, live.Live):
            return "live"
        return a


def _describe(call: Call) -> str:
    return "a host operation" if call.name == "host" else f"backend.{call.name}"


def first_difference(a: Recording, b: Recording) -> str | None:
    """Why two recordings of consecutive steps are not the same program, or None when they are.

    >>> import torchlight as tl
    >>> from torchlight.jit.recording import Recording, first_difference
    >>> w = tl.zeros(2)
    >>> recs = []
    >>> for scale in (1.0, 1.0, 3.0):
    ...     with Recording() as rec:
    ...         _ = w.add_(tl.ones(2) * scale)
    ...     recs.append(rec)
    >>> first_difference(recs[0], recs[1]) is None
    True
    >>> "changed between steps" in first_difference(recs[1], recs[2])
    True
    """
    if len(a.storages) != len(b.storages):
        return (
            "the step's Python control flow changed between calls (they allocated "
            f"{len(a.storages)} and {len(b.storages)} tensors), or the first of them created "
            "state lazily (an optimizer's first step: capture with warmup >= 1)"
        )
    for i, (ca, cb) in enumerate(zip(a.calls, b.calls)):
        if ca.name != cb.name:
            return (
                f"call #{i} was {_describe(ca)} in one step and {_describe(cb)} in the next: the "
                "step's Python control flow changed between calls"
            )
        if ca.name == "host":
            continue
        ka = [a.key(x) for x in ca.args] + [(k, a.key(v)) for k, v in sorted(ca.kwargs.items())]
        kb = [b.key(x) for x in cb.args] + [(k, b.key(v)) for k, v in sorted(cb.kwargs.items())]
        if ka != kb:
            return _argument_change(i, ca, ka, kb)
    if len(a.calls) != len(b.calls):
        return (
            f"the steps made different numbers of kernel calls ({len(a.calls)} and "
            f"{len(b.calls)}): the step's Python control flow changed between calls"
        )
    for k, data in a.host_data.items():
        other = b.host_data.get(k)
        if (
            other is None
            or data.shape != other.shape
            or not np.array_equal(data, other, equal_nan=data.dtype.kind == "f")
        ):
            return (
                f"buffer #{k} was built from host data that changed between steps (from "
                f"{_short(data)} to {_short(other)}): a Python number that changes every step "
                "(a step counter or learning rate read as a plain number), random numbers "
                "drawn with numpy or Python's random module instead of torchlight's, or a "
                "tensor made from changing Python data. Pass it as an argument of the step, "
                "count steps with torchlight.jit.count_up, draw with tl.rand/tl.randint"
            )
    return None


def _short(x: Any) -> str:
    if x is None:
        return "nothing"
    flat = np.asarray(x).reshape(-1)
    return repr(flat[:4].tolist()) + ("..." if flat.size > 4 else "")


def _argument_change(i: int, call: Call, ka: list, kb: list) -> str:
    for x, y in zip(ka, kb):
        if x != y:
            break
    if _mentions(x, "old") or _mentions(y, "old"):
        why = (
            "the step reads a tensor that the previous step created (state carried from step "
            "to step by reassignment, or gradients accumulated without zero_grad); update such "
            "state in place, or run this step eagerly"
        )
    else:
        why = (
            "a shape, layout or Python constant changed between steps (a number computed per "
            "step is baked into a capture: count steps with torchlight.jit.count_up, pass "
            "changing values as tensor arguments)"
        )
    return f"call #{i} (backend.{call.name}) got {x!r} in one step and {y!r} in the next: {why}"


def _mentions(k: Any, tag: str) -> bool:
    if isinstance(k, tuple):
        return (len(k) == 2 and k[0] == tag) or any(_mentions(v, tag) for v in k)
    return False
