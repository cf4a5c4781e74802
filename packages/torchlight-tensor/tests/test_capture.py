"""torchlight.jit.capture_step on raw tensor code: replays agree with eager execution and with a
numpy derivation, host state declared with count_up/guard follows the replays, and what cannot be
replayed is refused with a TraceError."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.jit import Live, TraceError, count_up, guard

STEPS = 50


def _data(seed=0, n=32, d=4):
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal((d, 1))
    out = []
    for _ in range(STEPS):
        x = rng.standard_normal((n, d)).astype(np.float32)
        out.append((x, (x @ w_true).astype(np.float32)))
    return out


def _sgd_momentum(lr=0.05, mu=0.9):
    """Linear regression trained by hand: autograd for the gradient, in-place momentum update."""
    w = tl.zeros(4, 1, requires_grad=True)
    buf = tl.zeros(4, 1)

    def step(x, y):
        w.grad = None
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with tl.no_grad():
            buf.mul_(mu).add_(w.grad)
            w.sub_(buf * lr)
        return loss

    return w, step


def _numpy_sgd_momentum(data, lr=0.05, mu=0.9):
    w = np.zeros((4, 1), np.float64)
    buf = np.zeros_like(w)
    losses = []
    for x, y in data:
        r = x @ w - y
        losses.append((r**2).mean())
        g = 2 * x.T @ r / r.size
        buf = mu * buf + g
        w = w - lr * buf
    return w, losses


def test_raw_training_step_matches_eager_and_numpy():
    data = _data()
    w_e, eager = _sgd_momentum()
    w_c, step = _sgd_momentum()
    captured = tl.jit.capture_step(step)
    le = [eager(tl.tensor(x), tl.tensor(y)).item() for x, y in data]
    lc = [captured(tl.tensor(x), tl.tensor(y)).item() for x, y in data]
    assert captured.state == "captured" and captured.n_calls > 0
    np.testing.assert_allclose(lc, le, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w_c.detach().numpy(), w_e.detach().numpy(), rtol=1e-6, atol=1e-6)
    w_np, l_np = _numpy_sgd_momentum(data)
    np.testing.assert_allclose(lc, l_np, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w_c.detach().numpy(), w_np, rtol=1e-4, atol=1e-5)
    assert w_c.grad is not None  # the gradient buffer is the captured one, refreshed each replay
    x, y = data[-1]
    np.testing.assert_allclose(
        w_c.grad.numpy(), 2 * x.T @ (x @ w_np_before(data) - y) / len(x), rtol=1e-4, atol=1e-5
    )


def w_np_before(data):
    return _numpy_sgd_momentum(data[:-1])[0]


def _adam(lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    """Raw Adam on f(p) = sum(p * x): the fused update with a step count from count_up."""
    from torchlight.tensor.extension import adam_step_

    p = tl.tensor([1.0, -2.0, 0.5], requires_grad=True)
    m, v, state = tl.zeros(3), tl.zeros(3), {"step": 0}

    def step(x):
        p.grad = None
        loss = (p * x).sum()
        loss.backward()
        t = count_up(state, "step")  # live in a capture: the bias correction follows the step
        with tl.no_grad():
            assert adam_step_(
                p,
                p.grad,
                m,
                v,
                lr=lr,
                beta1=b1,
                beta2=b2,
                eps=eps,
                weight_decay=0.0,
                step=t,
                decoupled=False,
            )
        return loss

    return p, state, step


def test_count_up_makes_the_step_count_live():
    xs = [np.random.default_rng(i).standard_normal(3).astype(np.float32) for i in range(STEPS)]
    p_e, _, eager = _adam()
    p_c, state, step = _adam()
    captured = tl.jit.capture_step(step)
    for x in xs:
        eager(tl.tensor(x))
        captured(tl.tensor(x))
    assert captured.state == "captured" and state["step"] == STEPS
    np.testing.assert_allclose(p_c.detach().numpy(), p_e.detach().numpy(), rtol=1e-6, atol=1e-6)
    # oracle: Adam's formula in numpy (float64)
    p, m, v = np.array([1.0, -2.0, 0.5]), np.zeros(3), np.zeros(3)
    for t, g in enumerate(xs, start=1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - 0.1 / (1 - 0.9**t) * m / (np.sqrt(v) / np.sqrt(1 - 0.999**t) + 1e-8)
    np.testing.assert_allclose(p_c.detach().numpy(), p, rtol=1e-4, atol=1e-5)


def test_live_arithmetic_and_resolution():
    box = {"n": 2}
    n = Live(lambda: box["n"])
    expr = (1 - 0.5**n) / (n + 1) * 3 - n
    assert tl.jit.live.resolve(expr) == pytest.approx((1 - 0.25) / 3 * 3 - 2)
    box["n"] = 3
    assert float(expr) == pytest.approx((1 - 0.125) / 4 * 3 - 3)
    assert tl.jit.live.resolve([n, "x"]) == [3, "x"]
    assert -n.value() == tl.jit.live.resolve(-n) and abs(-n).value() == 3
    assert n > 2 and int(n) == 3


def test_host_number_that_changes_per_step_is_refused():
    w = tl.zeros(3)
    i = [0]

    def step(x):
        i[0] += 1
        w.add_(x * (1.0 / i[0]))  # a plain Python number computed per step: baked into a capture
        return w

    captured = tl.jit.capture_step(step)
    captured(tl.ones(3))
    captured(tl.ones(3))
    # the constant 1.0 / i is written by the backend's fill: its value is a kernel argument
    with pytest.raises(TraceError, match="Python constant changed between steps"):
        captured(tl.ones(3))


def test_host_built_constant_that_changes_per_step_is_refused(fresh_registry):
    """A backend without ``fill`` gets its constants as host data copied in: a copy whose data
    changed between steps is refused, and says so."""
    from torchlight.tensor.backend.numpy import NumpyBackend

    class NoFill(NumpyBackend):
        name = device = "nofill"
        capabilities = NumpyBackend.capabilities - {"fill"}

    tl.register_backend("nofill", NoFill())
    w = tl.zeros(3, device="nofill")
    i = [0]

    def step(x):
        i[0] += 1
        w.add_(x * (1.0 / i[0]))
        return w

    captured = tl.jit.capture_step(step)
    captured(tl.ones(3, device="nofill"))
    captured(tl.ones(3, device="nofill"))
    with pytest.raises(TraceError, match="host data that changed between steps"):
        captured(tl.ones(3, device="nofill"))


def test_live_number_used_as_a_constant_is_guarded():
    state = {"t": 0}
    w = tl.zeros(3)

    def step(x):
        t = count_up(state, "t")
        w.add_(x * float(t > 0))  # float(bool): a constant, guarded while capturing
        return w

    captured = tl.jit.capture_step(step)
    for _ in range(5):
        captured(tl.ones(3))
    np.testing.assert_allclose(w.numpy(), 5.0)


def test_guard_stops_a_replay_whose_host_value_changed():
    cfg = {"scale": 2.0}
    w = tl.zeros(2)

    def step(x):
        guard(lambda: cfg["scale"], "the scale")
        w.add_(x * cfg["scale"])
        return w

    captured = tl.jit.capture_step(step)
    for _ in range(4):
        captured(tl.ones(2))
    np.testing.assert_allclose(w.numpy(), 8.0)
    cfg["scale"] = 3.0
    with pytest.raises(TraceError, match="the scale changed since the step was captured"):
        captured(tl.ones(2))
    np.testing.assert_allclose(w.numpy(), 8.0)  # nothing ran
    captured.reset()
    for _ in range(4):
        captured(tl.ones(2))
    np.testing.assert_allclose(w.numpy(), 20.0)


def test_item_inside_the_step_is_refused_at_the_read():
    w = tl.zeros(2)

    def step(x):
        if (x.sum() > 0).item():
            w.add_(x)
        return w

    captured = tl.jit.capture_step(step, warmup=0)
    with pytest.raises(TraceError, match=r"\.item\(\)"):
        captured(tl.ones(2))


def test_host_constant_modified_in_place_is_restored_each_replay():
    w = tl.zeros(2)

    def step(x):
        c = tl.tensor([1.0, 2.0])
        c.mul_(3.0)
        w.add_(c + x)
        return w

    captured = tl.jit.capture_step(step)
    for _ in range(6):
        captured(tl.ones(2))
    np.testing.assert_allclose(w.numpy(), [6 * 4.0, 6 * 7.0])


def test_returned_tensors_are_fresh_copies_and_structures_kept():
    def step(x, *, scale):
        y = x * 2.0
        return y, [y + 1.0, None]

    captured = tl.jit.capture_step(step)
    outs = [captured(tl.full((2,), float(i)), scale=1) for i in range(6)]
    for i, (y, (z, none)) in enumerate(outs):
        assert none is None and not y.requires_grad
        np.testing.assert_allclose(y.numpy(), 2.0 * i)
        np.testing.assert_allclose(z.numpy(), 2.0 * i + 1)


def test_keyword_tensors_and_non_contiguous_inputs():
    def step(a, *, b):
        return a @ b

    captured = tl.jit.capture_step(step)
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = rng.standard_normal((4, 3)).astype(np.float32)
        b = rng.standard_normal((2, 3)).astype(np.float32)
        out = captured(tl.tensor(a), b=tl.tensor(b).T)  # b is a transposed (strided) view
        np.testing.assert_allclose(out.numpy(), a @ b.T, rtol=1e-5, atol=1e-6)
    assert captured.state == "captured"


def test_changed_arguments_are_refused_with_what_changed():
    captured = tl.jit.capture_step(lambda x, k: x * k)
    for _ in range(3):
        captured(tl.ones(4, 2), 2)
    with pytest.raises(TraceError, match=r"shape \(4, 2\) float32.*got shape \(3, 2\)"):
        captured(tl.ones(3, 2), 2)
    with pytest.raises(TraceError, match=r"argument 0 .*float64"):
        captured(tl.ones(4, 2, dtype=tl.float64), 2)
    with pytest.raises(TraceError, match="argument 1 was captured as"):
        captured(tl.ones(4, 2), 3)
    np.testing.assert_allclose(captured(tl.ones(4, 2), 2).numpy(), 2.0)


def test_bad_uses_are_refused():
    p = tl.ones(2, requires_grad=True)
    with pytest.raises(TraceError, match="requires grad"):
        tl.jit.capture_step(lambda x: x * 2, warmup=0)(p)
    with pytest.raises(TraceError, match="returned float"):
        tl.jit.capture_step(lambda x: 1.5, warmup=0)(tl.ones(2))
    with pytest.raises(TraceError, match="warmup"):
        tl.jit.capture_step(lambda x: x, warmup=-1)
    with pytest.raises(TraceError, match="on_mismatch must be one of 'error', 'eager'"):
        tl.jit.capture_step(lambda x: x, on_mismatch="recapture")
    with pytest.raises(TraceError, match="max_captures must be >= 1"):
        tl.jit.capture_step(lambda x: x, on_mismatch="capture", max_captures=0)


def test_a_changed_shape_is_refused_with_the_way_to_capture_it_too():
    captured = tl.jit.capture_step(lambda x: x * 2)
    for _ in range(3):
        captured(tl.ones(4))
    with pytest.raises(TraceError, match='on_mismatch="capture"'):
        captured(tl.ones(5))


def test_one_capture_per_shape_each_replaying_its_own_calls():
    """on_mismatch="capture": every shape gets its warm-up, two recordings, then replays; the
    shapes may interleave, and each replay computes its own shape's values (numpy oracle)."""
    total = tl.zeros(1)

    def step(x):
        total.add_(x.sum(0, keepdim=True))  # state carried from step to step
        return x * 2 + total

    captured = tl.jit.capture_step(step, on_mismatch="capture")
    expect_total, lengths = 0.0, [3, 5, 3, 5, 2, 3, 5, 2, 2, 3, 5, 2, 5, 3]
    for i, n in enumerate(lengths):
        x = np.arange(n, dtype=np.float32) + i
        expect_total += x.sum()
        out = captured(tl.tensor(x))
        np.testing.assert_allclose(out.numpy(), x * 2 + expect_total, rtol=1e-6)
    assert captured.n_captures == 3  # 3, 5 and 2: each seen at least four times
    assert captured.state == "captured" and captured.n_calls > 0
    captured.reset()
    assert captured.n_captures == 0 and captured.state == "warmup"


