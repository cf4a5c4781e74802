"""``Function``, ``Context`` and ``History``: how one differentiable operation is recorded.

A differentiable operation is a pair of static methods::

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):           # compute the value, save what backward needs
            ctx.save_for_backward(a, b)
            return a.data * b.data
        @staticmethod
        def backward(ctx, grad):          # dL/da = dL/dy * b,  dL/db = dL/dy * a
            a, b = ctx.saved_tensors
            return grad * b, grad * a

``Function.apply`` runs ``forward`` with recording switched off, then, if any input requires a
gradient, attaches a :class:`History` to the output: the function, its context and its inputs.
Those links are the edges of the dynamic graph that :mod:`torchlight.autograd.engine` walks
backwards. The engine is generic: a *variable* only needs the attributes ``requires_grad`` and
``_history``, a method ``accumulate_grad(g)`` for leaves, weak references (for
``retain_grad``, see :meth:`History.retain`), and gradients that support ``+``. A computed
input is linked through its ``History`` (the graph's node for it), so the graph holds only what
``forward`` saved. A Function whose forward applies no other Function may say so
(``direct_forward = True``): recording then need not be switched off around it, and the short
forms :meth:`Function.apply_binary` / :meth:`Function.apply_unary` build the same node with less
bookkeeping.
"""

import weakref

from .errors import AutogradError
from .grad_mode import GradMode

__all__ = ["Context", "History", "Function", "link_output"]


class Context:
    """Scratch space that ``forward`` fills and ``backward`` reads.

    ``save_for_backward`` stores inputs/outputs and remembers their version counters (when the
    variable has a ``_version`` cell): if an in-place op changes a saved tensor before backward,
    ``saved_tensors`` raises instead of silently producing a wrong gradient. Any other value can be
    stored as a plain attribute (``ctx.dim = dim``).
    """

    # class-level defaults: one Context is made per op, and __init__ then sets a single attribute
    _saved = ()
    _versions = None
    _freed = False

    def __init__(self, needs_input_grad=()):
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *values):
        """Keep ``values`` (inputs or outputs of ``forward``) for ``backward``, which reads them back
        as :attr:`saved_tensors`. Their version counters are recorded, so modifying one in place before
        backward raises a clear error instead of giving a wrong gradient.
        """
        self._saved = values
        versions = []  # a loop, not a comprehension, whose own frame cost more than the records
        for v in values:
            versions.append((v._version, v._version[0]) if hasattr(v, "_version") else None)
        self._versions = tuple(versions)

    @property
    def saved_tensors(self):
        """The values given to :meth:`save_for_backward`, in order (also ``saved_values``).

        Raises :class:`~torchlight.autograd.errors.AutogradError` when the graph was already freed by an
        earlier ``backward`` (pass ``retain_graph=True`` there) or when a saved tensor was modified in
        place since.
        """
        if self._freed:
            raise AutogradError(
                "Trying to backward through the graph a second time, but its saved values were "
                "already freed. Call .backward(retain_graph=True) the first time if you need to "
                "backpropagate through the same graph twice."
            )
        for i, rec in enumerate(self._versions or ()):
            if rec is not None and rec[0][0] != rec[1]:
                raise AutogradError(
                    f"A value saved for backward (saved value #{i}, of shape "
                    f"{getattr(self._saved[i], 'shape', '?')}) was modified by an in-place operation "
                    f"after it was used (version {rec[1]} -> {rec[0][0]}). Use an out-of-place op "
                    "(e.g. x = x * 2 instead of x.mul_(2)) or .clone() the tensor first."
                )
        return self._saved

    saved_values = saved_tensors

    def release(self):
        """Drop saved values so their memory can be reused (what ``retain_graph=False`` does)."""
        d = self.__dict__
        if len(d) == 1:  # only needs_input_grad (an add, say): nothing to drop
            return
        freed = d.get("_freed", False) or bool(d.get("_saved")) or not d.keys() <= Context._own
        needs = d["needs_input_grad"]
        d.clear()  # back to the class defaults: nothing saved, no versions
        d["needs_input_grad"] = needs
        if freed:
            d["_freed"] = True

    def __getattr__(self, name):
        # Only reached for attributes that are missing: after release() that means "freed".
        if self.__dict__.get("_freed"):
            self.saved_tensors  # noqa: B018 -- raises the explanatory error
        raise AttributeError(name)

    _own = frozenset(("needs_input_grad", "_saved", "_versions", "_freed"))


class _ScratchContext(Context):
    """The context of a forward that nothing records (a backward formula's ops, code under
    ``no_grad``): no backward will read what it saves, so no version counters are taken."""

    def save_for_backward(self, *values):
        self._saved = values


#: ``needs_input_grad`` of an unrecorded op, by its number of inputs
_NOTHING_NEEDED = [(False,) * n for n in range(8)]
#: ``needs_input_grad`` of a recorded op of one variable and one constant
_FIRST_NEEDED = (True, False)


