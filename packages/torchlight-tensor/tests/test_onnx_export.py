"""``torchlight.onnx.export``: every entry of the op table, run by onnxruntime, agrees with eager
torchlight (1e-5); dynamic axes accept other sizes; what cannot be exported is refused with a
clear error. onnx and onnxruntime are optional: the tests skip without them, except the one that
checks ``torchlight.onnx`` imports without onnx.
"""

import subprocess
import sys

import numpy as np
import pytest

import torchlight as tl

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from torchlight.onnx import OnnxExportError, export  # noqa: E402
from torchlight.onnx.ops import OPS  # noqa: E402

RNG = np.random.default_rng(0)


def _run(fn, args, new_args=None, **kw):
    """Export ``fn(*args)``; run the graph on ``new_args`` (default: ``args``) in onnxruntime and
    compare with eager torchlight on the same arguments."""
    proto = export(fn, tuple(args), None, **kw)
    sess = ort.InferenceSession(proto.SerializeToString())
    new_args = args if new_args is None else new_args
    feeds = {i.name: a.to_numpy() for i, a in zip(sess.get_inputs(), new_args)}
    got = sess.run(None, feeds)
    with tl.no_grad():
        want = fn(*new_args)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.to_numpy()
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return proto


def _f(*shape):
    return tl.tensor(RNG.uniform(-2, 2, shape).astype(np.float32))


def _pos(*shape):
    return tl.tensor(RNG.uniform(0.5, 2, shape).astype(np.float32))


UNARY = [
    "neg",
    "abs",
    "sign",
    "exp",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "square",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "silu",
    "softplus",
    "log",
]


@pytest.mark.parametrize("name", UNARY + ["gelu", "gelu_tanh"])
def test_unary(name):
    if name == "gelu":
        fn = lambda x: x.gelu()  # noqa: E731
    elif name == "gelu_tanh":
        fn = lambda x: x.gelu(approximate="tanh")  # noqa: E731
    else:
        fn = lambda x: getattr(x, name)()  # noqa: E731
    x = _pos(3, 4) if name in ("sqrt", "rsqrt", "log", "reciprocal") else _f(3, 4)
    _run(fn, [x])


@pytest.mark.parametrize(
    "op", ["add", "sub", "mul", "truediv", "pow", "maximum", "minimum", "matmul"]
)
def test_binary(op):
    import operator

    fn = {"maximum": lambda a, b: a.maximum(b), "minimum": lambda a, b: a.minimum(b)}.get(
        op
    ) or getattr(operator, op)
    a, b = (_f(2, 3, 4), _f(2, 4, 5)) if op == "matmul" else (_pos(2, 3, 4), _f(3, 1))
    _run(fn, [a, b])


def test_comparisons_logic_casts_and_scalars():
    def fn(a, b):
        c = (a < b) & (a <= 0.5) | (a > b) & ~(a >= 1.0)
        d = (a == b) | (a != 0.25)
        return c, d, c.to(tl.float32) * 2.0 + 1, (a * 3).long(), a.double()

    _run(fn, [_f(3, 4), _f(3, 4)])


def test_clamp_where_masked_fill():
    def fn(x, m):
        return (
            x.clamp(-0.5, 0.5),
            x.clamp(min=0.1),
            x.leaky_relu(0.2),
            tl.where(m, x, -x),
            x.masked_fill(m, float("-inf")),
        )

    _run(fn, [_f(3, 4), tl.tensor(RNG.random((3, 4)) < 0.5)])


def test_shapes_views_and_indexing():
    def fn(x):
        return (
            x.reshape(4, 6).T,
            x.permute(2, 0, 1),
            x.unsqueeze(1).expand(2, 5, 3, 4),
            x[:, 1:3, ::2].squeeze(),
            x[1],
            x[..., None, -1],
            x[:, -2:, 1:3].contiguous(),
            x.flatten(1),
            tl.cat([x, x * 2], 1),
            tl.stack([x[:, :, 1:3], x[:, :, ::2] * 2], 1),
            tl.stack([x[0], x[1]], -1),
            x.unfold(2, 2, 1),
            tl.pad(x, (1, 2)),
            x.roll(1, 1),
            x.roll((-1, 2), (0, 2)),
        )

    _run(fn, [_f(2, 3, 4)])