def test_one_capture_per_signature_takes_unhashable_arguments():
    captured = tl.jit.capture_step(lambda x, scales: x * scales[0], on_mismatch="capture")
    for _ in range(4):
        for scales in ([2.0], [3.0]):  # a list: the signature cannot be a dict key
            np.testing.assert_allclose(captured(tl.ones(2), scales).numpy(), scales[0])
    assert captured.n_captures == 2


def test_past_max_captures_other_shapes_run_eagerly_with_one_warning():
    captured = tl.jit.capture_step(lambda x: x + 1, on_mismatch="capture", max_captures=2)
    with pytest.warns(RuntimeWarning, match="max_captures=2.*run eagerly") as seen:
        for _ in range(4):
            for n in (2, 3, 4):
                np.testing.assert_allclose(captured(tl.zeros(n)).numpy(), np.ones(n))
    assert len(seen) == 1 and captured.n_captures == 2
    assert seen[0].filename == __file__  # the warning points at the caller's line


def test_decorator_forms_and_repr():
    @tl.jit.capture_step
    def plain(x):
        return x + 1.0

    @tl.jit.capture_step(warmup=3)
    def later(x):
        return x + 1.0

    assert plain.__name__ == "plain" and later.warmup == 3
    for _ in range(3):
        plain(tl.ones(1))
        later(tl.ones(1))
    assert plain.state == "captured" and later.state == "recording"
    assert "plain" in repr(plain) and "captured" in repr(plain)


