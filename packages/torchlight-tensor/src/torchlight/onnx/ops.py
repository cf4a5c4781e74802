"""The op table: how each recorded tape op (a ``Function`` class) becomes ONNX nodes.

``OPS`` maps a Function's class name to a translation ``fn(g, node, args) -> name``: ``g`` is the
:class:`~torchlight.onnx.graph.GraphBuilder`, ``node`` the tape node (its traced output shape in
``node.shape``), ``args`` the node's arguments with every tensor replaced by a
:class:`~torchlight.onnx.graph.Value` (name, traced shape, dtype) and constant arguments (dims,
op names, shapes) as they were recorded. The translation returns the name of the ONNX value that
holds the op's result.

Formulas written as several ONNX nodes are the ones the numpy backend computes (GELU,
reciprocal square root, squeeze), so exported graphs agree with eager outputs to float rounding.
"""

import numpy as np

from torchlight.tensor.formulas import GELU_TANH_C, GELU_TANH_K, SQRT1_2

from .errors import OnnxExportError
from .graph import INT64_MAX, onnx_dtype

__all__ = ["OPS", "translate"]

_ZIP = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "maximum": "Max",
    "minimum": "Min",
}
_COMPARE = {
    "lt": "Less",
    "le": "LessOrEqual",
    "gt": "Greater",
    "ge": "GreaterOrEqual",
    "eq": "Equal",
    "logical_and": "And",
    "logical_or": "Or",
}
_UNARY = {
    "neg": "Neg",
    "abs": "Abs",
    "sign": "Sign",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "reciprocal": "Reciprocal",
    "sin": "Sin",
    "cos": "Cos",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "relu": "Relu",
    "softplus": "Softplus",
    "erf": "Erf",
    "logical_not": "Not",
    "copy": "Identity",
}
_REDUCE = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin", "prod": "ReduceProd"}


def translate(g, node, args):
    """ONNX nodes for one tape node; returns the name of its result."""
    fn = OPS.get(node.fn.__name__)
    if fn is None:
        raise OnnxExportError(
            f"op {node.op!r} ({node.fn.__name__}) has no ONNX translation yet; export a submodule "
            "without it, or add an entry to torchlight.onnx.ops.OPS"
        )
    if node.kwargs:
        raise OnnxExportError(
            f"op {node.op!r} was called with keyword tensor arguments, which export does not take"
        )
    return fn(g, node, args)


def _binary(op_type):
    return lambda g, node, a: g.node(op_type, [a[0].name, a[1].name], name=node.op)


def _linear(g, node, a):
    # Y = X Wᵀ + b: ONNX's Gemm with transB (its bias input C is optional); Gemm takes 2-D X only,
    # so a batch of sequences (*, in) is a MatMul, which broadcasts Wᵀ over the leading dims
    x, w, b = a
    if len(x.shape) == 2:
        return g.node(
            "Gemm", [x.name, w.name, None if b is None else b.name], transB=1, name="linear"
        )
    y = g.node("MatMul", [x.name, g.node("Transpose", [w.name], perm=[1, 0])], name="linear")
    return y if b is None else g.node("Add", [y, b.name], name="linear")


def _compare(g, node, a):
    x, y, op = a
    if op == "ne":
        return g.node("Not", [g.node("Equal", [x.name, y.name])], name="ne")
    return g.node(_COMPARE[op], [x.name, y.name], name=op)


def _unary(g, node, a):
    x, op = a
    if op in _UNARY:
        return g.node(_UNARY[op], [x.name], name=op)
    return _COMPOSITE[op](g, x)


def _gelu(g, x):
    # x · Φ(x) = 0.5 · x · (1 + erf(x / √2))
    s = g.node("Erf", [g.node("Mul", [x.name, g.scalar(SQRT1_2, x.dtype)])])
    half_x = g.node("Mul", [x.name, g.scalar(0.5, x.dtype)])
    return g.node("Mul", [half_x, g.node("Add", [s, g.scalar(1.0, x.dtype)])], name="gelu")


