"""The numba backend trains the mini-GPT along the numpy backend's loss curve.

20 AdamW steps of a small GPT (projects/mini-gpt/model.py) from identical weights on ``cpu`` and
on ``numba``: the losses agree within float32 tolerance at every step (the backends sum in
different orders, so bit-equality is not expected). Slow; skipped when torchlight-nn, the
numba backend or the mini-GPT project is missing.
"""

from pathlib import Path

import numpy as np
import pytest

import torchlight as tl

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _losses(model_mod, device, steps=20):
    tl.manual_seed(0)
    cfg = model_mod.GPTConfig(
        vocab_size=65, block_size=32, n_layer=2, n_head=4, n_embd=64, dropout=0.0
    )
    model = model_mod.GPT(cfg).to(device)
    opt = tl.optim.AdamW(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    # learnable sequences: each row counts up by a row-specific step from a random start
    start = rng.integers(0, 65, size=(steps, 8, 1))
    step = rng.integers(1, 4, size=(steps, 8, 1))
    data = (start + step * np.arange(33)) % 65
    losses = []
    for s in range(steps):
        idx = tl.tensor(data[s, :, :-1], device=device)
        tgt = tl.tensor(data[s, :, 1:], device=device)
        _, loss = model(idx, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_gpt_loss_curve_matches_numpy_backend(project_modules):
    pytest.importorskip("torchlight.backends.numba.backend")
    with project_modules(ROOT / "projects" / "mini-gpt", ("model",)) as project:
        cpu = _losses(project.model, "cpu")
        numba = _losses(project.model, "numba")
    assert cpu[-1] < 0.8 * cpu[0], cpu
    np.testing.assert_allclose(numba, cpu, rtol=2e-4, atol=2e-4)
