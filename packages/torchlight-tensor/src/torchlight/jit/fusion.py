"""Fusion: chains of elementwise ops on a tape run as one generated kernel.

Eager elementwise code such as ``0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x**3)))`` runs
nine separate ops, each reading and writing a full array. On the tape those ops form a connected
group whose intermediate results nobody else reads; fusion compiles the group into **one** loop
that reads each input once and writes only the values that leave the group.

Grouping (:func:`plan`): an elementwise node (``add sub mul div pow maximum minimum`` and the
named unary maps) joins the group of each elementwise node that produced one of its inputs. A
group is fused when it has at least two ops, all its ops have the same traced output shape and a
floating dtype, its outside inputs have that shape or a single element (scalar constants), and no
op outside the group needs one of its results before the group's last op. Everything else runs
op by op.

Compilers (:func:`get_compiler`): a backend that lists the ``"compile"`` capability provides
``compile_elementwise(chain)`` (signature in ``torchlight.tensor.backend.protocol``): given an
:class:`ElementwiseChain` it returns ``kernel(input_views, output_views)`` (``TensorData`` views:
inputs of the full shape or one element, outputs contiguous of the full shape), or None to
decline. ``fuse=<backend name>`` borrows another backend's compiler when both keep their storage
in host memory; a backend without the capability replays op by op.

At replay time a fused group checks its actual inputs (contiguous, same shape or one element,
the traced dtype); when they do not qualify it simply runs its ops one by one, so fused and
unfused replays always agree.
"""

from torchlight.tensor.backend.protocol import MAP_OPS, host_memory

__all__ = ["FUSABLE_MAP", "FUSABLE_ZIP", "ElementwiseChain", "FusedGroup", "plan", "get_compiler"]

FUSABLE_ZIP = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
"""Binary ops an :class:`ElementwiseChain` may contain (PyTorch semantics, NaN-propagating max/min)."""
FUSABLE_MAP = tuple(op for op in MAP_OPS if op not in ("sign", "logical_not"))
"""Unary ops an :class:`ElementwiseChain` may contain: the float ops of ``MAP_OPS``."""
_ZIP_CLASSES = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Pow": "pow",
    "Maximum": "maximum",
    "Minimum": "minimum",
}


def elementwise_op(node):
    """The backend op name of an elementwise node, or None when the node is not fusable."""
    name = node.fn.__name__
    if name in _ZIP_CLASSES and node.fn.__module__.endswith("pointwise"):
        return _ZIP_CLASSES[name]
    if name == "Unary" and node.args[1] in FUSABLE_MAP:
        return node.args[1]
    return None


class ElementwiseChain:
    """What a compiler sees: ``ops`` is a tuple of ``(op, operands)`` in execution order, each
    operand ``("in", k)`` (the k-th input) or ``("tmp", j)`` (the result of op j); ``scalar[k]``
    says input k has one element (broadcast); ``outputs`` are the op indices whose results are
    written out; ``dtype`` the common floating dtype. ``key`` identifies it for caching."""

    __slots__ = ("ops", "n_inputs", "scalar", "outputs", "dtype", "key")

    def __init__(self, ops, n_inputs, scalar, outputs, dtype):
        self.ops = tuple(ops)
        self.n_inputs = n_inputs
        self.scalar = tuple(scalar)
        self.outputs = tuple(outputs)
        self.dtype = dtype
        self.key = (self.ops, n_inputs, self.scalar, self.outputs, dtype.name)

    def __repr__(self):
        return f"ElementwiseChain({' -> '.join(op for op, _ in self.ops)}; {self.n_inputs} inputs)"


class _Single:
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def run(self, vals, sizes, compiler):
        from .replay import run_node

        run_node(self.node, vals, sizes)


class FusedGroup:
    """A group of elementwise nodes of a tape, run as one kernel when its inputs qualify."""

    def __init__(self, tape, members, ext_inputs, outputs, ops):
        self.tape = tape
        self.members = [tape.nodes[i] for i in members]
        self.nodes = list(members)
        self.ext_inputs = ext_inputs  # slots read from outside the group
        self.outputs = outputs  # (tmp index, slot) written out
        self.ops = ops
        self.dtype = self.members[0].dtype
        self._chains = {}

    def chain(self, scalar):
        """The :class:`ElementwiseChain` of this group's ops for inputs whose scalar pattern is
        ``scalar`` (which inputs are 0-d), built once and cached.
        """
        c = self._chains.get(scalar)
        if c is None:
            c = self._chains[scalar] = ElementwiseChain(
                self.ops, len(self.ext_inputs), scalar, [t for t, _ in self.outputs], self.dtype
            )
        return c

    def run(self, vals, sizes, compiler):
        """Run the group on the values in ``vals``: one compiled kernel when the inputs qualify (same
        shape and dtype, contiguous) and ``compiler`` offers one, otherwise op by op.
        """
        ins = [vals[s] for s in self.ext_inputs]
        shape, scalar = _qualify(ins, self.dtype)
        kernel = None
        if shape is not None:
            kernel = compiler.kernel(self.chain(scalar))
        if kernel is None:  # inputs do not qualify (or the compiler declined): op by op
            from .replay import run_node

            for node in self.members:
                run_node(node, vals, sizes)
            return
        outs = kernel(ins, shape)
        for (_, slot), out in zip(self.outputs, outs):
            vals[slot] = out

    def __repr__(self):
        return f"FusedGroup(ops {self.nodes}: {' '.join(op for op, _ in self.ops)})"


