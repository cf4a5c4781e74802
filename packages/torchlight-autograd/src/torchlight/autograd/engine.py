"""Reverse-mode backpropagation over the dynamic graph.

Given a root variable ``y`` and ``dL/dy`` the engine

1. orders the graph topologically (every variable before the inputs it was computed from), with an
   explicit stack instead of recursion so a 10,000-step unrolled RNN does not hit Python's
   recursion limit;
2. walks that order once, applying each node's chain rule and summing the gradients that reach a
   variable along different paths (the multivariate chain rule: ``dL/dx = sum_i dL/dy_i dy_i/dx``);
3. hands the total to each leaf's ``accumulate_grad`` (so ``.grad`` accumulates across calls), and
   frees the saved values unless ``retain_graph=True``.
"""

from .errors import AutogradError
from .grad_mode import GradMode

__all__ = ["topological_order", "backward"]


def _needs_grad(v) -> bool:
    return getattr(v, "requires_grad", False)


def topological_order(root) -> list:
    """Variables reachable from ``root`` that require grad, each before its own inputs."""
    order = []
    seen: set[int] = set()
    stack = [(root, False)]
    push, pop, mark = stack.append, stack.pop, seen.add
    while stack:
        var, done = pop()
        if done:
            order.append(var)
            continue
        key = id(var)
        if key in seen:
            continue
        mark(key)
        push((var, True))
        hist = var._history
        if hist is not None:
            # Pushed in reverse so the first input is explored first; then leaves that feed
            # early layers come last in the order and late layers' parameters get their
            # gradients early, which lets data-parallel training start all-reducing them
            # while backward is still running.
            for parent in reversed(hist.inputs):
                if getattr(parent, "requires_grad", False) and id(parent) not in seen:
                    push((parent, False))
    order.reverse()
    return order


def backward(root, grad, retain_graph: bool = False, create_graph: bool = False) -> None:
    """Backpropagate ``grad`` (= dL/droot) from ``root`` to every leaf that requires grad.

    ``create_graph=True`` records the backward computation itself, so gradients can be
    differentiated again (and implies ``retain_graph``).
    """
    if not _needs_grad(root):
        raise AutogradError(
            "backward() called on a value that does not require grad and has no grad_fn: "
            "create the inputs with requires_grad=True (and not inside no_grad())."
        )
    retain_graph = retain_graph or create_graph
    order = topological_order(root)
    pending = {id(root): grad}
    prev = GradMode.enabled
    GradMode.enabled = create_graph
    try:
        for var in order:
            g = pending.pop(id(var), None)
            if g is None:
                continue
            hist = var._history
            if hist is None or getattr(var, "_retains_grad", False):
                var.accumulate_grad(g)
            if hist is None:
                continue
            for parent, pg in hist.backprop(g):
                key = id(parent)
                acc = pending.get(key)
                pending[key] = pg if acc is None else acc + pg
            if not retain_graph:
                hist.ctx.release()
    finally:
        GradMode.enabled = prev
