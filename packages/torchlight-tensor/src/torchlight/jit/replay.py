"""Replaying a tape: each node's ``fn.forward(ctx, *args)`` with tensors substituted (``ctx`` a
fresh ``Context`` in which no input needs a gradient).

A replay builds no autograd graph (it runs with grad mode off and calls ``forward`` directly,
not ``apply``). Parameters and constants are read from the referenced tensor objects at replay
time, so an optimizer step between two replays is seen by the second.

**Other sizes.** When the inputs have the traced shapes the tape replays exactly. When a size
changed (typically the batch: inputs traced as ``(3, 8)``, replayed as ``(5, 8)``), the replay
builds a size map ``{3: 5}`` from the inputs and re-derives the shape-like constants of the few
ops that carry them (``view``/``reshape`` targets, ``expand`` targets): an entry equal to a changed
size is replaced, and a merged entry (``3 * 4 = 12`` in a flattening view) is rescaled when that
is the only way to keep the element count. Every other op computes its output shape from its
inputs anyway. After each op the output shape is checked against the traced one under the same
map; the first op that cannot take the new shapes raises a :class:`TraceError` naming it.

Because a changed size is recognised by its value, trace with sizes that differ from the other
dimensions (a size traced as 1 cannot be replayed as another size, since every size-1 dim would
match); the replay refuses ambiguous cases it can see (a traced size that changes in one input
dim and stays in another).

**Validation.** A replay calls each ``Function.forward`` directly, so every check that must hold on
new data — index and target ranges, index dtypes — lives in ``forward`` (not in the op's Python
wrapper) and runs here as in eager mode; a bad index raises the same ``TensorIndexError``.
"""

from torchlight.autograd.function import Context, Function
from torchlight.autograd.grad_mode import GradMode
from torchlight.tensor.errors import TensorIndexError

from .tape import Slot, TraceError

__all__ = ["replay", "size_map", "run_node"]


def _fmt_shape(s):
    return "(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def check_inputs(tape, inputs):
    from torchlight.tensor.tensor import Tensor

    n_args = tape.n_args
    if len(inputs) != n_args:
        raise TraceError(
            f"tape {tape.name!r} was traced with {n_args} input{'s' if n_args != 1 else ''}, got {len(inputs)}"
        )
    tensors = []
    static = tape.static_args
    for k, x in enumerate(inputs):
        if k in static:
            if isinstance(x, Tensor) or not _same_static(x, static[k]):
                raise TraceError(
                    f"input #{k} was the constant {static[k]!r} when tracing (non-tensor inputs are baked "
                    f"into the tape), got {x!r}; trace again for another value"
                )
            continue
        if not isinstance(x, Tensor):
            raise TraceError(
                f"input #{k} must be a tensor (it was one when tracing), got {type(x).__name__}"
            )
        tensors.append(x)
    for v, x in zip(tape.inputs, tensors):
        if x.dtype is not v.dtype:
            raise TraceError(
                f"input #{v.position} has dtype {x.dtype}, the tape was traced with {v.dtype}; "
                f"convert it (.to({v.dtype})) or trace again"
            )
        if len(x.shape) != len(v.shape):
            raise TraceError(
                f"input #{v.position} has shape {_fmt_shape(x.shape)}, the tape was traced with "
                f"{_fmt_shape(v.shape)} (a different number of dimensions)"
            )
        if tape.backend is not None and x.backend is not tape.backend:
            raise TraceError(
                f"input #{v.position} is on device {x.device!r}, the tape was traced on "
                f"{getattr(tape.backend, 'device', tape.backend.name)!r} (its parameters live there); "
                "trace again on that device"
            )
    return tensors


def _same_static(a, b):
    try:
        return bool(a == b)
    except Exception:
        return a is b


def size_map(tape, tensors):
    """``{traced size: new size}`` for the dims of the inputs that changed ({} when none did)."""
    sizes = {}
    kept = set()
    for v, x in zip(tape.inputs, tensors):
        if x.shape == v.shape:
            kept.update(v.shape)
            continue
        for d, (old, new) in enumerate(zip(v.shape, x.shape)):
            if old == new:
                kept.add(old)
                continue
            if old == 1 or old == 0:
                raise TraceError(
                    f"input #{v.position} dim {d} was traced with size {old} and is now {new}; a size "
                    f"traced as {old} cannot be replayed as another size (every size-{old} dim would "
                    "match). Trace with a size that is distinct from the other dimensions"
                )
            if sizes.setdefault(old, new) != new:
                raise TraceError(
                    f"input dims traced with size {old} now have different sizes ({sizes[old]} and {new}); "
                    "the tape cannot tell them apart: trace with distinct sizes"
                )
    for old in sizes:
        if old in kept:
            raise TraceError(
                f"size {old} changed in one input dim ({old} -> {sizes[old]}) but not in another; the "
                "tape cannot tell which dims of its ops follow it: trace with distinct sizes"
            )
    return sizes


