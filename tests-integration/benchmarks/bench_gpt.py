"""The benchmark GPT: the one model, optimizer and batch that ``bench_backends.py``,
``bench_gpt_phases.py``, ``bench_capture.py`` and ``bench_memory.py`` time, so their figures
describe the same training step: ``projects/mini-gpt/model.py``'s GPT with vocabulary 65,
4 layers, 4 heads, width 128, context 64, dropout 0, on a batch of 32, with AdamW (lr 3e-4).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

__all__ = ["MINI_GPT", "MODEL", "BATCH", "LR", "build"]

MINI_GPT = Path(__file__).resolve().parents[2] / "projects" / "mini-gpt"
#: GPTConfig's fields (the last three are its defaults, spelled out for the PyTorch twin)
MODEL = dict(
    vocab_size=65,
    block_size=64,
    n_layer=4,
    n_head=4,
    n_embd=128,
    dropout=0.0,
    bias=True,
    tie_weights=True,
    gelu="tanh",
)
BATCH = 32
LR = 3e-4


def build(device: str):
    """``(model, optimizer, idx, targets)`` on ``device``; seeded, so every call builds the same
    weights and batch."""
    sys.path.insert(0, str(MINI_GPT))
    from model import GPT, GPTConfig  # noqa: PLC0415

    import torchlight as tl  # noqa: PLC0415

    tl.manual_seed(0)
    model = GPT(GPTConfig(**MODEL)).to(device)
    opt = tl.optim.AdamW(model.parameters(), lr=LR)
    rng = np.random.default_rng(0)
    shape = (BATCH, MODEL["block_size"])
    idx = tl.tensor(rng.integers(0, MODEL["vocab_size"], size=shape), device=device)
    tgt = tl.tensor(rng.integers(0, MODEL["vocab_size"], size=shape), device=device)
    return model, opt, idx, tgt
