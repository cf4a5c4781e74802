"""The recipe both sides of ``bench_gpt_race.py`` read: a ``train.py`` preset's run, written out.

``write_recipe`` turns a preset of ``projects/mini-gpt/train.py`` into two files that
``gpt_race_program.py`` (a plain PyTorch program) reads: ``<path>.npz`` with the token ids of both
splits, every step's batch (``train.py``'s ``default_rng([seed, step])`` draws through
``corpus.random_starts``), the fixed validation batches (``train.fixed_starts``), the learning
rate of every step (``train.lr_at``) and the initial weights (``model.GPT`` after
``tl.manual_seed(seed)``, under ``w/<name>``); and ``<path>.json`` with the model's shape, the
optimizer's settings, the seed and the race's settings. Every decision stays in the project's
code; this module only runs it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

MINI_GPT = Path(__file__).resolve().parents[2] / "projects" / "mini-gpt"

__all__ = ["MINI_GPT", "preset_config", "write_recipe"]


def preset_config(preset: str = "headline", max_iters: int | None = None):
    """``train.py``'s TrainConfig of ``preset`` (``max_iters`` replaced when given)."""
    sys.path.insert(0, str(MINI_GPT))
    import train  # noqa: PLC0415

    cfg = train.TrainConfig(**{**vars(train.TrainConfig()), **train.PRESETS[preset]})
    return replace(cfg, max_iters=max_iters) if max_iters else cfg


def write_recipe(
    path: Path,
    cfg,
    seconds: float,
    eval_every: int,
    stop_below: float | None = None,
) -> dict:
    """Write ``path``.json and ``path``.npz: everything ``gpt_race_program.py`` needs to train
    ``cfg`` as ``train.py`` would. Returns the JSON part."""
    sys.path.insert(0, str(MINI_GPT))
    import train  # noqa: PLC0415
    from corpus import load_corpus, random_starts  # noqa: PLC0415
    from model import GPT  # noqa: PLC0415

    import torchlight as tl  # noqa: PLC0415

    corpus = load_corpus(cfg.tokenizer, cfg.bpe_vocab)
    mcfg = cfg.model_config(corpus.vocab_size)
    tl.manual_seed(cfg.seed)  # as train.py does: the preset run's own initial weights
    model = GPT(mcfg)
    weights = {f"w/{k}": v.detach().numpy() for k, v in model.state_dict().items()}
    n = len(corpus.train_ids)
    starts = np.stack(
        [
            random_starts(n, cfg.batch_size, cfg.block_size, np.random.default_rng([cfg.seed, s]))
            for s in range(cfg.max_iters)
        ]
    )
    # the cosine follows the steps: one that followed each side's clock would give the faster
    # side a different schedule (the presets raced here have no max_minutes anyway)
    lrs = np.array(
        [train.lr_at(cfg, s, train.progress_of(cfg, s, 0.0)) for s in range(cfg.max_iters)]
    )
    np.savez(
        str(path) + ".npz",
        train_ids=corpus.train_ids,
        val_ids=corpus.val_ids,
        train_starts=starts,
        val_starts=train.fixed_starts(len(corpus.val_ids), cfg, cfg.seed + 2),
        lr=lrs,
        **weights,
    )
    recipe = {
        "model": mcfg.to_dict(),
        "optim": {
            "weight_decay": cfg.weight_decay,
            "beta1": cfg.beta1,
            "beta2": cfg.beta2,
            "grad_clip": cfg.grad_clip,
        },
        "seed": cfg.seed,
        "seconds": seconds,
        "eval_every": eval_every,
        "stop_below": stop_below,
    }
    Path(str(path) + ".json").write_text(json.dumps(recipe, indent=1))
    return recipe
