"""Looking at a tape: an op table with FLOPs and bytes, and Graphviz text for pictures.

FLOPs are estimates for the traced shapes: ``2·n·k·m`` per matmul (times the batch; a linear
layer's adds ``n·m`` for its bias), one per
output element for elementwise ops and per input element for reductions, a few per element for
softmax and layer norm, zero for views (``view``, ``permute``, ``expand``, indexing by slices).
Bytes are those of each op's output when the op materialises one (views allocate nothing).
"""

__all__ = ["flops", "out_bytes", "summary", "to_dot", "VIEW_OPS"]

VIEW_OPS = {"view", "permute", "expand", "squeeze", "unsqueeze", "unfold", "windows", "getitem"}
_PER_ELEMENT = {
    "softmax": 5,
    "log_softmax": 5,
    "layer_norm": 8,
    "gelu": 8,
    "gelu_tanh": 8,
    "sigmoid": 4,
    "tanh": 4,
    "silu": 5,
    "softplus": 5,
}


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def flops(node):
    """Estimated floating-point operations of one node at its traced shapes."""
    op = node.op
    if op in VIEW_OPS or op in ("clone", "cast", "to_device", "cat", "stack", "pad"):
        return 0
    if op in ("matmul", "linear"):  # linear: x Wᵀ (k = x's last dim), plus its bias add
        a, b = node.in_shapes[0], node.in_shapes[1]
        bias = _numel(node.shape) if op == "linear" and len(node.in_shapes) > 2 else 0
        return 2 * _numel(node.shape) * a[-1] + bias if a and b else 0
    if (
        op in ("sum", "mean", "prod", "amax", "amin", "max_dim", "logsumexp")
        or op.endswith("_nograd")
        or op.startswith("arg")
    ):
        return _numel(node.in_shapes[0]) if node.in_shapes else 0
    return _PER_ELEMENT.get(op, 1) * _numel(node.shape)


def out_bytes(node):
    """Bytes the op of ``node`` writes: 0 for a view op, else elements times the dtype's size."""
    if node.op in VIEW_OPS:
        return 0
    return _numel(node.shape) * node.dtype.itemsize


def _fmt_shape(s):
    return "(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def _human(n, unit=""):
    for suffix in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or suffix == "T":
            return f"{n:.0f}{suffix}{unit}" if suffix == "" else f"{n:.1f}{suffix}{unit}"
        n /= 1000.0
    return str(n)


def _operand(tape, s):
    v = tape.values[s]
    if v.kind == "node":
        return f"%{s}"
    if v.kind == "input":
        return f"in{v.position}"
    if v.kind == "param":
        return v.name or f"p%{s}"
    if _numel(v.shape) == 1:
        try:
            return f"{v.tensor.item():.4g}"
        except Exception:  # device without a cheap item()
            pass
    return f"c%{s}"


def summary(tape, fuse=False):
    """A readable table: one row per op with its inputs, output shape, FLOPs and bytes.

    With ``fuse=True`` a column shows which fused group (see :mod:`torchlight.jit.fusion`) an op
    belongs to.
    """
    group_of = {}
    if fuse:
        for g, nodes in enumerate(tape.fusion_groups()):
            for i in nodes:
                group_of[i] = f"F{g}"
    header = ["#", "op", "inputs", "output", "dtype", "FLOPs", "bytes"] + (
        ["fused"] if fuse else []
    )
    rows = []
    total_flops = total_bytes = 0
    for n in tape.nodes:
        f, b = flops(n), out_bytes(n)
        total_flops += f
        total_bytes += b
        ins = ", ".join(
            f"{_operand(tape, s)}{_fmt_shape(tape.values[s].shape)}"
            if tape.values[s].kind != "const" or _numel(tape.values[s].shape) != 1
            else _operand(tape, s)
            for s in n.inputs
        )
        row = [f"%{n.out}", n.op, ins, _fmt_shape(n.shape), n.dtype.name, _human(f), _human(b, "B")]
        if fuse:
            row.append(group_of.get(n.index, ""))
        rows.append(row)
    params = tape.parameters
    n_param = sum(_numel(v.shape) for v in params)
    widths = [max(len(str(r[k])) for r in rows + [header]) for k in range(len(header))]
    widths[2] = min(widths[2], 60)

    def line(r):
        cells = []
        for k, c in enumerate(r):
            c = str(c)
            if len(c) > widths[k]:
                c = c[: widths[k] - 3] + "..."
            cells.append(c.rjust(widths[k]) if k in (5, 6) else c.ljust(widths[k]))
        return "  ".join(cells).rstrip()

    out = [
        f"GraphTape {tape.name}: inputs "
        + ", ".join(f"in{v.position}{_fmt_shape(v.shape)} {v.dtype.name}" for v in tape.inputs)
        + f"; {len(params)} parameter tensors ({_human(n_param)} values)"
    ]
    out.append(line(header))
    out.append("  ".join("-" * w for w in widths))
    out += [line(r) for r in rows]
    out.append("  ".join("-" * w for w in widths))
    out.append(
        f"{len(tape.nodes)} ops, {_human(total_flops)} FLOPs, {_human(total_bytes, 'B')} written"
        + (f" ({tape.pruned} unused ops pruned)" if tape.pruned else "")
    )
    return "\n".join(out)


def _esc(s):
    return str(s).replace("\\", "\\\\").replace('"', '\\"')


def to_dot(tape):
    """Graphviz ``digraph`` text of the tape: inputs (ellipses), parameters (grey boxes), ops
    (boxes with the output shape), outputs (double octagons). Render with ``dot -Tsvg``."""
    lines = [
        f'digraph "{_esc(tape.name)}" {{',
        "  rankdir=TB;",
        '  node [fontname="Helvetica", fontsize=10];',
    ]
    used = set()
    for n in tape.nodes:
        used.update(n.inputs)
    out_slots = tape.output_slots()
    used.update(out_slots)
    for v in tape.values:
        if v.kind == "node" or v.index not in used:
            continue
        if v.kind == "input":
            lines.append(
                f'  v{v.index} [label="input {v.position}\\n{_fmt_shape(v.shape)}", shape=ellipse];'
            )
        elif v.kind == "param":
            lines.append(
                f'  v{v.index} [label="{_esc(v.name or "param")}\\n{_fmt_shape(v.shape)}", '
                'shape=box, style=filled, fillcolor="#dddddd"];'
            )
        elif _numel(v.shape) != 1:
            lines.append(f'  v{v.index} [label="const\\n{_fmt_shape(v.shape)}", shape=note];')
    for n in tape.nodes:
        scalars = [
            _operand(tape, s)
            for s in n.inputs
            if tape.values[s].kind == "const" and _numel(tape.values[s].shape) == 1
        ]
        extra = f" ({', '.join(scalars)})" if scalars else ""
        lines.append(
            f'  v{n.out} [label="{_esc(n.op + extra)}\\n{_fmt_shape(n.shape)}", shape=box];'
        )
        for s in n.inputs:
            v = tape.values[s]
            if v.kind == "const" and _numel(v.shape) == 1:
                continue
            lines.append(f"  v{s} -> v{n.out};")
    for k, s in enumerate(out_slots):
        lines.append(f'  out{k} [label="output {k}", shape=doubleoctagon];')
        lines.append(f"  v{s} -> out{k};")
    lines.append("}")
    return "\n".join(lines) + "\n"