class History:
    """The edge record of a computed variable: which function made it, with which inputs.

    It is also the graph's *node* for that variable. An operation that uses a computed variable
    links to the variable's ``History`` rather than to the variable (leaves are linked directly:
    they receive ``.grad``), so the graph never keeps a computed value's memory alive: it is
    freed as soon as the program drops the variable, and backward still finds everything it
    needs (the chain rule reads only what ``forward`` saved in ``ctx``). To the engine a node
    looks like a variable: it requires grad and is its own ``_history``. A variable that asks
    to keep its gradient (``retain_grad``) registers with its node (:meth:`retain`), which then
    remembers it weakly (``output``) and hands it the gradient while it exists; other nodes
    hold no reference to their variable at all (one object fewer per recorded op).
    """

    __slots__ = ("fn", "ctx", "inputs", "output")

    requires_grad = True  # only variables that require grad get a History

    def __init__(self, fn, ctx, inputs):
        self.fn = fn
        self.ctx = ctx
        self.inputs = inputs
        self.output = None  # a weak reference to the variable that asked to retain its grad

    @property
    def _history(self):
        return self

    def retain(self, var):
        """Remember ``var``, the variable this node computed, so that backward gives it its
        gradient (``accumulate_grad``) as to a leaf."""
        self.output = weakref.ref(var)

    def accumulate_grad(self, g):
        """Engine protocol: the gradient of the variable that asked to retain it (dropped when
        that variable no longer exists)."""
        out = self.output() if self.output is not None else None
        if out is not None:
            out.accumulate_grad(g)

    @property
    def parents(self):
        """The inputs that take part in backpropagation (leaves, and the nodes of computed ones)."""
        return [v for v in self.inputs if getattr(v, "requires_grad", False)]

    def backprop(self, grad):
        """Apply the chain rule one step: pairs (input, dL/dinput) for inputs that need a grad."""
        grads = self.fn.backward(self.ctx, grad)
        if not isinstance(grads, tuple):
            grads = (grads,)
        pairs = []  # a loop: a comprehension's own frame costs more than a node's two pairs
        for v, g in zip(self.inputs, grads):
            if g is not None and getattr(v, "requires_grad", False):
                pairs.append((v, g))
        return pairs


def link_output(out, fn, ctx, inputs):
    """``out``, made by ``fn`` from ``inputs`` with the context ``ctx``, as a node of the graph:
    its :class:`History` set and ``requires_grad`` on (every recorded output is linked here)."""
    out._history = History(fn, ctx, inputs)
    out.requires_grad = True
    return out


class _Nesting:
    """How many ``Function.forward`` calls are running while tracers are installed (an instance
    attribute, written twice per such op: see ``grad_mode._Flag`` for why not a class attribute).
    Without tracers nothing counts: the depth only decides which applies a tracer sees."""

    __slots__ = ("depth",)

    def __init__(self):
        self.depth = 0


