"""``export(model, args, f)``: trace a model and write the tape as a standard ONNX graph.

The exporter is the jit tracer plus a translation table: :func:`torchlight.jit.trace` records
every op the model applies to ``args`` (a :class:`~torchlight.jit.GraphTape`), and each tape node
becomes one or a few ONNX nodes (:mod:`torchlight.onnx.ops`). Parameters and buffers become
initializers under their module names; other tensors the model used (scalar constants, masks)
become initializers too.

What a tape cannot capture, an exported graph cannot contain: Python control flow that depends
on tensor values, loops whose trip count depends on the data, and numbers computed from tensors
(``x.numpy()`` inside ``forward``) are evaluated once, while tracing, and baked in.
"""

from .errors import OnnxExportError
from .graph import GraphBuilder, Value, onnx_dtype
from .ops import translate

__all__ = ["export"]

DEFAULT_OPSET = 17  # LayerNormalization is a single node from opset 17 (PyTorch's default too)


def _import_onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError(
            "torchlight.onnx.export needs the onnx package: pip install onnx "
            "(or pip install 'torchlight-tensor[onnx]')"
        ) from None
    return onnx


def export(
    model,
    args,
    f=None,
    *,
    input_names=None,
    output_names=None,
    dynamic_axes=None,
    opset_version=None,
    do_constant_folding=True,
    verbose=False,
):
    """Export ``model(*args)`` to ONNX, written to ``f`` (a path or a binary file object).

    ``model`` is a :class:`torchlight.nn.Module` or any function of tensors; ``args`` a tensor or
    a tuple of example arguments (non-tensor arguments are baked into the graph). The model runs
    once, in ``eval()`` mode (restored afterwards), and every op it applies is recorded.

    ``input_names`` / ``output_names`` name the graph's inputs and outputs (default ``input``,
    ``output``, or ``input_0``, ``input_1``, ... when there are several). ``dynamic_axes`` maps
    an input or output name to the axes whose size may change at run time, as a list of axes
    or a ``{axis: name}`` dict (PyTorch's format): ``{"x": {0: "batch"}}``. To find which sizes
    inside the model follow those axes, the model is traced a second time with each dynamic
    axis one longer; a model whose ops change with that size (a Python loop over it, a tensor
    built from ``x.shape[0]`` in ``forward``) raises :class:`OnnxExportError`. The inputs'
    dynamic axes are written as ``dim_param`` names; an output's dynamic dims too (named after
    ``dynamic_axes`` when it names that output). ``opset_version`` defaults to 17; 13 and
    newer are supported. Returns the ``onnx.ModelProto`` (also when ``f`` is given).

    ``do_constant_folding`` computes, at export time, the ops that read only parameters and
    constants (a weight's transpose, tied weights), storing their results as initializers.
    ``verbose`` prints the graph.

    >>> import numpy as np, torchlight as tl, torchlight.nn as nn
    >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> proto = tl.onnx.export(model, tl.randn(5, 3), None, dynamic_axes={"input": {0: "batch"}})
    >>> [n.op_type for n in proto.graph.node]
    ['Gemm', 'Relu', 'Gemm', 'Identity']
    """
    onnx = _import_onnx()
    from onnx import helper

    args = args if isinstance(args, tuple) else (args,)
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    tape = _trace(model, args)
    inputs = sorted(tape.inputs, key=lambda v: v.position)
    out_slots = tape.output_slots()
    in_names = _names(input_names, len(inputs), "input")
    out_names = _names(output_names, len(out_slots), "output")
    dyn = _dynamic_axes(dynamic_axes, in_names, out_names)
    dyn_of = _dynamic_dims(
        model, args, tape, {v.position: dyn.get(n, {}) for n, v in zip(in_names, inputs)}
    )
    g = GraphBuilder(opset)

    names = {}  # tape slot -> ONNX value name
    graph_inputs = []
    for name, v in zip(in_names, inputs):
        names[v.index] = g.reserve(name)
        graph_inputs.append(_value_info(helper, name, v.shape, v.dtype, dyn.get(name, {})))
    for name in out_names:
        g.reserve(name)
    for v in tape.values:
        if v.kind in ("param", "const"):
            names[v.index] = g.const(v.tensor.detach().to_numpy(), v.name or "const")
    values = {v.index: v for v in tape.values}
    known = {v.index: v.tensor for v in tape.values if v.kind in ("param", "const")}
    g.matmul_only = _read_only_by_matmul(tape, out_slots)
    for node in tape.nodes:
        if do_constant_folding and all(s in known for s in node.inputs) and not dyn_of[node.out]:
            # an op on parameters and constants only (a weight's transpose): computed now,
            # stored as an initializer
            known[node.out] = _evaluate(node, known)
            base = f"{names[node.inputs[0]]}_{node.op}" if node.inputs else node.op
            names[node.out] = g.const(known[node.out].to_numpy(), base)
            continue
        args_v = tuple(_resolve(a, names, values, dyn_of) for a in node.args)
        g.out_dyn, g.out_slot = dyn_of[node.out], node.out
        names[node.out] = translate(g, node, args_v)

    graph_outputs = []
    for name, slot in zip(out_names, out_slots):
        g.nodes.append(helper.make_node("Identity", [names[slot]], [name]))
        v = values[slot]
        axes = dyn.get(name) or {k: f"{name}_dim{k}" for k in sorted(dyn_of[slot])}
        graph_outputs.append(_value_info(helper, name, v.shape, v.dtype, axes))

    live = _live(g.nodes, out_names)
    graph = helper.make_graph(
        live,
        getattr(model, "__name__", None) or type(model).__name__,
        graph_inputs,
        graph_outputs,
        initializer=_used(g.initializers, live),
    )
    proto = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="torchlight"
    )
    proto.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    onnx.checker.check_model(proto)
    if verbose:
        print(helper.printable_graph(proto.graph))
    if f is not None:
        onnx.save(proto, f)
    return proto