def _gelu_tanh(g, x):
    # 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 x³)))
    x3 = g.node("Mul", [g.node("Mul", [x.name, x.name]), x.name])
    inner = g.node("Add", [x.name, g.node("Mul", [x3, g.scalar(GELU_TANH_K, x.dtype)])])
    t = g.node("Tanh", [g.node("Mul", [inner, g.scalar(GELU_TANH_C, x.dtype)])])
    half_x = g.node("Mul", [x.name, g.scalar(0.5, x.dtype)])
    return g.node("Mul", [half_x, g.node("Add", [t, g.scalar(1.0, x.dtype)])], name="gelu_tanh")


_COMPOSITE = {
    "rsqrt": lambda g, x: g.node("Reciprocal", [g.node("Sqrt", [x.name])], name="rsqrt"),
    "square": lambda g, x: g.node("Mul", [x.name, x.name], name="square"),
    "silu": lambda g, x: g.node("Mul", [x.name, g.node("Sigmoid", [x.name])], name="silu"),
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
}


def _cast(g, node, a):
    x, dtype = a[0], a[1]
    return g.node("Cast", [x.name], to=onnx_dtype(dtype), name="cast")


def _clamp(g, node, a):
    x, lo, hi = a
    bound = [None if v is None else g.scalar(v, x.dtype) for v in (lo, hi)]
    return g.node("Clip", [x.name, *bound], name="clamp")


def _leaky_relu(g, node, a):
    x, slope = a
    return g.node("LeakyRelu", [x.name], alpha=float(slope), name="leaky_relu")


def _where(g, node, a):
    cond, x, y = a
    return g.node("Where", [cond.name, x.name, y.name], name="where")


def _masked_fill(g, node, a):
    x, mask, value = a
    fill = value.name if hasattr(value, "name") else g.scalar(value, x.dtype)
    return g.node("Where", [mask.name, fill, x.name], name="masked_fill")


def _view(g, node, a):
    x = a[0]
    target = g.reshape_target(x, node.shape, g.out_dyn)
    return g.node("Reshape", [x.name, g.ints(target)], name="view")


def _permute(g, node, a):
    x, dims = a
    return g.node("Transpose", [x.name], perm=[int(d) for d in dims], name="permute")


def _expand(g, node, a):
    x = a[0]
    lead = len(node.shape) - x.ndim
    target = [int(n) for n in node.shape]
    for k in g.out_dyn:
        # Expand keeps the input's size where the target says 1; a matrix product broadcasts a
        # batch dim of 1 itself (a weight shared over a dynamic batch), so there 1 is exact too
        broadcast_by_matmul = g.out_slot in g.matmul_only and (k < lead or x.shape[k - lead] == 1)
        if not broadcast_by_matmul and (k < lead or (k - lead) not in x.dyn):
            raise OnnxExportError(
                f"an expand of {x.shape} to {node.shape} creates a dynamic size; it cannot be exported"
            )
        target[k] = 1
    return g.node("Expand", [x.name, g.ints(target)], name="expand")


def _restride(g, node, a):
    x, kind, dims = a
    axes = [dims] if kind == "unsqueeze" else list(dims)
    return g.node(
        "Unsqueeze" if kind == "unsqueeze" else "Squeeze", [x.name, g.ints(axes, "axes")], name=kind
    )


def _unfold(g, node, a):
    x, dim, size, step = a
    _static(x, [dim], "unfold")
    count = (x.shape[dim] - size) // step + 1
    return _windows_along(g, x.name, x.ndim, dim, count, size, step, 1, "unfold")


def _static(x, dims, label):
    if any(d in x.dyn for d in dims):
        raise OnnxExportError(
            f"{label} (convolution, pooling) along a dynamic axis cannot be exported; make it static"
        )