# --- fuse=True: runs of elementwise calls as one compiled kernel ---------------------------------
@pytest.fixture
def compiling(fresh_registry):
    """A numpy backend with a ``"compile"`` capability whose kernels interpret the chain with
    numpy op by op (an oracle for the planning: which calls join a chain, what is written)."""
    from torchlight.tensor.backend.numpy import NumpyBackend
    from torchlight.tensor.storage import TensorData

    class Compiling(NumpyBackend):
        name = "npcompile"
        device = "npcompile"
        capabilities = NumpyBackend.capabilities | {"compile"}

        def __init__(self):
            self.chains, self.launches = [], 0

        def compile_elementwise(self, chain):
            self.chains.append(chain)

            def kernel(ins, outs):
                self.launches += 1
                n = outs[0].size
                src = [np.array(v.storage[v.offset : v.offset + v.size]) for v in ins]
                tmps = []
                for op, operands in chain.ops:
                    views = []
                    for kind, k in operands:
                        a = src[k] if kind == "in" else tmps[k]
                        a = np.ascontiguousarray(np.broadcast_to(a, (n,)))
                        views.append(TensorData(a, (n,)))
                    out = TensorData(np.empty(n, chain.dtype.np), (n,))
                    if len(views) == 1:
                        NumpyBackend.map(self, op, views[0], out)
                    else:
                        NumpyBackend.zip(self, op, views[0], views[1], out)
                    tmps.append(out.storage)
                for o, j in zip(outs, chain.outputs):
                    o.storage[o.offset : o.offset + n] = tmps[j]

            return kernel

    backend = Compiling()
    tl.register_backend("npcompile", backend)
    return backend


