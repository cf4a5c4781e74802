"""``GraphTape``: a recorded forward pass, as a flat list of op nodes over numbered value slots.

A tape holds *values* and *nodes*. Every value has a slot number:

* ``input`` slots: the tensors passed to :func:`~torchlight.jit.trace` (replaced on every replay),
* ``param`` slots: parameters and buffers of the traced module, or any leaf tensor that requires
  grad — held **by reference** (the tensor object, never a copy), so a replay after an optimizer
  step sees the new weights,
* ``const`` slots: other tensors the function used that no recorded op produced (scalar
  constants such as the ``0.5`` in ``0.5 * x``, masks built from Python data); also by reference,
* ``node`` slots: the output of one recorded op.

A node is one top-level ``Function.apply``: the Function class, its arguments with every tensor
replaced by a :class:`Slot` (constant arguments such as dims, shapes and op names kept as they
were), and the traced output shape and dtype. Replaying a node calls
``fn.forward(ctx, *args)`` (a fresh ``Context``) with the slots filled in (see :mod:`torchlight.jit.replay`).

What a tape does **not** capture: Python control flow that depends on tensor values (a tape
replays the branch it saw), Python numbers computed from tensors or shapes (``x.shape[0]`` in an
expression is baked in as a number), and randomness drawn while tracing (a dropout mask is
replayed as the same constant). Trace modules in ``eval()`` mode.
"""

from collections import Counter

from torchlight.autograd.errors import TorchlightError

__all__ = ["TraceError", "Slot", "Value", "Node", "GraphTape", "op_name"]


class TraceError(TorchlightError, RuntimeError):
    """A function cannot be traced, or a tape cannot replay the inputs it was given."""


