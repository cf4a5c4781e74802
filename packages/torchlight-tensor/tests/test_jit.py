"""torchlight.jit: tracing to a tape, replaying it (other batch sizes, new weights), inspecting
it, fusing elementwise chains, and the error paths."""

import numpy as np
import pytest
from tltensor_helpers import installed, needs

import torchlight as tl
from torchlight.jit import TraceError

HAS_NUMBA = installed("numba")
HAS_NUMBA_BACKEND = installed("torchlight-backend-numba")


def needs_numba(test):
    """numba installed; and slow, since each generated kernel takes a second or two to compile."""
    return pytest.mark.slow(pytest.mark.skipif(not HAS_NUMBA, reason=needs("numba"))(test))


if installed("torchlight-nn"):  # installed but failing to import is an error, not a skip
    import torchlight.nn as nn
else:
    nn = None
needs_nn = pytest.mark.skipif(nn is None, reason=needs("torchlight-nn"))


def rand(*shape, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return tl.tensor((rng.standard_normal(shape) * scale).astype(np.float32))


def param(*shape, seed=0, scale=0.3):
    return rand(*shape, seed=seed, scale=scale).requires_grad_()


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(
        np.asarray(a.to_numpy()), np.asarray(b.to_numpy()), rtol=rtol, atol=atol
    )


def eager(fn, *xs):
    with tl.no_grad():
        return fn(*xs)


# --- models written with raw tensors ----------------------------------------------------------
class MLP:
    def __init__(self, d_in=6, d_h=10, d_out=4):
        self.w1, self.b1 = param(d_in, d_h, seed=1), param(d_h, seed=2)
        self.w2, self.b2 = param(d_h, d_out, seed=3), param(d_out, seed=4)

    def parameters(self):
        return [self.w1, self.b1, self.w2, self.b2]

    def __call__(self, x):
        h = (x @ self.w1 + self.b1).relu()
        return h @ self.w2 + self.b2


class CNN:
    """conv 3x3 (unfold + matmul) -> relu -> 2x2 mean pool -> flatten -> linear."""

    def __init__(self, c_in=2, c_out=5, size=6, classes=3):
        self.w = param(c_out, c_in * 9, seed=5)
        self.b = param(c_out, seed=6)
        n = c_out * ((size - 2) // 2) ** 2
        self.fc = param(n, classes, seed=7)

    def __call__(self, x):
        n, c, h, w = x.shape
        patches = x.unfold(2, 3, 1).unfold(3, 3, 1)  # (n, c, h-2, w-2, 3, 3)
        patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(n, (h - 2) * (w - 2), c * 9)
        y = (patches @ self.w.T + self.b).relu()  # (n, L, c_out)
        y = y.permute(0, 2, 1).reshape(n, -1, h - 2, w - 2)
        y = y.reshape(n, y.shape[1], (h - 2) // 2, 2, (w - 2) // 2, 2).mean((3, 5))
        return y.flatten(1) @ self.fc


class Block:
    """A pre-norm transformer block: causal self-attention + a GELU MLP, both residual."""

    def __init__(self, d=8, heads=2, t=5):
        self.d, self.heads = d, heads
        self.ln1_w, self.ln1_b = param(d, seed=8) + 1.0, param(d, seed=9)
        self.ln2_w, self.ln2_b = param(d, seed=10) + 1.0, param(d, seed=11)
        self.qkv = param(d, 3 * d, seed=12)
        self.proj = param(d, d, seed=13)
        self.fc1, self.fc2 = param(d, 4 * d, seed=14), param(4 * d, d, seed=15)
        self.mask = tl.tensor(np.tril(np.ones((t, t), dtype=bool)))

    def __call__(self, x):
        b, t, d = x.shape
        h = tl.layer_norm(x, (d,), self.ln1_w, self.ln1_b)
        q, k, v = (h @ self.qkv).split(d, dim=-1)
        q = q.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        att = att.masked_fill(~self.mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + y @ self.proj
        h = tl.layer_norm(x, (d,), self.ln2_w, self.ln2_b)
        return x + (h @ self.fc1).gelu() @ self.fc2


def gelu_tanh(x):
    return 0.5 * x * (1 + (0.79788456 * (x + 0.044715 * x**3)).tanh())


# --- op counts --------------------------------------------------------------------------------
def test_op_counts_of_raw_mlp():
    mlp = MLP()
    tape = tl.jit.trace(mlp, rand(3, 6))
    assert tape.count_ops() == {"matmul": 2, "add": 2, "relu": 1}
    assert len(tape.inputs) == 1 and len(tape.parameters) == 4 and not tape.constants
    assert [v.tensor for v in tape.parameters] == mlp.parameters()  # referenced, not copied


def test_op_counts_of_gelu_and_the_transformer_block():
    assert tl.jit.trace(gelu_tanh, rand(4, 4)).count_ops() == {
        "mul": 4,
        "add": 2,
        "pow": 1,
        "tanh": 1,
    }
    counts = tl.jit.trace(Block(), rand(3, 5, 8)).count_ops()
    assert counts["matmul"] == 6 and counts["layer_norm"] == 2 and counts["softmax"] == 1
    assert counts["gelu"] == 1 and counts["masked_fill"] == 1 and counts["logical_not"] == 1


@needs_nn
def test_op_counts_of_nn_models():
    mlp = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 4))
    tape = tl.jit.trace(mlp, rand(3, 6))
    counts = tape.count_ops()
    assert counts["linear"] == 2 and counts["relu"] == 1 and counts["matmul"] == 0
    assert {v.name for v in tape.parameters} == {n for n, _ in mlp.named_parameters()}
    ln = tl.jit.trace(nn.LayerNorm(6), rand(3, 6)).count_ops()
    assert sum(ln.values()) >= 1 and (ln["layer_norm"] == 1 or ln["mean"] >= 1)
    conv = tl.jit.trace(nn.Conv2d(2, 3, 3), rand(2, 2, 5, 5)).count_ops()
    assert conv["matmul"] == 1 and conv["windows"] == 1


# --- replay equals eager ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, shape, other",
    [
        (MLP, (3, 6), (7, 6)),
        (CNN, (3, 2, 6, 6), (5, 2, 6, 6)),
        (Block, (3, 5, 8), (6, 5, 8)),
    ],
    ids=["mlp", "cnn", "transformer_block"],
)
def test_replay_equals_eager_at_traced_and_other_batch_size(make, shape, other):
    model = make()
    x = rand(*shape, seed=20)
    tape = tl.jit.trace(model, x)
    y = tape(x)
    assert not y.requires_grad and y.grad_fn is None  # no autograd graph
    close(y, eager(model, x))
    x2 = rand(*shape, seed=21)
    close(tape(x2), eager(model, x2))
    x3 = rand(*other, seed=22)
    y3 = tape(x3)
    assert y3.shape[0] == other[0]
    close(y3, eager(model, x3))


@needs_nn
def test_replay_of_nn_models_equals_eager():
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.LayerNorm(4 * 5 * 5),
        nn.Linear(4 * 5 * 5, 3),
    )
    model.eval()
    x = rand(3, 2, 5, 5, seed=30)
    tape = tl.jit.trace(model, x)
    close(tape(x), eager(model, x), rtol=1e-4, atol=1e-5)
    x2 = rand(6, 2, 5, 5, seed=31)
    close(tape(x2), eager(model, x2), rtol=1e-4, atol=1e-5)


