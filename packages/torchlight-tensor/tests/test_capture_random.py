"""Random draws inside a captured step: every replay draws what the eager step would have drawn.

Oracle: the same step run eagerly from the same seeds. A replay must agree bit for bit, since
both take the same numbers from the same streams in the same order — host draws (``rand`` on
the numpy backend, ``randint``, ``randperm``, ``normal_``, ``uniform_``, ``bernoulli``) and a
backend's own random fills (here a numpy backend given the ``"random"`` capability), through a
re-seeding in the middle of the replays and with a generator of the step's own.
"""

import numpy as np
import pytest

import torchlight as tl
from torchlight.jit import TraceError
from torchlight.tensor.random import stream_base

STEPS = 9
RESEED_AT = 6  # after the warm-up and the two recordings: a replay sees the new seed

DRAWS = {
    "rand": lambda g, dev: tl.rand(4, 3, device=dev),
    "randn": lambda g, dev: tl.randn(4, 3, device=dev),
    "randn_pairs": lambda g, dev: tl.randn(2048, device=dev)[:12].reshape(4, 3),  # Box-Muller
    "rand_generator": lambda g, dev: tl.rand(4, 3, device=dev, generator=g),
    "randint": lambda g, dev: tl.randint(-5, 5, (4, 3), device=dev).float(),
    "randperm": lambda g, dev: tl.randperm(12, device=dev).float().reshape(4, 3),
    "normal_": lambda g, dev: tl.empty(4, 3, device=dev).normal_(1.0, 2.0),
    "uniform_": lambda g, dev: tl.empty(4, 3, device=dev).uniform_(-1.0, 1.0, generator=g),
    "bernoulli": lambda g, dev: tl.bernoulli(tl.empty(4, 3, device=dev), p=0.3),
}


@pytest.fixture
def device_random(fresh_registry):
    """A numpy backend with the ``"random"`` capability: ``rand``/``randn`` become backend calls
    ``random_(view, kind, seed, k)``, filled from ``stream_base(seed, k)`` (as numba and CUDA
    key their fills)."""
    from torchlight.tensor.backend.numpy import NumpyBackend

    class DeviceRandom(NumpyBackend):
        name = device = "devrandom"
        capabilities = NumpyBackend.capabilities | {"random"}

        def random_(self, out, kind, seed, k):
            rng = np.random.default_rng(stream_base(seed, k))
            draw = rng.random if kind == "uniform" else rng.standard_normal
            n = out.size
            out.storage[out.offset : out.offset + n] = draw(n).astype(out.storage.dtype)

    tl.register_backend("devrandom", DeviceRandom())
    return "devrandom"


def _run(draw, device, captured):
    """The step ``w += x * draw`` over STEPS calls (re-seeding the default generator at
    RESEED_AT): every step's ``w`` and the next number of each stream afterwards."""
    tl.manual_seed(0)
    g = tl.Generator().manual_seed(5)
    w = tl.zeros(4, 3, device=device)

    def step(x):
        w.add_(x * draw(g, device))
        return w

    fn = tl.jit.capture_step(step) if captured else step
    out = []
    for i in range(STEPS):
        if i == RESEED_AT:
            tl.manual_seed(7)
        out.append(fn(tl.full((4, 3), float(i + 1), device=device)).numpy().copy())
    after = (tl.rand(3).tolist(), tl.rand(3, generator=g).tolist())
    return out, after, fn


def _assert_replays_like_eager(draw, device):
    eager, eager_after, _ = _run(draw, device, captured=False)
    replayed, replayed_after, fn = _run(draw, device, captured=True)
    assert fn.state == "captured"
    for a, b in zip(replayed, eager):
        np.testing.assert_array_equal(a, b)
    assert replayed_after == eager_after  # the streams were left where eager leaves them
    assert len({a.tobytes() for a in np.diff(eager, axis=0)}) == STEPS - 1  # a new draw per step


@pytest.mark.parametrize("kind", sorted(DRAWS))
def test_host_draws_replay_like_eager(kind):
    _assert_replays_like_eager(DRAWS[kind], "cpu")


@pytest.mark.parametrize("kind", ["rand", "randn", "rand_generator", "randint"])
def test_device_fills_replay_like_eager(device_random, kind):
    _assert_replays_like_eager(DRAWS[kind], device_random)


def test_device_fill_replays_take_the_live_seed_and_count(device_random):
    g = tl.Generator().manual_seed(3)
    step = tl.jit.capture_step(lambda x: x * tl.rand(2, device=device_random, generator=g))
    for _ in range(4):
        step(tl.ones(2, device=device_random))
    assert g._device_draws == 4
    [fill] = [c for c in step.calls if c.name == "random_"]
    assert fill.live  # seed and count are read at each replay, not baked in


def test_a_guard_after_a_draw_does_not_consume_the_stream():
    """A replay checks its guards on a dry run of the step's host operations before running:
    draws are not part of that run, so the stream advances once per step, as eagerly."""
    lr = {"value": 0.5}

    def draw(g, dev):
        noise = tl.rand(4, 3, device=dev)
        tl.jit.guard(lambda: lr["value"], "the rate")
        return noise * lr["value"]

    _assert_replays_like_eager(draw, "cpu")


def test_rows_drawn_inside_the_step_index_like_eager():
    """``x[idx]`` with ``idx = randint(...)``: the whole-row gather takes the index's bounds from
    its record while recording (a read is refused there), and every replay draws new rows."""
    table = tl.tensor(np.arange(40, dtype=np.float32).reshape(10, 4))

    def draw(g, dev):
        return table[tl.randint(0, 10, (4,))][:, :3]

    _assert_replays_like_eager(draw, "cpu")


def test_numpy_draws_inside_the_step_are_still_refused():
    w = tl.zeros(3)
    rng = np.random.default_rng(0)

    def step(x):
        w.add_(x * tl.tensor(rng.random(3), dtype=tl.float32))
        return w

    captured = tl.jit.capture_step(step)
    captured(tl.ones(3))
    captured(tl.ones(3))
    with pytest.raises(TraceError, match="numpy or Python's random module"):
        captured(tl.ones(3))