def _windows_along(g, name, ndim, dim, count, size, step, dilation, label):
    """The ``count`` windows along ``dim`` of the ``ndim``-dim value ``name`` as a new last
    axis: ``x.gather(dim, [[0, d, .., (size-1)d], [step, ...], ...])``, then transposed."""
    idx = np.arange(count)[:, None] * step + np.arange(size)[None, :] * dilation
    win = g.node("Gather", [name, g.const(idx.astype(np.int64), "windows")], axis=int(dim))
    perm = [*range(dim + 1), *range(dim + 2, ndim + 1), dim + 1]
    return g.node("Transpose", [win], perm=perm, name=label)


def _windows(g, node, a, label="windows"):
    # every window at once: the windows along each spatial dim in turn; each new window axis
    # goes last, so the kernel axes end in order and the spatial dims keep their positions
    x, win = a
    lead = x.ndim - len(win.kernel)
    _static(x, range(lead, x.ndim), label)
    name = x.name
    for d, (n, k, s, dil) in enumerate(zip(win.outs, win.kernel, win.stride, win.dilation)):
        name = _windows_along(g, name, x.ndim + d, lead + d, n, k, s, dil, label)
    return name


def _window_reduce(op_type, label):
    def translate(g, node, a):
        x, win = a
        axes = list(range(x.ndim, x.ndim + len(win.kernel)))  # the kernel axes _windows appends
        return g.reduce(op_type, _windows(g, node, a, label), axes, False, label)

    return translate


def _cat(g, node, a):
    dim, xs = a[0], a[1:]
    return g.node("Concat", [x.name for x in xs], axis=int(dim), name="cat")


def _roll(g, node, a):
    x, shift, dim = a
    if dim in x.dyn:
        raise OnnxExportError("roll along a dynamic axis cannot be exported; make it static")
    n = x.shape[dim]

    def piece(start, stop):
        starts, ends = g.ints([start], "starts"), g.ints([stop], "ends")
        return g.node("Slice", [x.name, starts, ends, g.ints([dim], "axes")])

    return g.node("Concat", [piece(n - shift, n), piece(0, n - shift)], axis=int(dim), name="roll")


def _stack(g, node, a):
    dim, xs = a[0], a[1:]
    axes = g.ints([dim], "axes")
    parts = [g.node("Unsqueeze", [x.name, axes]) for x in xs]
    return g.node("Concat", parts, axis=int(dim), name="stack")


def _pad(g, node, a):
    x, widths, value = a
    pads = [int(lo) for lo, _ in widths] + [int(hi) for _, hi in widths]
    return g.node(
        "Pad", [x.name, g.ints(pads, "pads"), g.scalar(value, x.dtype)], mode="constant", name="pad"
    )


def _sum(g, node, a):
    x, dims, keepdim = a
    if not dims:
        return g.node("Identity", [x.name], name="sum")
    return g.reduce("ReduceSum", x.name, dims, keepdim, name="sum")


def _mean(g, node, a):
    x, dims, keepdim, correction = a
    if not dims:
        return g.node("Identity", [x.name], name="mean")
    if correction == 0:
        return g.reduce("ReduceMean", x.name, dims, keepdim, name="mean")
    n = int(np.prod([x.shape[d] for d in dims]))
    if any(d in x.dyn for d in dims):
        raise OnnxExportError(
            "var/std over a dynamic axis cannot be exported; make that axis static"
        )
    s = g.reduce("ReduceSum", x.name, dims, keepdim)
    return g.node("Div", [s, g.scalar(max(n - correction, 0), x.dtype)], name="var")


def _prod(g, node, a):
    x, dims, keepdim = a
    return g.reduce("ReduceProd", x.name, dims, keepdim, name="prod")


def _amax(g, node, a):
    x, dims, keepdim, op = a
    return g.reduce(
        "ReduceMax" if op == "max" else "ReduceMin", x.name, dims, keepdim, name=f"a{op}"
    )


def _logsumexp(g, node, a):
    x, dims, keepdim = a
    if not dims:
        return g.node("Identity", [x.name], name="logsumexp")
    return g.reduce("ReduceLogSumExp", x.name, dims, keepdim, name="logsumexp")