def test_parameter_updates_are_seen_by_replay():
    mlp = MLP()
    x = rand(3, 6, seed=40)
    tape = tl.jit.trace(mlp, x)
    before = tape(x).to_numpy()
    loss = (mlp(x) ** 2).mean()
    loss.backward()
    with tl.no_grad():  # an optimizer step, in place
        for p in mlp.parameters():
            p.sub_(p.grad * 0.5)
    after = tape(x)
    assert not np.allclose(after.to_numpy(), before)
    close(after, eager(mlp, x))
    mlp.w2.data = rand(10, 4, seed=41)  # replacing the data of a parameter object is seen too
    close(tape(x), eager(mlp, x))


@needs_nn
def test_tracing_a_training_module_with_dropout_warns():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    with pytest.warns(UserWarning, match="eval"):
        tl.jit.trace(model, rand(3, 4))
    model.eval()
    tl.jit.trace(model, rand(3, 4))  # no warning


@needs_nn
def test_nn_parameter_updates_are_seen_by_replay():
    model = nn.Linear(4, 2)
    x = rand(3, 4, seed=42)
    tape = tl.jit.trace(model, x)
    with tl.no_grad():
        model.weight.mul_(2.0)
        model.bias.add_(1.0)
    close(tape(x), eager(model, x))


