"""``torchlight.compile``: PyTorch's ``torch.compile`` entry point, for programs that call it.

torchlight executes eagerly, op by op, so compiling a model changes nothing about what it
computes: ``compile(model)`` returns ``model`` itself (what ``torch.compile`` does with
``backend="eager"``), and the program runs unchanged. The explicit tools for speed are
:mod:`torchlight.jit` (trace a forward pass to a tape, replay it with fused elementwise kernels)
and the compiled CPU backends (``python -m torchlight`` lists the installed ones; select one
with ``TORCHLIGHT_DEVICE``).
"""

__all__ = ["compile"]


def compile(
    model=None,
    *,
    fullgraph=False,
    dynamic=None,
    backend="inductor",
    mode=None,  # noqa: A001
    options=None,
    disable=False,
):
    """Return ``model`` (a module or function) unchanged: torchlight always runs eagerly.

    Usable as ``compile(model)``, ``@compile`` and ``@compile(mode=...)``; the keyword arguments
    are PyTorch's and accepted for compatibility.

    >>> import torchlight as tl
    >>> f = tl.compile(lambda x: x * 2)
    >>> f(tl.ones(2)).tolist()
    [2.0, 2.0]
    >>> @tl.compile(mode="reduce-overhead")
    ... def g(x):
    ...     return x + 1
    >>> g(tl.zeros(1)).tolist()
    [1.0]
    """
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise TypeError(f"compile: expected a module or a function, got {type(model).__name__}")
    return model