def _reduce_no_grad(g, node, a):
    x, op, dims, keepdim, dtype = a
    if op in ("argmax", "argmin"):
        (dim,) = dims
        return g.node(
            "ArgMax" if op == "argmax" else "ArgMin",
            [x.name],
            axis=int(dim),
            keepdims=int(keepdim),
            name=op,
        )
    if op not in _REDUCE:
        raise OnnxExportError(f"the reduction {op!r} has no ONNX translation yet")
    out = g.reduce(_REDUCE[op], x.name, dims, keepdim, name=op)
    return out if dtype is None or dtype is x.dtype else g.node("Cast", [out], to=onnx_dtype(dtype))


def _max_dim(g, node, a):
    # values of max(dim)/min(dim); the indices are the recorded argmax/argmin's own node
    x, dim, keepdim, _, op = a
    return g.reduce(_REDUCE[op], x.name, [dim], keepdim, name="max_dim")


def _softmax(g, node, a):
    x, dim, log = a
    return g.node("LogSoftmax" if log else "Softmax", [x.name], axis=int(dim), name=node.op)


def _layer_norm(g, node, a):
    x, weight, bias, eps = a
    n = x.shape[-1]
    w = weight.name if weight is not None else g.const(np.ones(n, dtype=x.dtype.np), "ones")
    b = bias.name if bias is not None else g.const(np.zeros(n, dtype=x.dtype.np), "zeros")
    if g.opset >= 17:
        return g.node(
            "LayerNormalization", [x.name, w, b], axis=-1, epsilon=float(eps), name="layer_norm"
        )
    mean = g.reduce("ReduceMean", x.name, [-1], True)
    d = g.node("Sub", [x.name, mean])
    var = g.reduce("ReduceMean", g.node("Mul", [d, d]), [-1], True)
    rstd = g.node("Reciprocal", [g.node("Sqrt", [g.node("Add", [var, g.scalar(eps, x.dtype)])])])
    return g.node("Add", [g.node("Mul", [g.node("Mul", [d, rstd]), w]), b], name="layer_norm")