def _qualify(ins, dtype):
    """(full shape, scalar flags) when every input is contiguous of one shape or has 1 element."""
    shape = None
    for t in ins:
        if t.dtype is not dtype:
            return None, None
        if t._td.size != 1:
            if shape is None:
                shape = t._td.shape
            elif t._td.shape != shape:
                return None, None
            if not t._td.is_contiguous():
                return None, None
    if shape is None:
        return None, None
    for t in ins:
        if t._td.size == 1 and len(t._td.shape) > len(shape):
            return None, None
    return shape, tuple(t._td.size == 1 and t._td.shape != shape for t in ins)


def plan(tape):
    """The replay steps of ``tape``: single nodes and :class:`FusedGroup` s (cached on the tape)."""
    cached = tape._plans.get("fusion")
    if cached is not None:
        return cached
    nodes = tape.nodes
    ops = [elementwise_op(n) for n in nodes]
    parent = list(range(len(nodes)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for n in nodes:
        if ops[n.index] is None:
            continue
        for s in n.inputs:
            p = tape.values[s].node
            if p is not None and ops[p] is not None:
                parent[find(n.index)] = find(p)
    groups = {}
    for n in nodes:
        if ops[n.index] is not None:
            groups.setdefault(find(n.index), []).append(n.index)
    users = tape.consumers()
    out_slots = set(tape.output_slots())
    fused_at = {}  # last member index -> FusedGroup
    in_group = set()
    for members in groups.values():
        g = _make_group(tape, sorted(members), ops, users, out_slots)
        if g is not None:
            fused_at[g.nodes[-1]] = g
            in_group.update(g.nodes)
    steps = []
    for n in nodes:
        if n.index in fused_at:
            steps.append(fused_at[n.index])
        elif n.index not in in_group:
            steps.append(_Single(n))
    tape._plans["fusion"] = steps
    return steps


def _make_group(tape, members, ops, users, out_slots):
    if len(members) < 2:
        return None
    nodes = [tape.nodes[i] for i in members]
    shape, dtype = nodes[0].shape, nodes[0].dtype
    if not dtype.is_floating_point:
        return None
    if any(n.shape != shape or n.dtype is not dtype for n in nodes):
        return None
    member_set = set(members)
    tmp_of = {}  # slot -> tmp index
    ext = []  # external input slots
    prog = []
    for j, n in enumerate(nodes):
        operands = []
        for s in n.inputs:
            if s in tmp_of:
                operands.append(("tmp", tmp_of[s]))
                continue
            v = tape.values[s]
            numel = 1
            for d in v.shape:
                numel *= d
            if v.dtype is not dtype or (
                v.shape != shape and (numel != 1 or len(v.shape) > len(shape))
            ):
                return None
            if s not in ext:
                ext.append(s)
            operands.append(("in", ext.index(s)))
        prog.append((ops[n.index], tuple(operands)))
        tmp_of[n.out] = j
    last = members[-1]
    outputs = []
    for j, n in enumerate(nodes):
        outside = [u for u in users.get(n.out, ()) if u not in member_set]
        if any(u < last for u in outside):
            return None  # someone outside needs this result before the group would run
        if outside or n.out in out_slots:
            outputs.append((j, n.out))
    if not outputs:
        return None
    return FusedGroup(tape, members, ext, outputs, prog)


# --- compilers ---------------------------------------------------------------------------------
def _compiling(backend):
    return "compile" in getattr(backend, "capabilities", ()) and hasattr(
        backend, "compile_elementwise"
    )


def get_compiler(backend, fuse):
    """The compiler for ``backend`` under the replay's ``fuse`` option (None: op by op).

    ``None``/``True``: the backend's own ``"compile"`` capability, if it has one. A backend name:
    that backend's compiler, which must list ``"compile"``; when it is not ``backend`` itself it is
    used only if both keep their storage in host memory (its kernels then read and write the
    tape's storage directly), else the replay runs op by op.
    """
    if fuse is False or backend is None:
        return None
    if not isinstance(fuse, str):
        return BackendCompiler(backend) if _compiling(backend) else None
    from torchlight.tensor.backend.registry import get_backend
    from torchlight.tensor.errors import TorchlightError

    from .tape import TraceError

    try:
        compiler = get_backend(fuse)
    except TorchlightError as exc:
        raise TraceError(f"fuse={fuse!r} names a backend that cannot be used: {exc}") from exc
    if not _compiling(compiler):
        raise TraceError(
            f"fuse={fuse!r}: backend {compiler.name!r} has no 'compile' capability; "
            "use fuse=None (the tape's own backend) or fuse=False"
        )
    if compiler is not backend and not (host_memory(compiler) and host_memory(backend)):
        return None  # its kernels cannot reach the tape's device memory: op by op
    return BackendCompiler(compiler, backend)


class BackendCompiler:
    """Runs chains through a backend's ``compile_elementwise(chain)`` (the ``"compile"``
    capability); outputs are allocated on ``target`` (default: that backend)."""

    _cache: dict = {}  # (id(backend), chain.key) -> the backend's kernel (None: declined)

    def __init__(self, backend, target=None):
        self.backend = backend
        self.target = backend if target is None else target

    def kernel(self, chain):
        """``run(inputs, shape) -> outputs`` for ``chain`` (tensors), or None when declined."""
        backend, target = self.backend, self.target
        key = (id(backend), chain.key)
        if key not in self._cache:
            self._cache[key] = backend.compile_elementwise(chain)
        fn = self._cache[key]
        if fn is None:
            return None

        def run(ins, shape):
            from torchlight.tensor.dispatch import alloc

            outs = [alloc(shape, chain.dtype, target, ins[0]) for _ in chain.outputs]
            fn([t._td for t in ins], [o._td for o in outs])
            return outs

        return run