def test_ops_that_used_to_bypass_apply_are_recorded():
    """Comparisons, sign, logical_not, int casts, argmax, max(dim) indices, all/any, logsumexp
    and mean's divisor must follow the replayed inputs, not stay frozen as traced constants."""

    def fn(x, idx):
        pos = (x > 0).to(tl.float32)
        s = x.sign() * (~(x < -1)).to(tl.float32)
        am = x.argmax(-1).to(tl.float32)
        vals, ind = x.max(1)
        anyneg = (x < 0).any(1).to(tl.float32) + (x > -5).all(1).to(tl.float32)
        lse = x.logsumexp(1)
        picked = x[idx]  # advanced indexing by an input tensor
        n = x.mean() + x.var(0).sum()  # divisors follow the batch size
        return pos + s, am + ind.to(tl.float32) + vals + anyneg + lse, picked, n, x.sum(1).long()

    x = rand(4, 3, seed=50)
    idx = tl.tensor([0, 2])
    tape = tl.jit.trace(fn, x, idx)
    for shape, index in (((4, 3), [3, 1]), ((7, 3), [6, 0, 5])):
        x2 = rand(*shape, seed=51, scale=3.0)
        i2 = tl.tensor(index)
        for got, want in zip(tape(x2, i2), eager(fn, x2, i2)):
            assert got.dtype is want.dtype
            close(got, want)


def test_views_squeeze_unsqueeze_and_detach_replay_on_new_data():
    def fn(x):
        y = x.unsqueeze(0).squeeze(0).view(-1, 2).reshape(x.shape)
        return y.detach() * 2 + x.transpose(0, 1).contiguous().T

    x = rand(4, 6, seed=60)
    tape = tl.jit.trace(fn, x)
    x2 = rand(4, 6, seed=61)
    close(tape(x2), eager(fn, x2))
    x3 = rand(9, 6, seed=62)
    close(tape(x3), eager(fn, x3))


def test_data_dependent_control_flow_replays_the_traced_branch():
    def fn(x):
        if x.sum().item() > 0:  # evaluated once, while tracing
            return x * 2
        return x * -1

    tape = tl.jit.trace(fn, tl.ones(3))
    assert tape.count_ops() == {"mul": 1}
    close(tape(-tl.ones(3)), -tl.ones(3) * 2)  # the traced branch, not the eager one


def test_a_tape_replayed_inside_a_trace_is_recorded():
    mlp = MLP()
    inner = tl.jit.trace(mlp, rand(3, 6))
    outer = tl.jit.trace(lambda x: inner(x).tanh(), rand(3, 6))
    assert outer.count_ops() == {"matmul": 2, "add": 2, "relu": 1, "tanh": 1}
    x = rand(5, 6, seed=72)
    close(outer(x), eager(mlp, x).tanh())


def test_multiple_outputs_and_constants():
    c = tl.tensor([1.0, 2.0, 3.0])

    def fn(a, b):
        return {"sum": a + b * c, "parts": (a.exp(), [b - 1])}

    a, b = rand(2, 3, seed=70), rand(2, 3, seed=71)
    tape = tl.jit.trace(fn, a, b)
    assert len(tape.constants) == 2  # c and the scalar 1
    out = tape(b, a)
    want = eager(fn, b, a)
    close(out["sum"], want["sum"])
    close(out["parts"][0], want["parts"][0])
    close(out["parts"][1][0], want["parts"][1][0])