def _basic_index(g, node, a):
    x, index = a
    out, shape, dyn, dim = x.name, list(x.shape), [k in x.dyn for k in range(x.ndim)], 0
    for item in index:
        if item is None:
            out = g.node("Unsqueeze", [out, g.ints([dim], "axes")])
            shape.insert(dim, 1)
            dyn.insert(dim, False)
            dim += 1
        elif isinstance(item, slice):
            size = shape[dim]
            start, stop, step = item.indices(size)
            n = max(0, (stop - start + step - 1) // step)
            if (start, n, step) != (0, size, 1):
                if dyn[dim] and item.stop is None and step == 1 and start >= 0:
                    stop = INT64_MAX  # "to the end", whatever the size at run time
                elif dyn[dim]:
                    raise OnnxExportError(f"the slice {item} of a dynamic axis cannot be exported")
                out = g.node(
                    "Slice",
                    [
                        out,
                        g.ints([start], "starts"),
                        g.ints([stop], "ends"),
                        g.ints([dim], "axes"),
                        g.ints([step], "steps"),
                    ],
                )
                shape[dim] = n
            dim += 1
        else:  # an int drops the dimension
            out = g.node(
                "Gather", [out, g.const(np.asarray(int(item), dtype=np.int64), "index")], axis=dim
            )
            del shape[dim], dyn[dim]
    if set(g.out_dyn) != {k for k, d in enumerate(dyn) if d}:
        raise OnnxExportError(
            f"indexing {x.shape} gives a result whose size depends on a dynamic axis; "
            "it cannot be exported"
        )
    return out if out != x.name else g.node("Identity", [out], name="getitem")


def _index_select(g, node, a):
    x, dim, index = a
    return g.node("Gather", [x.name, index.name], axis=int(dim), name="index_select")


def _embedding(g, node, a):
    weight, indices, _padding_idx = a  # padding_idx shapes only the gradient
    return g.node("Gather", [weight.name, indices.name], axis=0, name="embedding")


def _gather(g, node, a):
    x, dim, index = a
    return g.node("GatherElements", [x.name, index.name], axis=int(dim), name="gather")


def _cols(g, x, lo, hi):
    """``x[..., lo:hi]``."""
    return g.node(
        "Slice",
        [x.name, g.ints([lo], "starts"), g.ints([hi], "ends"), g.ints([x.ndim - 1], "axes")],
    )


def _gru_cell(g, node, a):
    # the fused GRU gates (torchlight.tensor.functions.recurrent) written out: r, z, n, h'
    gi, gh, h = a
    H = h.shape[-1]
    add = [
        g.node("Add", [_cols(g, gi, k * H, (k + 1) * H), _cols(g, gh, k * H, (k + 1) * H)])
        for k in range(2)
    ]
    r, z = g.node("Sigmoid", [add[0]]), g.node("Sigmoid", [add[1]])
    n = g.node(
        "Tanh",
        [
            g.node(
                "Add", [_cols(g, gi, 2 * H, 3 * H), g.node("Mul", [r, _cols(g, gh, 2 * H, 3 * H)])]
            )
        ],
    )
    return g.node("Add", [n, g.node("Mul", [z, g.node("Sub", [h.name, n])])], name="gru_cell")


def _lstm_cell(g, node, a):
    # the fused LSTM gates written out; the result stacks [h'; c'] as (2, N, H), like the Function
    gi, gh, c = a
    H = c.shape[-1]
    gates = g.node("Add", [gi.name, gh.name])
    parts = [
        g.node(
            "Slice",
            [
                gates,
                g.ints([k * H], "starts"),
                g.ints([(k + 1) * H], "ends"),
                g.ints([gi.ndim - 1], "axes"),
            ],
        )
        for k in range(4)
    ]
    i, f, o = (g.node("Sigmoid", [parts[k]]) for k in (0, 1, 3))
    gg = g.node("Tanh", [parts[2]])
    c1 = g.node("Add", [g.node("Mul", [f, c.name]), g.node("Mul", [i, gg])])
    h1 = g.node("Mul", [o, g.node("Tanh", [c1])])
    axes = g.ints([0], "axes")
    return g.node(
        "Concat",
        [g.node("Unsqueeze", [h1, axes]), g.node("Unsqueeze", [c1, axes])],
        axis=0,
        name="lstm_cell",
    )


def _identity(g, node, a):
    return g.node("Identity", [a[0].name], name=node.op)


OPS = {
    "Add": _binary("Add"),
    "Sub": _binary("Sub"),
    "Mul": _binary("Mul"),
    "Div": _binary("Div"),
    "Pow": _binary("Pow"),
    "Maximum": _binary("Max"),
    "Minimum": _binary("Min"),
    "MatMul": _binary("MatMul"),
    "Linear": _linear,
    "Compare": _compare,
    "Unary": _unary,
    "MapNoGrad": _unary,
    "Cast": _cast,
    "CastNoGrad": _cast,
    "Clamp": _clamp,
    "LeakyReLU": _leaky_relu,
    "Where": _where,
    "MaskedFill": _masked_fill,
    "View": _view,
    "Permute": _permute,
    "Expand": _expand,
    "Restride": _restride,
    "Unfold": _unfold,
    "WindowsView": _windows,
    "WindowMax": _window_reduce("ReduceMax", "window_max"),
    "WindowSum": _window_reduce("ReduceSum", "window_sum"),
    "Cat": _cat,
    "Stack": _stack,
    "Roll": _roll,
    "Pad": _pad,
    "Sum": _sum,
    "Mean": _mean,
    "Prod": _prod,
    "AMax": _amax,
    "LogSumExp": _logsumexp,
    "ReduceNoGrad": _reduce_no_grad,
    "MaxDim": _max_dim,
    "Softmax": _softmax,
    "LayerNorm": _layer_norm,
    "BasicIndex": _basic_index,
    "IndexSelect": _index_select,
    "Embedding": _embedding,
    "Gather": _gather,
    "_Clone": _identity,
    "FusedGRUCell": _gru_cell,
    "FusedLSTMCell": _lstm_cell,
}
"""Function class name -> translation ``fn(g, node, args) -> name`` (see the module docstring)."""