def test_windows_and_window_max():
    """The im2col view of convolutions and the max over windows of max pooling (strides,
    dilation, leading dims of any count), as gathers along each spatial dim."""
    from torchlight.tensor.functions.windows import unfold_windows, window_max, window_sum

    def fn(x):
        return (
            unfold_windows(x, (3, 2), (1, 2), (1, 2)),
            unfold_windows(x[0], (4,), (3,), (1,)),
            window_max(x, (2, 3), (2, 1), (2, 1), (3, 4)),
            window_max(x, (2, 2), (2, 2), (1, 1), (3, 3)),
            window_sum(x, (3, 2), (2, 2), (1, 2), (3, 2)),
        )

    _run(fn, [_f(2, 3, 7, 6)])


def test_reductions():
    def fn(x):
        return (
            x.sum(1),
            x.sum((0, 2), keepdim=True),
            x.mean(-1),
            x.var(1),
            x.prod(0),
            x.amax(-1),
            x.amin((0, 1)),
            x.argmax(1),
            x.argmin(-1, keepdim=True),
            x.max(2).values,
            x.min(0).values,
            x.softmax(1),
            x.log_softmax(-1),
            x.logsumexp(1),
        )

    _run(fn, [_f(2, 3, 4)])


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_layer_norm_and_reductions_in_every_supported_opset(opset):
    w, b = _f(4), _f(4)

    def fn(x):
        return tl.layer_norm(x, (4,), w, b), tl.layer_norm(x, (4,)), x.amax(1), x.mean(0)

    proto = _run(fn, [_f(3, 4)], opset_version=opset)
    assert proto.opset_import[0].version == opset
    assert ("LayerNormalization" in {n.op_type for n in proto.graph.node}) == (opset >= 17)


def test_index_select_gather_embedding():
    table = _f(10, 3)

    def fn(ids, x):
        return tl.embedding(ids, table), x.index_select(1, ids[0]), x.gather(1, ids[:, :2])

    ids = tl.tensor(RNG.integers(0, 3, (2, 3)))
    _run(fn, [ids, _f(2, 3)])


def test_parameters_become_named_initializers_and_weight_transposes_are_folded():
    w = tl.randn(4, 3, requires_grad=True)

    def fn(x):
        return x @ w.T

    proto = _run(fn, [_f(5, 3)])
    assert [n.op_type for n in proto.graph.node] == ["MatMul", "Identity"]
    unfolded = export(fn, (_f(5, 3),), None, do_constant_folding=False)
    assert [n.op_type for n in unfolded.graph.node] == ["Transpose", "MatMul", "Identity"]


@pytest.mark.parametrize("bias", [True, False])
def test_linear_becomes_a_gemm_or_a_matmul(bias):
    from torchlight.tensor.extension import linear

    w, b = _f(4, 3), (_f(4) if bias else None)

    def fn(x, x3):
        return linear(x, w, b), linear(x3, w, b)  # 3-D input: one MatMul over the batch

    proto = _run(
        fn,
        [_f(5, 3), _f(2, 5, 3)],
        [_f(6, 3), _f(3, 5, 3)],
        input_names=["x", "x3"],
        dynamic_axes={"x": [0], "x3": [0]},
    )
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Gemm") == 1 and ops.count("MatMul") == 1 and "Reshape" not in ops
    assert ops.count("Add") == (1 if bias else 0)


def test_a_weight_broadcast_over_a_dynamic_batch_into_a_product():
    """``w @ x`` with ``w (1, 4, 3)`` and ``x (B, 1, 3, 5)``: the recorded expand of ``w`` to the
    dynamic batch stays 1 there (MatMul broadcasts); an expand read by anything else is refused."""
    w = _f(1, 4, 3)
    _run(lambda x: w @ x, [_f(2, 1, 3, 5)], [_f(6, 1, 3, 5)], dynamic_axes={"input": [0]})
    with pytest.raises(OnnxExportError, match="creates a dynamic size"):
        export(
            lambda x: w.expand(x.shape[0], 1, 4, 3) + x[..., :1],
            (_f(2, 1, 4, 3),),
            None,
            dynamic_axes={"input": [0]},
        )


