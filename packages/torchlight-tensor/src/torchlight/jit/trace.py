"""``trace(fn_or_module, *example_inputs)``: run the function once and record every op it applies.

The recorder is a tracer in ``Function.tracers`` (the autograd engine calls it after every
*top-level* ``Function.apply``; applies nested inside another op's forward are that op's business
and are not recorded). It maps every tensor it sees to a slot of the tape:

* an example input → an ``input`` slot; the output of a recorded op → a ``node`` slot;
* a tensor that shares its ``TensorData`` with one of those (``x.detach()``, ``x.data``) → the
  same slot (detaching changes nothing for a replay, which builds no graph anyway);
* any other tensor → a ``param`` slot (a parameter/buffer of the traced module, or a leaf that
  requires grad) or a ``const`` slot, both holding a *reference* to the tensor object.

A tensor that shares *storage* with a traced value but was made without a recorded op (a view
built by hand) would replay stale data, so tracing refuses it. So does an in-place modification
of a traced value (``h.add_(b)``): replays would not repeat it.

Data-dependent Python control flow is not captured: ``if x.sum() > 0:`` is evaluated once, while
tracing, and the tape replays the branch that was taken.
"""

from torchlight.autograd.function import Function
from torchlight.autograd.grad_mode import GradMode

from .tape import GraphTape, Node, Slot, TraceError, Value, _collect_slots, _has_slot, op_name

__all__ = ["trace"]


def _tensor_class():
    from torchlight.tensor.tensor import Tensor

    return Tensor


class _Recorder:
    def __init__(self, params):
        self.Tensor = _tensor_class()
        self.values = []
        self.nodes = []
        self.by_id = {}  # id(tensor) -> slot
        self.by_td = {}  # id(TensorData) -> slot (aliases: detach)
        self.by_storage = {}  # id(storage) -> slot of a traced (input/node) value
        self.keep = []  # keeps every seen tensor alive so ids stay unique during the trace
        self.versions = []  # (tensor, version when seen) to detect in-place changes
        self.params = params  # id -> name of known module parameters/buffers
        self.backend = None

    def _new_value(self, t, kind, **kw):
        v = Value(len(self.values), kind, t.shape, t.dtype, **kw)
        self.values.append(v)
        self.by_id[id(t)] = v.index
        self.by_td[id(t._td)] = v.index
        if kind in ("input", "node"):
            self.by_storage.setdefault(id(t._td.storage), v.index)
        self.keep.append(t)
        self.versions.append((t, t._version[0]))
        return v.index

    def add_input(self, t, position):
        if id(t) in self.by_id:
            raise TraceError(
                f"example input #{position} is the same tensor as an earlier input; pass distinct tensors"
            )
        self.backend = self.backend or t.backend
        return self._new_value(t, "input", position=position)

    def slot_of(self, t):
        s = self.by_id.get(id(t))
        if s is None:
            s = self.by_td.get(id(t._td))
            if s is not None:  # detach()/data: an alias of a traced value
                self.by_id[id(t)] = s
                self.keep.append(t)
        if s is None:
            name = self.params.get(id(t))
            if name is None and t.requires_grad and t._history is None:
                name = ""
            if name is None:
                src = self.by_storage.get(id(t._td.storage))
                if src is not None:
                    raise TraceError(
                        f"a tensor of shape {t.shape} shares memory with traced value %{src} but was not "
                        "produced by a recorded op (a view made by hand, or an untraced in-place write); "
                        "a replay would use stale data. Use tensor methods (view, reshape, indexing) "
                        "instead of building views from raw storage."
                    )
                s = self._new_value(t, "const", tensor=t)
            else:
                s = self._new_value(t, "param", tensor=t, name=name or None)
        return s

    def encode(self, a, slots, shapes):
        if isinstance(a, self.Tensor):
            s = self.slot_of(a)
            slots.append(s)
            shapes.append(a.shape)
            return Slot(s)
        if isinstance(a, (tuple, list)) and any(_contains_tensor(x, self.Tensor) for x in a):
            enc = [self.encode(x, slots, shapes) for x in a]
            return tuple(enc) if isinstance(a, tuple) else enc
        return a

    def __call__(self, fn, args, kwargs, out):
        slots, shapes = [], []
        enc = tuple(self.encode(a, slots, shapes) for a in args)
        enc_kw = {k: self.encode(v, slots, shapes) for k, v in kwargs.items()} if kwargs else {}
        for t in (a for a in args if isinstance(a, self.Tensor)):
            self.versions.append((t, t._version[0]))
        if not isinstance(out, self.Tensor):
            raise TraceError(
                f"{fn.__name__} returned a {type(out).__name__}; only tensor-valued ops can be traced"
            )
        nested = any(isinstance(a, (tuple, list)) and _has_slot(a) for a in enc) or bool(enc_kw)
        index = len(self.nodes)
        out_slot = self._new_value(out, "node", node=index)
        self.nodes.append(
            Node(
                index,
                fn,
                op_name(fn, args),
                enc,
                enc_kw,
                tuple(slots),
                out_slot,
                out.shape,
                out.dtype,
                nested,
                tuple(shapes),
            )
        )

    def encode_output(self, tree):
        T = self.Tensor
        if isinstance(tree, T):
            return Slot(self.slot_of(tree))
        if isinstance(tree, tuple):
            items = [self.encode_output(x) for x in tree]
            return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
        if isinstance(tree, list):
            return [self.encode_output(x) for x in tree]
        if isinstance(tree, dict):
            return {k: self.encode_output(v) for k, v in tree.items()}
        return tree


def _contains_tensor(a, T):
    if isinstance(a, T):
        return True
    if isinstance(a, (tuple, list)):
        return any(_contains_tensor(x, T) for x in a)
    return False


