"""Global gradient-recording switch: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

One module-level flag rather than a thread-local: torchlight runs one training loop per process
(data-parallel scale-out uses processes, see torchlight-distributed), and a plain attribute read
is the cheapest check ``Function.apply`` can make on every op.
"""

import functools

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "GradMode",
    "inference_mode",
    "is_inference_mode_enabled",
]


class _Flag:
    """Holder of the flag; ``GradMode.enabled`` is read on every op and written twice per op
    (``Function.apply`` switches recording off around ``forward``). An instance attribute, not a
    class attribute: writing a class attribute invalidates CPython's attribute caches of that
    class, which made every op measurably slower."""

    __slots__ = ("enabled",)

    def __init__(self):
        self.enabled = True


GradMode = _Flag()
"""The gradient-recording switch (``GradMode.enabled``); use :class:`no_grad` and friends to
change it."""


def is_grad_enabled() -> bool:
    """True when new operations are recorded for backpropagation.

    >>> with tl.no_grad():
    ...     tl.is_grad_enabled()
    False
    """
    return GradMode.enabled


class set_grad_enabled:
    """Set gradient recording on or off; usable as a function, context manager or decorator.

    >>> x = tl.ones(2, requires_grad=True)
    >>> with tl.set_grad_enabled(False):
    ...     (x * 2).requires_grad
    False
    """

    def __init__(self, mode: bool):
        self.prev = GradMode.enabled
        self.mode = bool(mode)
        GradMode.enabled = self.mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        GradMode.enabled = self.prev
        return False

    def __call__(self, fn):
        """As a decorator: undo the switch ``__init__`` made at decoration time, and apply the
        mode only while ``fn`` runs (otherwise ``@set_grad_enabled(False)`` would leave recording
        off for the whole process)."""
        GradMode.enabled = self.prev
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class _GradSwitch:
    mode = True

    def __enter__(self):
        self.prev = GradMode.enabled
        GradMode.enabled = self.mode
        return self

    def __exit__(self, *exc):
        GradMode.enabled = self.prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradSwitch):
    """Context manager / decorator: operations inside record no graph (inference, optimizer steps).

    >>> x = tl.ones(2, requires_grad=True)
    >>> with tl.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    mode = False


class enable_grad(_GradSwitch):
    """Context manager / decorator: re-enable recording inside a ``no_grad`` block.

    >>> x = tl.ones(2, requires_grad=True)
    >>> with tl.no_grad():
    ...     with tl.enable_grad():
    ...         y = x * 2
    >>> y.requires_grad
    True
    """

    mode = True


class inference_mode:
    """Context manager / decorator for inference: like :class:`no_grad` when ``mode`` is True
    (the default); ``inference_mode(False)`` changes nothing. ``@inference_mode`` and
    ``@inference_mode()`` both work as decorators.

    PyTorch also marks tensors made inside as "inference tensors" that later refuse autograd;
    torchlight has no such tensors, so here it is exactly ``no_grad``.

    >>> import torchlight as tl
    >>> x = tl.ones(2, requires_grad=True)
    >>> with tl.inference_mode():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __new__(cls, mode=True):
        if callable(mode):  # bare @inference_mode
            return cls(True)(mode)
        return super().__new__(cls)

    active = False  # True while an inference_mode(True) block runs

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (GradMode.enabled, inference_mode.active)
        if self.mode:
            GradMode.enabled = False
            inference_mode.active = True
        return self

    def __exit__(self, *exc):
        GradMode.enabled, inference_mode.active = self.prev
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    """True inside an active ``inference_mode()`` block.

    >>> with tl.inference_mode():
    ...     tl.is_inference_mode_enabled()
    True
    >>> tl.is_inference_mode_enabled()
    False
    """
    return inference_mode.active