def _trace(model, args):
    """The tape of ``model(*args)``, traced in eval mode (the mode is restored afterwards)."""
    from torchlight.jit import trace

    was_training = getattr(model, "training", False) and callable(getattr(model, "eval", None))
    if was_training:
        model.eval()
    try:
        return trace(model, *args)
    finally:
        if was_training:
            model.train()


def _dynamic_dims(model, args, tape, axes_of):
    """slot -> the dims of that value that change with the dynamic axes.

    The model is traced a second time with every dynamic axis one longer (the example data
    repeated cyclically); a dim whose size differs between the two tapes is dynamic. The two
    tapes must apply the same ops, and no constant may change shape (it would be baked in).
    """
    import numpy as np

    from torchlight.tensor.creation import from_numpy_on
    from torchlight.tensor.tensor import Tensor

    if not any(axes_of.values()):
        return {v.index: frozenset() for v in tape.values}
    grown = []
    for k, a in enumerate(args):
        if isinstance(a, Tensor) and axes_of.get(k):
            arr = a.detach().to_numpy()
            for ax in axes_of[k]:
                arr = np.take(arr, np.arange(arr.shape[ax] + 1) % max(arr.shape[ax], 1), axis=ax)
            a = from_numpy_on(
                np.ascontiguousarray(arr), args[k].backend, args[k].dtype, like=args[k]
            )
        grown.append(a)
    other = _trace(model, tuple(grown))
    if [n.op for n in other.nodes] != [n.op for n in tape.nodes] or len(other.values) != len(
        tape.values
    ):
        raise OnnxExportError(
            "the model applies different ops when a dynamic axis changes size (a loop over it, or "
            "control flow on a shape); export it with static shapes (no dynamic_axes for that axis)"
        )
    dyn_of = {}
    for v, w in zip(tape.values, other.values):
        if len(v.shape) != len(w.shape):
            raise OnnxExportError(
                f"value %{v.index} changes rank with a dynamic axis; export with static shapes"
            )
        dims = frozenset(k for k, (p, q) in enumerate(zip(v.shape, w.shape)) if p != q)
        if dims and v.kind == "const":
            raise OnnxExportError(
                f"a constant tensor of shape {v.shape} built inside forward depends on a dynamic "
                "size (e.g. tl.zeros(x.shape[0], ...)); it would be baked into the graph. Derive it "
                "from the inputs with tensor ops (zeros_like, expand), or export with static shapes"
            )
        dyn_of[v.index] = dims
    return dyn_of


def _names(given, n, base):
    if given is None:
        return [base] if n == 1 else [f"{base}_{k}" for k in range(n)]
    given = list(given)
    if len(given) != n:
        raise OnnxExportError(
            f"{len(given)} {base} names given for {n} {base}s of the traced model"
        )
    return given


def _dynamic_axes(dynamic_axes, in_names, out_names):
    dyn = {}
    for name, axes in (dynamic_axes or {}).items():
        if name not in in_names and name not in out_names:
            raise OnnxExportError(
                f"dynamic_axes names {name!r}, which is neither an input nor an output "
                f"(inputs {in_names}, outputs {out_names})"
            )
        dyn[name] = (
            dict(axes) if isinstance(axes, dict) else {int(a): f"{name}_dim{a}" for a in axes}
        )
    return dyn


def _value_info(helper, name, shape, dtype, axes):
    dims = [axes.get(k, int(n)) for k, n in enumerate(shape)]
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), dims)


def _read_only_by_matmul(tape, out_slots):
    """The tape slots that only matrix products read (not a graph output): ONNX's MatMul
    broadcasts batch dims itself, so an expand feeding it may leave a dynamic dim at 1."""
    readers: dict = {}
    for node in tape.nodes:
        for s in node.inputs:
            readers.setdefault(s, set()).add(node.fn.__name__)
    return {s for s, fns in readers.items() if fns == {"MatMul"}} - set(out_slots)


def _resolve(a, names, values, dyn_of):
    from torchlight.jit import Slot

    if isinstance(a, Slot):
        v = values[a.index]
        return Value(names[a.index], v.shape, v.dtype, dyn_of[a.index])
    if isinstance(a, (tuple, list)):
        return type(a)(_resolve(x, names, values, dyn_of) for x in a)
    return a


def _evaluate(node, known):
    from torchlight.autograd import no_grad
    from torchlight.autograd.function import Context
    from torchlight.jit import Slot

    def fill(a):
        if isinstance(a, Slot):
            return known[a.index]
        if isinstance(a, (tuple, list)):
            return type(a)(fill(x) for x in a)
        return a

    with no_grad():
        args = [fill(a) for a in node.args]
        return node.fn.forward(Context((False,) * len(args)), *args)


def _live(nodes, outputs):
    """The nodes that contribute to ``outputs`` (a translation may leave a value unused, e.g.
    the argmax whose indices a max(dim) re-reads), in their original order."""
    needed, keep = set(outputs), []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
    return keep[::-1]


def _used(initializers, nodes):
    used = {i for n in nodes for i in n.input}
    return [t for t in initializers if t.name in used]