def _rescale(v, sizes):
    """Candidate new values of a traced size under ``sizes``."""
    if v in sizes:
        return [sizes[v]]
    return [v // o * n for o, n in sizes.items() if v % o == 0 and v != o]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _view_groups(old, new):
    """Pair up runs of dims with equal products: ``(3, 4, 5) -> (12, 5)`` gives
    ``[([0, 1], [0]), ([2], [1])]``; None when sizes are 0 or the counts differ."""
    if 0 in old or 0 in new or _numel(old) != _numel(new):
        return None
    groups, i, j = [], 0, 0
    while i < len(old) and j < len(new):
        a, b, pa, pb = [i], [j], old[i], new[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                pa *= old[i]
                a.append(i)
                i += 1
            else:
                pb *= new[j]
                b.append(j)
                j += 1
        groups.append((a, b))
    groups += [([k], []) for k in range(i, len(old))] + [([], [k]) for k in range(j, len(new))]
    return groups


def _subst(shape, sizes, numel):
    """Replace changed sizes in ``shape``; rescale one merged entry if the count still differs."""
    new = [sizes.get(s, s) for s in shape]
    if _numel(new) != numel:
        fixes = []
        for j, s in enumerate(shape):
            if s in sizes:
                continue
            for c in _rescale(s, sizes):
                trial = new[:j] + [c] + new[j + 1 :]
                if _numel(trial) == numel:
                    fixes.append(trial)
        if len(fixes) == 1:
            new = fixes[0]
    return new


def _adapt_view(args, sizes, node):
    """A view target for the replayed input: dims of the target that regroup unchanged input dims
    stay; a target dim that merges changed input dims takes their new product; a changed input
    dim split into several target dims has its changed size substituted."""
    x, shape = args[0], args[1]
    old_in, now = node.in_shapes[0], x.shape
    groups = _view_groups(old_in, shape) if len(now) == len(old_in) else None
    if groups is None:
        return (x, tuple(_subst(shape, sizes, _numel(now)))) + tuple(args[2:])
    new = list(shape)
    for a, b in groups:
        old_a = [old_in[k] for k in a]
        now_a = [now[k] for k in a]
        if old_a == now_a or not b:
            continue
        if len(b) == 1:
            new[b[0]] = _numel(now_a)
        else:
            part = _subst([shape[k] for k in b], sizes, _numel(now_a))
            for k, s in zip(b, part):
                new[k] = s
    return (x, tuple(new)) + tuple(args[2:])


def _adapt_expand(args, sizes, node):
    x, shape = args[0], args[1]
    traced_in = node.in_shapes[0]
    lead = len(shape) - len(traced_in)
    new = []
    for k, s in enumerate(shape):
        if k >= lead and traced_in[k - lead] == s and s != -1:
            new.append(x.shape[k - lead])  # a dim that was not broadcast follows the input
        else:
            new.append(sizes.get(s, s))
    return (x, tuple(new)) + tuple(args[2:])


def _adapters():
    from torchlight.tensor.functions.shape import Expand, View

    return {View: _adapt_view, Expand: _adapt_expand}


_ADAPT = None


def _fill(a, vals):
    if isinstance(a, Slot):
        return vals[a.index]
    if isinstance(a, tuple):
        return tuple(_fill(x, vals) for x in a)
    if isinstance(a, list):
        return [_fill(x, vals) for x in a]
    return a


def _shape_ok(actual, traced, sizes):
    if actual == traced:
        return True
    if len(actual) != len(traced):
        return False
    for a, t in zip(actual, traced):
        if a != t and a not in _rescale(t, sizes):
            return False
    return True


def run_node(node, vals, sizes):
    """Run one node on the values in ``vals`` (store and return its output)."""
    global _ADAPT
    if node.nested:
        args = _fill(node.args, vals)
        kwargs = {k: _fill(v, vals) for k, v in node.kwargs.items()}
    else:
        args = list(node.args)
        for k, s in node.top_slots:
            args[k] = vals[s]
        kwargs = {}
    if sizes:
        if _ADAPT is None:
            _ADAPT = _adapters()
        adapt = _ADAPT.get(node.fn)
        if adapt is not None:
            args = adapt(tuple(args), sizes, node)
    try:
        if Function.nesting.depth:
            out = node.fn.forward(Context((False,) * len(args)), *args, **kwargs)
        else:  # replayed while an outer trace records: go through apply so it sees the ops
            out = node.fn.apply(*args, **kwargs)
    except TraceError:
        raise
    except (
        TensorIndexError
    ) as exc:  # bad index data, not a tape that cannot take the shapes: as eager
        raise TensorIndexError(f"{exc} (replaying op #{node.index} {node.op!r} of a tape)") from exc
    except Exception as exc:
        raise TraceError(_disagree(node, vals, f"{type(exc).__name__}: {exc}")) from exc
    if sizes and not _shape_ok(out.shape, node.shape, sizes):
        raise TraceError(
            _disagree(
                node,
                vals,
                f"it produced shape {_fmt_shape(out.shape)}, the traced "
                f"{_fmt_shape(node.shape)} does not scale to that",
            )
        )
    vals[node.out] = out
    return out


def _disagree(node, vals, why):
    now = tuple(vals[s].shape for s in node.inputs)
    traced = ", ".join(_fmt_shape(s) for s in node.in_shapes)
    got = ", ".join(_fmt_shape(s) for s in now)
    return (
        f"replay failed at op #{node.index} {node.op!r} ({node.fn.__name__}): traced with input shapes "
        f"[{traced}], replayed with [{got}]: {why}"
    )


def _build(tree, vals):
    if isinstance(tree, Slot):
        return vals[tree.index]
    if isinstance(tree, tuple):
        items = [_build(x, vals) for x in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
    if isinstance(tree, list):
        return [_build(x, vals) for x in tree]
    if isinstance(tree, dict):
        return {k: _build(v, vals) for k, v in tree.items()}
    return tree


def _step_inputs(step):
    node = getattr(step, "node", None)
    if node is not None:
        return node.inputs
    ext = getattr(step, "ext_inputs", None)
    return ext if ext is not None else step.inputs


def release_plan(tape, steps, key):
    """For each step, the node slots read for the last time there (freed right after, so memory
    is reused as in eager execution instead of every intermediate living to the end)."""
    cached = tape._plans.get(key)
    if cached is None:
        keep = set(tape.output_slots())
        last = {}
        for k, step in enumerate(steps):
            for s in _step_inputs(step):
                if tape.values[s].kind == "node" and s not in keep:
                    last[s] = k
        cached = [[] for _ in steps]
        for s, k in last.items():
            cached[k].append(s)
        cached = tape._plans[key] = [tuple(r) for r in cached]
    return cached


def replay(tape, inputs, fuse=None):
    """Run ``tape``'s recorded ops on new ``inputs`` under ``no_grad`` and return its outputs (what
    :meth:`GraphTape.replay` calls). Input shapes may differ from the traced ones where the tape's
    dimensions are symbolic; ``fuse`` chooses elementwise fusion (see :meth:`GraphTape.replay`).
    """
    tensors = check_inputs(tape, inputs)
    sizes = size_map(tape, tensors)
    vals = [None] * len(tape.values)
    it = iter(tensors)
    for v in tape.values:
        if v.kind == "input":
            vals[v.index] = next(it)
        elif v.kind != "node":
            vals[v.index] = v.tensor
    steps = tape.nodes
    compiler = None
    nested_trace = bool(Function.tracers) and not Function.nesting.depth
    if fuse is not False and not nested_trace:
        from .fusion import get_compiler, plan

        compiler = get_compiler(tape.backend, fuse)
        if compiler is not None:
            steps = plan(tape)
    free = release_plan(tape, steps, "release-fused" if compiler is not None else "release")
    prev = GradMode.enabled
    GradMode.enabled = False
    depth = 0 if nested_trace else 1  # like apply: ops inside forwards are not reported
    Function.nesting.depth += depth
    try:
        for step, dead in zip(steps, free):
            if compiler is None:
                run_node(step, vals, sizes)
            else:
                step.run(vals, sizes, compiler)
            for s in dead:
                vals[s] = None
    finally:
        Function.nesting.depth -= depth
        GradMode.enabled = prev
    return _build(tape.outputs, vals)