def test_dynamic_axes_accept_other_sizes():
    def fn(x, ids):
        h = (x.reshape(-1, 4) * 2).reshape(x.shape[0], 3, 4)  # (B, 3, 4) -> (B·3, 4) -> back
        return h.softmax(-1) + tl.embedding(ids, _TABLE).unsqueeze(1), h[:, 1:].sum(1)

    args = [_f(5, 3, 4), tl.tensor(RNG.integers(0, 6, (5,)))]
    new = [_f(7, 3, 4), tl.tensor(RNG.integers(0, 6, (7,)))]
    proto = _run(
        fn,
        args,
        new,
        input_names=["x", "ids"],
        output_names=["y", "s"],
        dynamic_axes={"x": {0: "batch"}, "ids": {0: "batch"}, "y": {0: "batch"}},
    )
    dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", 3, 4]
    out_dims = [
        d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim
    ]
    assert out_dims == ["batch", 3, 4]


_TABLE = tl.randn(6, 4)


def test_writes_to_a_file(tmp_path):
    path = tmp_path / "f.onnx"
    export(lambda x: x.relu() * 2, (_f(2, 2),), str(path))
    onnx.checker.check_model(onnx.load(str(path)))


def test_an_op_without_translation_is_named():
    with pytest.raises(OnnxExportError, match="no ONNX translation"):
        export(lambda x: x[tl.tensor([0, 1])], (_f(3, 2),), None)


def test_a_constant_built_from_a_dynamic_size_is_refused():
    with pytest.raises(OnnxExportError, match="constant"):
        export(
            lambda x: x + tl.zeros(x.shape[0], 1), (_f(3, 2),), None, dynamic_axes={"input": [0]}
        )


def test_a_loop_over_a_dynamic_axis_is_refused():
    def fn(x):
        return tl.stack([x[i] * 2 for i in range(x.shape[0])])

    with pytest.raises(OnnxExportError, match="different ops"):
        export(fn, (_f(3, 2),), None, dynamic_axes={"input": [0]})


def test_bad_names_and_opset():
    with pytest.raises(OnnxExportError, match="neither an input nor an output"):
        export(lambda x: x * 2, (_f(2),), None, dynamic_axes={"nope": [0]})
    with pytest.raises(OnnxExportError, match="names given"):
        export(lambda x: x * 2, (_f(2),), None, input_names=["a", "b"])
    with pytest.raises(OnnxExportError, match="too old"):
        export(lambda x: x * 2, (_f(2),), None, opset_version=11)


def test_fused_recurrent_cells():
    from torchlight.tensor.functions.recurrent import gru_cell_gates, lstm_cell_gates

    n, h = 3, 4
    _run(lambda gi, gh, s: gru_cell_gates(gi, gh, s), (_f(n, 3 * h), _f(n, 3 * h), _f(n, h)))
    proto = _run(
        lambda gi, gh, c: lstm_cell_gates(gi, gh, c),
        (_f(n, 4 * h), _f(n, 4 * h), _f(n, h)),
        (_f(5, 4 * h), _f(5, 4 * h), _f(5, h)),
        input_names=["gi", "gh", "c"],
        dynamic_axes={"gi": [0], "gh": [0], "c": [0]},
    )  # another batch size at run time
    assert len(proto.graph.output) == 2  # (h', c')


def test_every_table_entry_is_exercised_by_these_tests():
    # the op table and the tests above must not drift apart
    exercised = {
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Maximum",
        "Minimum",
        "MatMul",
        "Linear",
        "Compare",
        "Unary",
        "MapNoGrad",
        "Cast",
        "CastNoGrad",
        "Clamp",
        "LeakyReLU",
        "Where",
        "MaskedFill",
        "View",
        "Permute",
        "Expand",
        "Restride",
        "Unfold",
        "WindowsView",
        "WindowMax",
        "WindowSum",
        "Cat",
        "Stack",
        "Roll",
        "Pad",
        "Sum",
        "Mean",
        "Prod",
        "AMax",
        "LogSumExp",
        "ReduceNoGrad",
        "MaxDim",
        "Softmax",
        "LayerNorm",
        "BasicIndex",
        "IndexSelect",
        "Embedding",
        "Gather",
        "_Clone",
        "FusedGRUCell",
        "FusedLSTMCell",
    }
    assert set(OPS) == exercised


def test_torchlight_onnx_imports_without_onnx():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'onnx' or name.startswith('onnx.'):\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import torchlight as tl, torchlight.onnx\n"
        "try:\n"
        "    torchlight.onnx.export(lambda x: x, (tl.ones(1),), None)\n"
        "except ImportError as e:\n"
        "    assert 'pip install onnx' in str(e), e\n"
        "    print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