# --- inspection -------------------------------------------------------------------------------
def test_summary_and_dot():
    tape = tl.jit.trace(MLP(), rand(3, 6))
    text = tape.summary()
    for word in ("matmul", "relu", "FLOPs", "bytes", "(3, 10)"):
        assert word in text
    assert "5 ops" in text and "2 * 3 * 6 * 10" not in text
    assert str(2 * 3 * 6 * 10) in text  # the first matmul's FLOPs
    dot = tape.to_dot()
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert dot.count("->") == 2 * 4 + 1 + 1  # 4 binary ops, relu, output
    assert "input 0" in dot and "matmul" in dot


# --- fusion -----------------------------------------------------------------------------------
def test_fusion_groups_elementwise_chains():
    tape = tl.jit.trace(gelu_tanh, rand(4, 5))
    assert tape.fusion_groups() == [list(range(8))]
    block = tl.jit.trace(Block(), rand(3, 5, 8))
    assert all(len(g) >= 2 for g in block.fusion_groups())
    assert "F0" in tape.summary(fuse=True)


def test_numpy_backend_replays_op_by_op_when_asked_to_fuse():
    tape = tl.jit.trace(gelu_tanh, rand(4, 5))
    x = rand(4, 5, seed=80)
    close(tape.replay(x, fuse=True), eager(gelu_tanh, x))


@needs_numba
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_fused_and_unfused_replay_agree(dtype):
    x = rand(64, 33, seed=81, scale=2.0).to(dtype)
    tape = tl.jit.trace(gelu_tanh, x)
    x2 = (rand(64, 33, seed=82, scale=2.0) * rand(64, 33, seed=83)).to(dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is tl.float32 else dict(rtol=1e-12, atol=1e-13)
    close(tape.replay(x2, fuse="numba"), tape.replay(x2, fuse=False), **tol)
    close(tape.replay(x2, fuse="numba"), eager(gelu_tanh, x2), **tol)
    # another size and a non-contiguous input (falls back to op by op inside the group)
    x3 = rand(33, 10, seed=84).to(dtype).T
    close(tape.replay(x3, fuse="numba"), eager(gelu_tanh, x3), **tol)


@needs_numba
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the eager 0/0 below
def test_fused_replay_of_models_agrees():
    def fn(x):
        y = (x * 1.5 - 0.25).sigmoid() * x + (x / 3).exp()
        r = x.relu()
        return y.relu() - (x.maximum(y) ** 2).sqrt(), y * 2, r / (r * 0.0) + (-r).exp()  # inf, nan

    x = rand(16, 8, seed=85)
    tape = tl.jit.trace(fn, x)
    for got, want in zip(tape.replay(x, fuse="numba"), eager(fn, x)):
        close(got, want)
    block = Block()
    xb = rand(3, 5, 8, seed=86)
    tb = tl.jit.trace(block, xb)
    close(tb.replay(xb, fuse="numba"), tb.replay(xb, fuse=False), rtol=1e-5, atol=1e-5)


def test_backend_compile_capability_is_used(monkeypatch):
    """A backend that lists "compile" gets the chains through compile_elementwise."""
    from torchlight.tensor.backend import registry
    from torchlight.tensor.backend.numpy import NumpyBackend, as_array

    # register the test backend in copies of the registry tables: nothing leaks to other tests
    for table in ("_specs", "_loaded", "_broken"):
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))

    seen = []

    class Compiling(NumpyBackend):
        name = "jit-test-compiling"
        capabilities = NumpyBackend.capabilities | {"compile"}

        def compile_elementwise(self, chain):
            seen.append(chain)
            ufunc = {
                "add": np.add,
                "sub": np.subtract,
                "mul": np.multiply,
                "div": np.divide,
                "pow": np.power,
                "tanh": np.tanh,
                "exp": np.exp,
            }

            def kernel(ins, outs):
                arrays = [as_array(t) for t in ins]
                tmps = []
                for op, operands in chain.ops:
                    args = [arrays[k] if kind == "in" else tmps[k] for kind, k in operands]
                    tmps.append(ufunc[op](*args))
                for j, out in zip(chain.outputs, outs):
                    as_array(out)[...] = tmps[j]

            return kernel

    backend = Compiling()
    tl.register_backend(backend.name, backend)
    x = rand(4, 5, seed=87).to(backend.name)
    tape = tl.jit.trace(gelu_tanh, x)
    y = tape(x)
    close(tape(x), y)  # compiled once, cached
    assert len(seen) == 1 and [op for op, _ in seen[0].ops] == [
        "mul",
        "pow",
        "mul",
        "add",
        "mul",
        "tanh",
        "add",
        "mul",
    ]
    close(y, eager(gelu_tanh, x))
    close(tape.replay(x, fuse=False), y)


