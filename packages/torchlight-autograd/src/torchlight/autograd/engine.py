"""Reverse-mode backpropagation over the dynamic graph.

Given a root variable ``y`` and ``dL/dy`` the engine

1. orders the graph topologically (every variable before the inputs it was computed from), with an
   explicit stack instead of recursion so a 10,000-step unrolled RNN does not hit Python's
   recursion limit;
2. walks that order once, applying each node's chain rule and summing the gradients that reach a
   variable along different paths (the multivariate chain rule: ``dL/dx = sum_i dL/dy_i dy_i/dx``;
   :mod:`~torchlight.autograd.accumulation` sums them in place where that is safe);
3. hands the total to each leaf's ``accumulate_grad`` (so ``.grad`` accumulates across calls), and
   frees the saved values unless ``retain_graph=True``.
"""

from .accumulation import GradientSums, PartialGradient
from .errors import AutogradError
from .function import Context, Function, link_output
from .grad_mode import GradMode

__all__ = ["topological_order", "backward", "SecondOrderError"]


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
    pending = GradientSums(in_place=not create_graph)
    add, pop = pending.add, pending.pop
    add(root, grad)
    prev = GradMode.enabled
    GradMode.enabled = create_graph
    try:
        for var in order:
            hist = var._history
            g = pop(var, hist is not None and hist.fn.partial_grad)
            if g is None:
                continue
            if hist is None or hist.output is not None:  # a leaf, or a node asked to retain
                var.accumulate_grad(g.dense() if isinstance(g, PartialGradient) else g)
            if hist is None:
                continue
            pairs = hist.backprop(g)
            if create_graph:
                pairs = _differentiable(hist, g, pairs)
            for parent, pg in pairs:
                add(parent, pg)
            if not retain_graph:
                hist.ctx.release()
    finally:
        GradMode.enabled = prev


class SecondOrderError(Function):
    """The node of a gradient that a backward computed outside the graph (a fused kernel): it
    holds the value, and differentiating it again raises instead of silently leaving out that
    node's share of the second derivative (PyTorch's ``once_differentiable``)."""

    @staticmethod
    def forward(ctx, g, name):
        ctx.name = name
        return g.detach()

    @staticmethod
    def backward(ctx, gg):
        raise AutogradError(
            f"cannot differentiate twice through {ctx.name}: its backward runs as one fused "
            "kernel outside the graph, so backward(create_graph=True) gave first derivatives "
            "only there. Build that part of the model from ops that are differentiable twice, "
            "or leave it out of the second-order term."
        )

    @classmethod
    def mark(cls, g, name):
        """``g`` as a variable that requires grad and raises when backpropagated into."""
        ctx = Context()
        out = cls.forward(ctx, g, name)
        return link_output(out, cls, ctx, ())


def _differentiable(hist, g, pairs):
    """``create_graph``: a gradient that should depend on the graph (the incoming gradient or a
    saved value does) but does not was computed outside it; mark it (:class:`SecondOrderError`)."""
    if not (_needs_grad(g) or any(_needs_grad(s) for s in hist.ctx._saved)):
        return pairs
    op = hist.ctx.__dict__.get("op")
    name = hist.fn.__name__ + (f" ({op})" if isinstance(op, str) else "")
    return [(v, pg if _needs_grad(pg) else SecondOrderError.mark(pg, name)) for v, pg in pairs]