def _run(step, fuse, xs):
    captured = tl.jit.capture_step(step, fuse=fuse)
    return [captured(x).numpy().copy() for x in xs], captured


def _eager_and_fused(make_w, body, n):
    """``body(x, w)`` captured without and with fusion over ``n`` inputs of ``w``'s size, each
    way on a fresh ``w = make_w()``: ``{fuse: (outputs, final w)}`` and the fused capture."""
    results = {}
    for fuse in (False, True):
        w = make_w()
        xs = [
            tl.tensor(np.linspace(-1, 1, w.shape[0], dtype=np.float32) * i, device="npcompile")
            for i in range(n)
        ]
        outs, captured = _run(lambda x, w=w: body(x, w), fuse, xs)
        results[fuse] = (outs, w.numpy().copy())
    return results, captured


def test_fused_chain_matches_op_by_op(compiling):
    def step(x, w):
        y = (x * 2.0 + 1.0).tanh() * x
        w.mul_(0.5).add_(y)  # w written twice: the kernel must leave the last value
        return y

    results, captured = _eager_and_fused(lambda: tl.zeros(6, device="npcompile"), step, 6)
    fused = [c for c in captured.calls if type(c).__name__ == "FusedCall"]
    assert len(fused) == 1 and len(fused[0].calls) == 6
    assert [op for op, _ in fused[0].chain.ops] == ["mul", "add", "tanh", "mul", "mul", "add"]
    assert compiling.launches == 3  # one kernel per replay
    for a, b in zip(results[True][0], results[False][0]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(results[True][1], results[False][1], rtol=1e-6)
    x = np.linspace(-1, 1, 6)
    w = np.zeros(6)
    for i in range(6):
        w = 0.5 * w + np.tanh(2 * x * i + 1) * x * i
    np.testing.assert_allclose(results[True][1], w, rtol=1e-5, atol=1e-6)


def test_a_fill_between_fused_ops_goes_ahead_only_when_the_run_never_touched_it(compiling):
    """The constants of ``x * 2.0 + 1.0`` are fills of fresh storage: issued before the run, which
    stays one chain. ``w[:] = 3.0`` fills a storage the run has written: it ends the run there
    (moved ahead, the run's later ops would read the 3.0 too early, and its writes would cover it)."""

    def step(x, w):
        w.mul_(x * 2.0 + 1.0)
        w[:] = 3.0
        w.add_(x)
        return w * 1.0

    results, captured = _eager_and_fused(lambda: tl.ones(4, device="npcompile"), step, 4)
    for a, b in zip(results[True][0], results[False][0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(results[True][0][-1], 3.0 + np.linspace(-1, 1, 4) * 3, rtol=1e-6)
    names = [
        type(c).__name__ if type(c).__name__ == "FusedCall" else c.name for c in captured.calls
    ]
    first_fill_of_w = names.index("fill", names.index("FusedCall"))
    assert "FusedCall" in names[:first_fill_of_w]  # the constants' fills did not end the first run


def test_shifted_views_of_one_storage_are_not_fused(compiling):
    w = tl.tensor(np.arange(5.0), device="npcompile")

    def step(x):
        t = w[1:] * x  # reads w at offset 1 ...
        w[:-1].add_(
            t
        )  # ... then writes it at offset 0: element i of one is not element i of the other
        return t

    captured = tl.jit.capture_step(step, fuse=True)
    ref = np.arange(5.0)
    for _ in range(5):
        captured(tl.full((4,), 2.0, device="npcompile"))
        ref[:-1] = ref[:-1] + 2.0 * ref[1:]
    assert not [c for c in captured.calls if type(c).__name__ == "FusedCall"]
    np.testing.assert_allclose(w.numpy(), ref)


def test_guard_sees_the_count_of_the_step_it_guards():
    """A branch on a live count flips exactly when eager execution would take the other branch."""
    state = {"t": 0}
    w = tl.zeros(2)

    def step(x):
        t = count_up(state, "t")
        w.add_(x * (2.0 if t > 4 else 1.0))
        return w

    captured = tl.jit.capture_step(step)
    for _ in range(4):  # warm-up, two recordings, one replay (t = 4)
        captured(tl.ones(2))
    np.testing.assert_allclose(w.numpy(), 4.0)
    with pytest.raises(TraceError, match=r"gt\(\) of the counter 't'.*was True|was False"):
        captured(tl.ones(2))  # t would be 5: the branch changes
    assert state["t"] == 4  # the refused replay left the count alone
    np.testing.assert_allclose(w.numpy(), 4.0)


def test_a_changing_number_argument_is_refused_while_recording():
    captured = tl.jit.capture_step(lambda x, i: x * 2.0)
    captured(tl.ones(2), 0)  # warm-up: eager
    captured(tl.ones(2), 1)  # first recording fixes the arguments
    with pytest.raises(TraceError, match="argument 1 was captured as.*pass numbers that change"):
        captured(tl.ones(2), 2)


def test_a_captured_step_inside_another_capture_is_refused():
    w = tl.zeros(2)
    inner = tl.jit.capture_step(lambda x: w.add_(x))
    for _ in range(4):
        inner(tl.ones(2))
    outer = tl.jit.capture_step(lambda x: inner(x * 2.0))
    outer(tl.ones(2))  # warm-up: eager, the inner replay is fine here
    with pytest.raises(TraceError, match="inside another step that is being captured"):
        outer(tl.ones(2))


def test_lazily_created_state_without_warmup_is_explained():
    state = {}
    w = tl.zeros(3)

    def step(x):
        if "buf" not in state:  # created on the first call, like an optimizer's state
            state["buf"] = tl.zeros(3)
        state["buf"].add_(x)
        w.add_(state["buf"])
        return w

    captured = tl.jit.capture_step(step, warmup=0)
    captured(tl.ones(3))
    with pytest.raises(TraceError, match="warmup >= 1"):
        captured(tl.ones(3))


def test_cached_constants_first_made_while_recording_do_not_break_the_capture():
    # mean's divisor and logsumexp's shift constants are cached storage: one made during the
    # first recording must not turn into old storage for the second (an unusual size: no test
    # before this one has cached its divisor)
    w = tl.randn(7, 3, dtype=tl.float64)

    def step(x):
        return (x @ w).logsumexp(1).mean() + (x @ w).var(0).sum()

    captured = tl.jit.capture_step(step, warmup=0)
    x = tl.randn(4099, 7, dtype=tl.float64)
    for _ in range(4):
        got = captured(x)
    assert captured.state == "captured"
    np.testing.assert_allclose(got.item(), step(x).item(), rtol=1e-12)


@pytest.mark.parametrize("nan", [False, True])
def test_max_pool_backward_takes_the_general_path_while_recording(nan):
    """Max pooling's backward picks its path by reading whether the values are finite; while a
    step is recorded it takes the path for any values, so the replays equal eager steps (a NaN
    in a window included)."""
    from torchlight.tensor.functions.windows import window_max

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((2, 6, 6)).astype(np.float32) for _ in range(6)]
    if nan:
        for x in xs:
            x[0, 1, 1] = np.nan
    grads = []
    for capture in (False, True):
        w = tl.ones(2, 6, 6, requires_grad=True)

        def step(x, w=w):
            w.grad = None
            window_max(x * w, (2, 2), (2, 2), (1, 1), (3, 3)).sum().backward()
            return w.grad

        fn = tl.jit.capture_step(step) if capture else step
        grads.append([fn(tl.tensor(x)).numpy().copy() for x in xs])
    assert fn.state == "captured"
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)