@pytest.mark.parametrize(
    "make, shape, other", [(MLP, (3, 6), (5, 6)), (Block, (3, 5, 8), (4, 5, 8))]
)
def test_replay_on_the_numba_backend(make, shape, other):
    if not HAS_NUMBA_BACKEND:
        pytest.skip(needs("torchlight-backend-numba"))
    tl.set_default_device("numba")  # the conftest fixture restores the default
    model = make()
    x, x2 = rand(*shape, seed=90), rand(*other, seed=91)
    assert x.device == "numba"
    tape = tl.jit.trace(model, x)
    close(tape(x), eager(model, x), rtol=1e-4, atol=1e-5)
    close(tape(x2), eager(model, x2), rtol=1e-4, atol=1e-5)


def test_numba_backend_replay_if_available():
    if not HAS_NUMBA_BACKEND:
        pytest.skip(needs("torchlight-backend-numba"))
    backend = tl.get_backend("numba")
    x = rand(8, 6, seed=88).to("numba")
    tape = tl.jit.trace(gelu_tanh, x)
    assert tape.backend is backend
    close(tape(x), tape.replay(x, fuse=False))
    close(tape(x), eager(gelu_tanh, rand(8, 6, seed=88)))


# --- error paths ------------------------------------------------------------------------------
def test_wrong_number_of_inputs():
    tape = tl.jit.trace(lambda a, b: a + b, rand(2), rand(2))
    with pytest.raises(TraceError, match="2 inputs, got 1"):
        tape(rand(2))
    with pytest.raises(tl.TorchlightError):
        tape(rand(2), rand(2), rand(2))


def test_a_shape_the_tape_cannot_take_names_the_op():
    tape = tl.jit.trace(MLP(), rand(3, 6))
    with pytest.raises(TraceError, match=r"op #0 'matmul'.*\(3, 6\).*\(3, 7\)"):
        tape(rand(3, 7))
    with pytest.raises(TraceError, match="dimensions"):
        tape(rand(3, 6, 1))
    with pytest.raises(TraceError, match="dtype"):
        tape(rand(3, 6).double())
    with pytest.raises(TraceError, match="must be a tensor"):
        tape([[0.0] * 6] * 3)


def test_an_op_that_cannot_follow_a_new_size_is_named():
    pos = rand(4, 3)  # a constant tied to the traced length 4

    def fn(x):
        return x.reshape(2, 6) + 1 if False else x + pos

    tape = tl.jit.trace(fn, rand(4, 3))
    with pytest.raises(TraceError, match="'add'"):
        tape(rand(5, 3))


def test_ambiguous_or_size_one_traces_are_refused():
    tape = tl.jit.trace(lambda x: x.sum(0), rand(4, 4))
    with pytest.raises(TraceError, match="distinct sizes"):
        tape(rand(5, 4))
    tape1 = tl.jit.trace(lambda x: x * 2, rand(1, 3))
    with pytest.raises(TraceError, match="size 1"):
        tape1(rand(4, 3))


def test_in_place_changes_during_trace_are_refused():
    def fn(x):
        h = x * 2
        h.add_(1)
        return h

    with pytest.raises(TraceError, match="in place"):
        tl.jit.trace(fn, rand(3))


def test_tracing_leaves_no_tracer_behind_and_is_reentrant_safe():
    from torchlight.autograd import Function

    def boom(x):
        raise ValueError("boom")

    with pytest.raises(ValueError):
        tl.jit.trace(boom, rand(2))
    assert Function.tracers == []
    assert tl.is_grad_enabled()