class Slot:
    """A reference to a value of the tape (an argument template entry)."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"%{self.index}"


class Value:
    """What the tape knows about one slot: where it comes from, its traced shape and dtype."""

    __slots__ = ("index", "kind", "shape", "dtype", "tensor", "node", "position", "name")

    def __init__(self, index, kind, shape, dtype, tensor=None, node=None, position=None, name=None):
        self.index = index
        self.kind = kind  # "input" | "param" | "const" | "node"
        self.shape = shape
        self.dtype = dtype
        self.tensor = tensor  # the referenced tensor object for param/const slots
        self.node = node  # producing node index for node slots
        self.position = position  # input position for input slots
        self.name = name  # parameter name when known

    def __repr__(self):
        return f"Value(%{self.index} {self.kind} {self.shape} {self.dtype.name})"


class Node:
    """One recorded op: ``out = fn.forward(ctx, *args, **kwargs)`` with slots substituted."""

    __slots__ = (
        "index",
        "fn",
        "op",
        "args",
        "kwargs",
        "inputs",
        "out",
        "shape",
        "dtype",
        "nested",
        "top_slots",
        "in_shapes",
    )

    def __init__(self, index, fn, op, args, kwargs, inputs, out, shape, dtype, nested, in_shapes):
        self.index = index
        self.fn = fn  # the Function subclass
        self.op = op  # readable op name ("matmul", "add", "relu", "view", ...)
        self.args = args  # template: tensors replaced by Slot
        self.kwargs = kwargs
        self.inputs = inputs  # slot numbers of the tensor arguments, in order
        self.out = out  # slot number of the output
        self.shape = shape  # traced output shape
        self.dtype = dtype
        self.nested = nested  # True when some Slot sits inside a tuple/list argument
        self.in_shapes = in_shapes  # traced shapes of the tensor arguments
        # fast path for replay: positions of top-level Slot arguments
        self.top_slots = tuple((k, a.index) for k, a in enumerate(args) if isinstance(a, Slot))

    def constants(self):
        """The non-tensor arguments (dims, shapes, op names, ...)."""
        return [a for a in self.args if not _has_slot(a)]

    def __repr__(self):
        args = ", ".join(_fmt_arg(a) for a in self.args)
        return f"%{self.out} = {self.op}({args}) -> {self.shape} {self.dtype.name}"


def _has_slot(a):
    if isinstance(a, Slot):
        return True
    if isinstance(a, (tuple, list)):
        return any(_has_slot(x) for x in a)
    return False


def _fmt_arg(a):
    if isinstance(a, Slot):
        return repr(a)
    if isinstance(a, tuple):
        return "(" + ", ".join(_fmt_arg(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt_arg(x) for x in a) + "]"
    if isinstance(a, type):
        return a.__name__
    r = repr(a)
    return r if len(r) <= 40 else r[:37] + "..."


# Op names: Functions that carry a named op as an argument are named by it.
_BY_ARG = {"Unary": 1, "Compare": 2, "MapNoGrad": 1}
_BY_CLASS = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Pow": "pow",
    "Maximum": "maximum",
    "Minimum": "minimum",
    "MatMul": "matmul",
    "View": "view",
    "Permute": "permute",
    "Expand": "expand",
    "Unfold": "unfold",
    "WindowsView": "windows",
    "WindowMax": "window_max",
    "WindowSum": "window_sum",
    "Cat": "cat",
    "Roll": "roll",
    "Pad": "pad",
    "Sum": "sum",
    "Mean": "mean",
    "Prod": "prod",
    "MaxDim": "max_dim",
    "LayerNorm": "layer_norm",
    "BasicIndex": "getitem",
    "AdvancedIndex": "index",
    "IndexSelect": "index_select",
    "Gather": "gather",
    "ScatterAdd": "scatter_add",
    "MaskedFill": "masked_fill",
    "Where": "where",
    "Clamp": "clamp",
    "Cast": "cast",
    "CastNoGrad": "cast",
    "_Clone": "clone",
    "_Move": "to_device",
}


def op_name(fn, args):
    """A readable name for a recorded op (``relu`` rather than ``Unary``)."""
    name = fn.__name__
    k = _BY_ARG.get(name)
    if k is not None and len(args) > k and isinstance(args[k], str):
        return args[k]
    if name == "AMax":
        return "amax" if args[3] == "max" else "amin"
    if name == "Softmax":
        return "log_softmax" if args[2] else "softmax"
    if name == "Restride":
        return args[1]
    if name == "ReduceNoGrad":
        op = args[1]
        return op if op.startswith("arg") else f"{op}_nograd"
    return _BY_CLASS.get(name) or name.lstrip("_").lower()


class GraphTape:
    """A traced forward pass: call it like the function (``tape(*inputs)``) to replay it.

    Attributes: ``nodes`` (list of :class:`Node`), ``values`` (list of :class:`Value`),
    ``inputs`` / ``parameters`` / ``constants`` (the Values of those kinds), ``outputs`` (the
    output structure with :class:`Slot` placeholders). See :mod:`torchlight.jit` for what a tape
    cannot capture (data-dependent control flow).
    """

    def __init__(self, values, nodes, outputs, name="fn", pruned=0, backend=None):
        self.values = values
        self.nodes = nodes
        self.outputs = outputs
        self.name = name
        self.pruned = pruned  # recorded ops that did not contribute to the outputs
        self.backend = backend
        self.fuse = None  # default for __call__: None = fuse when the backend can compile
        self.n_args = sum(1 for v in values if v.kind == "input")  # positional arguments
        self.static_args = {}  # position -> non-tensor example argument (baked in)
        self._plans = {}

    # --- structure -----------------------------------------------------------------------------
    @property
    def inputs(self):
        """The tape's input values (one per argument of the traced call), in order."""
        return [v for v in self.values if v.kind == "input"]

    @property
    def parameters(self):
        """The values the tape reads from the model's parameters (and buffers) at replay time."""
        return [v for v in self.values if v.kind == "param"]

    @property
    def constants(self):
        """The constant tensors captured while tracing (created inside the model, not inputs or
        parameters).
        """
        return [v for v in self.values if v.kind == "const"]

    def output_slots(self):
        """The value slots that hold the traced call's outputs, flattened in order."""
        out = []
        _collect_slots(self.outputs, out)
        return out

    def consumers(self):
        """slot -> list of node indices that read it."""
        users = {}
        for node in self.nodes:
            for s in node.inputs:
                users.setdefault(s, []).append(node.index)
        return users

    # --- replay --------------------------------------------------------------------------------
    def __call__(self, *inputs):
        return self.replay(*inputs, fuse=self.fuse)

    def replay(self, *inputs, fuse=None):
        """Run the recorded ops on new inputs under no_grad and return the outputs.

        ``fuse``: ``None`` (or ``True``) fuses elementwise chains when the tape's backend offers
        a compiler (the ``compile`` capability), ``False`` runs op by op, a backend name uses
        that backend's compiler for tensors of any host-memory backend (see
        :func:`torchlight.jit.fusion.get_compiler`).
        """
        from .replay import replay

        return replay(self, inputs, fuse)

    # --- inspection ----------------------------------------------------------------------------
    def count_ops(self) -> Counter:
        """A Counter of op names (``{'matmul': 2, 'add': 2, 'relu': 1, ...}``)."""
        return Counter(node.op for node in self.nodes)

    def summary(self, fuse=False) -> str:
        """A readable table of the tape: one row per op with its inputs, output shape, FLOPs and bytes
        (``fuse=True`` adds which fused group each op belongs to).

        >>> import torchlight.jit
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        >>> print(tl.jit.trace(net, tl.randn(3, 4)).summary())  # doctest: +ELLIPSIS
        GraphTape Sequential: inputs in0(3, 4) float32; 2 parameter tensors (40 values)
        ...
        """
        from .summary import summary

        return summary(self, fuse=fuse)

    def to_dot(self) -> str:
        """The tape as Graphviz ``digraph`` text (inputs, parameters, ops with their output shapes,
        outputs); render it with ``dot -Tsvg``.
        """
        from .summary import to_dot

        return to_dot(self)

    def fusion_groups(self):
        """The elementwise chains that fusion would compile (lists of node indices)."""
        from .fusion import plan

        return [step.nodes for step in plan(self) if hasattr(step, "nodes")]

    def __len__(self):
        return len(self.nodes)

    def __repr__(self):
        lines = [
            f"GraphTape({self.name}: {len(self.inputs)} inputs, {len(self.parameters)} parameters, "
            f"{len(self.constants)} constants, {len(self.nodes)} ops)"
        ]
        for v in self.values:
            if v.kind != "node":
                label = f" {v.name}" if v.name else ""
                lines.append(f"  %{v.index} = {v.kind}{label} {v.shape} {v.dtype.name}")
        lines += [f"  {n!r}" for n in self.nodes]
        lines.append(
            f"  return {_fmt_arg(self.outputs) if not isinstance(self.outputs, dict) else self.outputs}"
        )
        return "\n".join(lines)


def _collect_slots(tree, out):
    if isinstance(tree, Slot):
        out.append(tree.index)
    elif isinstance(tree, (tuple, list)):
        for x in tree:
            _collect_slots(x, out)
    elif isinstance(tree, dict):
        for x in tree.values():
            _collect_slots(x, out)