class Function:
    """Base class of every differentiable operation (subclass and define forward/backward).

    ``Function.tracers`` is a list of callables ``tracer(fn_class, args, kwargs, output)`` called
    after every top-level ``apply`` (applies nested inside another Function's forward are
    implementation details and are not reported): this is how ``torchlight.jit`` records an
    op tape of any model without the model knowing.
    """

    tracers: list = []
    #: depth > 0 inside some forward, where nested applies are details (counted only while
    #: tracers are installed: the only readers are tracing and replay)
    nesting = _Nesting()
    #: True: ``backward`` may be handed a :class:`~torchlight.autograd.PartialGradient` (the
    #: only gradient of the output was one) instead of its dense form
    partial_grad = False
    #: True: ``forward`` computes its output directly (backend kernels, views) without applying
    #: another Function and without reading the recording switch, so :meth:`apply_binary` and
    #: :meth:`apply_unary` may run it without switching recording off around it
    direct_forward = False

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the output from the inputs; a ``@staticmethod`` taking a :class:`Context` first.

        Runs without recording (inside it no graph is built); save what ``backward`` will need with
        ``ctx.save_for_backward(...)`` or as ``ctx.<attribute>``. Call the operation as
        ``MyFunction.apply(*inputs)``, never ``forward`` directly.
        """
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        r"""The chain-rule step: given ``grad`` = :math:`\partial L/\partial y` for the output ``y``,
        return :math:`\partial L/\partial x_i = \text{grad}\cdot\partial y/\partial x_i` for each input of
        ``forward``, in order (``None`` for an input that needs no gradient, such as an int argument).

        A ``@staticmethod`` taking the ``Context`` that ``forward`` filled. Gradients must have the
        shapes of the inputs.

        >>> from torchlight.autograd import Function
        >>> class Cube(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return grad * 3 * x * x
        >>> x = tl.tensor([1.0, 2.0], requires_grad=True)
        >>> Cube.apply(x).sum().backward()
        >>> x.grad
        tensor([ 3., 12.])
        """
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and, when recording and some input requires grad, link the output."""
        mode = GradMode
        prev: bool | None = mode.enabled
        if Function.tracers:
            return cls._apply_traced(prev, args, kwargs)
        if prev:
            for a in args:  # stops at the first input that requires grad (none: all of them)
                if getattr(a, "requires_grad", False):
                    break
            else:
                prev = None  # recording, but no input requires grad: nothing to link
        if prev:
            # one loop for both lists (two comprehensions cost more on every op); a computed
            # input is linked through its node, so the graph does not hold its memory
            flags, edges = [], []
            for x in args:
                if getattr(x, "requires_grad", False):
                    flags.append(True)
                    edges.append(x._history or x)
                else:
                    flags.append(False)
                    edges.append(x)
            ctx = Context(tuple(flags))
            if cls.direct_forward:
                out = cls.forward(ctx, *args, **kwargs)
            else:
                mode.enabled = False  # ops inside forward are details, never recorded
                try:
                    out = cls.forward(ctx, *args, **kwargs)
                finally:
                    mode.enabled = True
            return link_output(out, cls, ctx, tuple(edges))
        # nothing records this op (a backward formula, code under no_grad, constants): it is its
        # forward alone, with a scratch context (no node, nothing to report)
        n = len(args)
        scratch = _ScratchContext(_NOTHING_NEEDED[n] if n < 8 else (False,) * n)
        if prev is None and not cls.direct_forward:
            mode.enabled = False
            try:
                return cls.forward(scratch, *args, **kwargs)
            finally:
                mode.enabled = True
        return cls.forward(scratch, *args, **kwargs)

    # apply_binary and apply_unary are apply() written out for the two commonest signatures of
    # the elementwise ops: the generic loops over ``args`` cost as much as the op itself on a
    # small tensor, so these two read their arguments by name instead (same graph, same result)
    @classmethod
    def apply_binary(cls, a, b):
        """:meth:`apply` of a Function of two variables (``a + b``, ``a * b``...) in fewer steps:
        the same output, graph and errors. Functions that are not ``direct_forward`` and calls
        made while tracers are installed take :meth:`apply` itself.

        >>> from torchlight.tensor.functions.pointwise import Add
        >>> a = tl.tensor([1.0], requires_grad=True)
        >>> Add.apply_binary(a, tl.tensor([2.0]))
        tensor([3.], grad_fn=<AddBackward>)
        """
        if not cls.direct_forward or Function.tracers:
            return cls.apply(a, b)
        ra, rb = a.requires_grad, b.requires_grad
        if (ra or rb) and GradMode.enabled:
            ctx = Context((ra, rb))
            return link_output(cls.forward(ctx, a, b), cls, ctx, (a._history or a, b._history or b))
        return cls.forward(_ScratchContext(_NOTHING_NEEDED[2]), a, b)

    @classmethod
    def apply_unary(cls, x, constant):
        """:meth:`apply` of a Function of one variable ``x`` and one constant (the elementwise
        map ops: ``Unary.apply_unary(x, "tanh")``) in fewer steps, as :meth:`apply_binary`.

        >>> from torchlight.tensor.functions.pointwise import Unary
        >>> Unary.apply_unary(tl.tensor([0.0], requires_grad=True), "exp")
        tensor([1.], grad_fn=<UnaryBackward>)
        """
        if not cls.direct_forward or Function.tracers:
            return cls.apply(x, constant)
        if x.requires_grad and GradMode.enabled:
            ctx = Context(_FIRST_NEEDED)
            return link_output(cls.forward(ctx, x, constant), cls, ctx, (x._history or x, constant))
        return cls.forward(_ScratchContext(_NOTHING_NEEDED[2]), x, constant)

    @classmethod
    def _apply_traced(cls, prev, args, kwargs):
        """:meth:`apply` while ``tracers`` are installed: the same, and a top-level op (not one
        nested inside another Function's forward) is reported to every tracer."""
        nesting = Function.nesting
        needs = edges = None
        if prev:
            for a in args:
                if getattr(a, "requires_grad", False):
                    needs = tuple([getattr(x, "requires_grad", False) for x in args])
                    edges = tuple([getattr(x, "_history", None) or x for x in args])
                    break
        tracing = not nesting.depth
        GradMode.enabled = False
        nesting.depth += 1
        try:
            ctx = Context(needs or (False,) * len(args))
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            GradMode.enabled = prev
            nesting.depth -= 1
        if edges is not None:
            link_output(out, cls, ctx, edges)
        if tracing:
            for tracer in Function.tracers:
                tracer(cls, args, kwargs, out)
        return out