def _module_params(fn):
    params = {}
    for attr in ("named_parameters", "named_buffers"):
        getter = getattr(fn, attr, None)
        if callable(getter):
            try:
                for name, p in getter():
                    if p is not None:
                        params.setdefault(id(p), name)
            except TypeError:
                pass
    if not params and callable(getattr(fn, "parameters", None)):
        for k, p in enumerate(fn.parameters()):
            params.setdefault(id(p), f"param{k}")
    return params


def _warn_if_training(module):
    modules = getattr(module, "modules", None)
    if not getattr(module, "training", False) or not callable(modules):
        return
    try:
        kinds = {type(m).__name__ for m in modules() if getattr(m, "training", False)}
    except TypeError:
        return
    odd = sorted(k for k in kinds if "Dropout" in k or "BatchNorm" in k)
    if odd:
        import warnings

        warnings.warn(
            f"tracing a module in training mode that contains {', '.join(odd)}: the dropout masks "
            "drawn and the running statistics updated while tracing are not replayed; call "
            ".eval() before tracing",
            stacklevel=3,
        )


def trace(fn_or_module, *example_inputs):
    """Record the forward pass of ``fn_or_module(*example_inputs)`` as a :class:`GraphTape`.

    ``example_inputs`` are the tensors that change from call to call; everything else the
    function touches is captured: module parameters and buffers (and any leaf tensor that requires
    grad) by reference, so replays see optimizer updates; other tensors (scalar constants,
    masks) by reference too. Non-tensor example inputs are baked into the tape.

    The tape replays the ops that ran, nothing else: **data-dependent Python control flow is not
    captured** — an ``if`` on a tensor value, a loop whose length depends on data, a Python number
    computed from a tensor are all evaluated once, while tracing, and replayed as they were.
    Trace modules in ``eval()`` mode (a dropout mask drawn while tracing would be replayed).

    Replays may change sizes where the recorded ops allow it (typically the batch size): trace
    with sizes that are distinct from the other dimensions (a batch of 3 rather than one equal to
    the hidden size), because a changed size is recognised by its value.

    >>> import torchlight.jit
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    >>> tape = tl.jit.trace(net, tl.randn(3, 4))
    >>> x = tl.randn(5, 4)                 # another batch size replays too
    >>> bool((tape(x) - net(x)).abs().max() < 1e-6)
    True
    """
    Tensor = _tensor_class()
    _warn_if_training(fn_or_module)
    rec = _Recorder(_module_params(fn_or_module))
    call_args = []
    for k, x in enumerate(example_inputs):
        if isinstance(x, Tensor):
            rec.add_input(x, k)
        call_args.append(x)
    if Function.nesting.depth:
        raise TraceError("trace() cannot be called from inside a Function's forward")
    prev = GradMode.enabled
    GradMode.enabled = False
    Function.tracers.append(rec)
    try:
        result = fn_or_module(*call_args)
    finally:
        Function.tracers.remove(rec)
        GradMode.enabled = prev
    outputs = rec.encode_output(result)
    for t, v in rec.versions:
        if t._version[0] != v:
            raise TraceError(
                f"a traced tensor of shape {t.shape} was modified in place during the trace (version "
                f"{v} -> {t._version[0]}); in-place ops are not recorded, so a replay would differ. "
                "Use out-of-place ops (x = x + y instead of x.add_(y)) in traced code."
            )
    values, nodes, outputs = _prune(rec.values, rec.nodes, outputs)
    name = getattr(fn_or_module, "__name__", None) or type(fn_or_module).__name__
    tape = GraphTape(
        values, nodes, outputs, name=name, pruned=len(rec.nodes) - len(nodes), backend=rec.backend
    )
    tape.n_args = len(example_inputs)
    tape.static_args = {k: x for k, x in enumerate(example_inputs) if not isinstance(x, Tensor)}
    return tape


def _prune(values, nodes, outputs):
    """Drop ops whose results never reach an output, and renumber slots densely."""
    out_slots = []
    _collect_slots(outputs, out_slots)
    live_slots = set(out_slots)
    live_nodes = set()
    for node in reversed(nodes):
        if node.out in live_slots:
            live_nodes.add(node.index)
            live_slots.update(node.inputs)
    keep_values = [v for v in values if v.kind == "input" or v.index in live_slots]
    remap = {v.index: k for k, v in enumerate(keep_values)}
    node_remap = {}
    new_nodes = []
    for node in nodes:
        if node.index not in live_nodes:
            continue
        node_remap[node.index] = len(new_nodes)
        new_nodes.append(
            Node(
                len(new_nodes),
                node.fn,
                node.op,
                _remap(node.args, remap),
                {k: _remap(v, remap) for k, v in node.kwargs.items()},
                tuple(remap[s] for s in node.inputs),
                remap[node.out],
                node.shape,
                node.dtype,
                node.nested,
                node.in_shapes,
            )
        )
    new_values = []
    for k, v in enumerate(keep_values):
        nv = Value(
            k,
            v.kind,
            v.shape,
            v.dtype,
            tensor=v.tensor,
            node=node_remap.get(v.node) if v.node is not None else None,
            position=v.position,
            name=v.name,
        )
        new_values.append(nv)
    return new_values, new_nodes, _remap(outputs, remap)


def _remap(a, remap):
    if isinstance(a, Slot):
        return Slot(remap[a.index])
    if isinstance(a, tuple):
        items = [_remap(x, remap) for x in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        return [_remap(x, remap) for x in a]
    if isinstance(a, dict):
        return {k: _remap(v, remap) for k, v in a.items()}
    return a
