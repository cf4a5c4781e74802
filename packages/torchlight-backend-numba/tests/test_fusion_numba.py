"""The numba backend's ``"compile"`` capability: generated fused kernels for ``torchlight.jit``.

The core groups a tape's elementwise chains (``torchlight.jit.fusion``); these tests check the
kernels this backend generates for them against eager, op-by-op results (the oracle)."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.numba import _fusion


def rand(*shape, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return tl.tensor((rng.standard_normal(shape) * scale).astype(np.float32))


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(
        np.asarray(a.to_numpy()), np.asarray(b.to_numpy()), rtol=rtol, atol=atol
    )


def eager(fn, *xs):
    with tl.no_grad():
        return fn(*xs)


def gelu_tanh(x):
    return 0.5 * x * (1 + (0.79788456 * (x + 0.044715 * x**3)).tanh())


@pytest.mark.slow
def test_parallel_kernel_variant_agrees(monkeypatch):
    monkeypatch.setattr(_fusion, "PARALLEL_MIN", 0)
    monkeypatch.setattr(_fusion, "PARALLEL_THREADS", 1)
    x = rand(50, 40, seed=89, scale=2.0)
    tape = tl.jit.trace(gelu_tanh, x)
    close(tape.replay(x, fuse="numba"), eager(gelu_tanh, x))
    assert any(parallel for (_, parallel) in _fusion.COMPILER._cache)


def test_backend_lists_compile_and_fuses_by_default():
    backend = tl.get_backend("numba")
    assert {"compile", "host_memory"} <= backend.capabilities
    x = rand(16, 8, seed=3, scale=3.0).to("numba")
    tape = tl.jit.trace(gelu_tanh, x)
    assert tape.fusion_groups()  # the chain is one group ...
    close(tape(x), eager(gelu_tanh, rand(16, 8, seed=3, scale=3.0)))  # ... and fused by default
    assert any(chain_key[0][0][0] == "mul" for (chain_key, _) in _fusion.COMPILER._cache)


def test_source_of_a_chain_reads_each_input_once():
    x = rand(4, 4, seed=5)
    tape = tl.jit.trace(lambda a: (a * 2 + 1).tanh() * a, x)
    steps = [s for s in tl.jit.fusion.plan(tape) if isinstance(s, tl.jit.fusion.FusedGroup)]
    assert len(steps) == 1
    src = _fusion.numba_source(steps[0].chain((False, True, True)))
    assert src.count("i0[j]") == 1 and "_tanh(" in src and "o0[j] = t3" in src


def test_chain_with_an_op_the_backend_does_not_know_is_declined():
    chain = tl.jit.ElementwiseChain([("logical_not", (("in", 0),))], 1, (False,), (0,), tl.float32)
    assert tl.get_backend("numba").compile_elementwise(chain) is None


def test_generator_knows_exactly_the_fusable_ops():
    assert set(_fusion.MAP_EXPR) == set(tl.jit.fusion.FUSABLE_MAP)
    assert set(_fusion.ZIP_EXPR) == set(tl.jit.fusion.FUSABLE_ZIP)
