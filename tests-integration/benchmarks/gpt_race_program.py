"""The mini-GPT's training run written against PyTorch's API: one side of ``bench_gpt_race.py``.

This is a plain PyTorch program (it imports ``torch``, never ``torchlight``). The race runs it
unchanged under PyTorch (``python gpt_race_program.py --recipe R``) and under torchlight
(``TORCHLIGHT_DEVICE=numba python -m torchlight.compat gpt_race_program.py --recipe R``), so both
frameworks execute the same lines.

Everything that decides the run comes from the recipe (``.npz`` + ``.json`` written by
``bench_gpt_race.write_recipe`` from ``projects/mini-gpt``'s headline preset): the token ids, the
batch of every step (``train.py``'s ``default_rng([seed, step])`` draws), the fixed validation
batches, the learning rate of every step (``train.lr_at``) and the initial weights (the project's
``model.GPT`` built after ``tl.manual_seed(seed)``, as ``train.py`` builds it). :class:`GPT` here
is ``model.py``'s model, module for module with the same parameter names, so the project's
``state_dict`` loads into it as is. The only thing the frameworks draw themselves is dropout's
masks (seeded per step, from different generators).

With ``--capture`` (torchlight only: PyTorch has no ``torch.jit.capture_step``) the training
step — forward, backward, clipping, AdamW — is a function wrapped in ``capture_step``: after
three eager calls each step replays the recorded kernel calls, dropout masks drawn afresh from
the step's seed.

The program prints one JSON object per line on stdout: ``{"event": "eval", ...}`` at step 0, every
``eval_every`` steps and at the end (validation loss on the fixed batches), ``{"event":
"progress", ...}`` about once a second, and ``{"event": "done", ...}``. ``seconds`` is the training
clock: wall time since the first step, evaluations left out (they pause it).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["GPT", "make_batch", "evaluate", "train", "main"]

#: seconds between two progress lines
PROGRESS_EVERY = 1.0


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position ``t`` only sees positions ``<= t``."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.n_head = cfg["n_head"]
        C, T = cfg["n_embd"], cfg["block_size"]
        self.c_attn = nn.Linear(C, 3 * C, bias=cfg["bias"])
        self.c_proj = nn.Linear(C, C, bias=cfg["bias"])
        self.attn_dropout = nn.Dropout(cfg["dropout"])
        self.resid_dropout = nn.Dropout(cfg["dropout"])
        # True where query i must not see key j (j > i), as model.py's buffer. (Not
        # torch.triu of a bool tensor: torchlight's triu/tril return float32 for bool input.)
        pos = torch.arange(T)
        self.register_buffer("mask", pos[None, :] > pos[:, None], persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        H, D = self.n_head, C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=-1)
        q = q.reshape(B, T, H, D).transpose(1, 2)
        k = k.reshape(B, T, H, D).transpose(1, 2)
        v = v.reshape(B, T, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.attn_dropout(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """``Linear -> GELU -> Linear`` with a 4x hidden width, then dropout."""

    def __init__(self, cfg: dict):
        super().__init__()
        C = cfg["n_embd"]
        self.c_fc = nn.Linear(C, 4 * C, bias=cfg["bias"])
        self.c_proj = nn.Linear(4 * C, C, bias=cfg["bias"])
        self.dropout = nn.Dropout(cfg["dropout"])
        self.approximate = cfg["gelu"]

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate=self.approximate)))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["n_embd"])
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["n_embd"])
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """``projects/mini-gpt/model.py``'s GPT (the training forward, no KV cache): token and
    position embeddings, pre-LayerNorm blocks, a final LayerNorm and a head tied to ``wte``
    (or a separate ``lm_head`` with ``tie_weights`` false). ``cfg`` is ``GPTConfig.to_dict()``."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["block_size"], cfg["n_embd"])
        self.drop = nn.Dropout(cfg["dropout"])
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])])
        self.ln_f = nn.LayerNorm(cfg["n_embd"])
        self.lm_head = (
            None if cfg["tie_weights"] else nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
        )

    def forward(self, idx, targets):
        """``idx``, ``targets`` (B, T) int64 → the mean cross-entropy of the next token."""
        B, T = idx.shape
        x = self.drop(self.wte(idx) + self.wpe.weight[:T])
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = x @ self.wte.weight.T if self.lm_head is None else self.lm_head(x)
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))

    def param_groups(self, weight_decay: float) -> list:
        """AdamW's groups as ``model.py`` makes them: decay on matrices and embeddings only."""
        decay = [p for p in self.parameters() if p.ndim >= 2]
        no_decay = [p for p in self.parameters() if p.ndim < 2]
        return [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]


def make_batch(ids: np.ndarray, starts: np.ndarray, block_size: int):
    """Inputs ``x[b] = ids[s : s+T]`` and targets ``y[b] = ids[s+1 : s+T+1]``, as ``corpus.py``."""
    windows = ids[starts[:, None] + np.arange(block_size + 1)]
    x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
    y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
    return x, y


def evaluate(model, ids: np.ndarray, batches: np.ndarray, block_size: int) -> float:
    """Mean loss over the fixed batches, in eval mode (no dropout) without gradients."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for starts in batches:
            total += model(*make_batch(ids, starts, block_size)).item()
    model.train()
    return total / len(batches)


def emit(event: str, **fields) -> None:
    """One JSON line on stdout for the parent (flushed, so it sees progress as it happens)."""
    print(json.dumps({"event": event, **fields}), flush=True)


def train(recipe: dict, arrays, capture: bool = False) -> None:
    """Run the recipe's training: its batches, schedule and initial weights; stop at
    ``recipe["seconds"]`` of training clock, at the end of the schedule or, with
    ``recipe["stop_below"]``, at the first evaluation at or under it. ``capture``: replay the
    training step with ``torch.jit.capture_step`` (torchlight only)."""
    cfg, opt = recipe["model"], recipe["optim"]
    T, seed = cfg["block_size"], recipe["seed"]
    train_ids, val_ids = arrays["train_ids"], arrays["val_ids"]
    starts, val_batches, lrs = arrays["train_starts"], arrays["val_starts"], arrays["lr"]
    model = GPT(cfg)
    weights = {k[2:]: torch.from_numpy(arrays[k]) for k in arrays.files if k.startswith("w/")}
    model.load_state_dict(weights)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(
        model.param_groups(opt["weight_decay"]),
        lr=float(lrs[0]),
        betas=(opt["beta1"], opt["beta2"]),
        weight_decay=opt["weight_decay"],
    )
    tokens_per_step = starts.shape[1] * T
    budget, stop_below = recipe["seconds"], recipe.get("stop_below")
    step, seconds, wall0 = 0, 0.0, time.perf_counter()

    def evaluation() -> float:
        val = evaluate(model, val_ids, val_batches, T)
        emit(
            "eval",
            step=step,
            seconds=seconds,
            wall=time.perf_counter() - wall0,
            val_loss=val,
            tokens=step * tokens_per_step,
        )
        return val

    def train_step(x, y):
        loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if opt["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(params, opt["grad_clip"])
        optimizer.step()
        return loss

    if capture:
        train_step = torch.jit.capture_step(train_step)
    val = evaluation()
    model.train()
    shown = 0.0
    while step < len(lrs) and seconds < budget:
        t0 = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = float(lrs[step])
        x, y = make_batch(train_ids, starts[step], T)
        torch.manual_seed(seed * 1_000_003 + step)  # this step's dropout masks
        loss_v = train_step(x, y).item()
        seconds += time.perf_counter() - t0
        step += 1
        if seconds - shown >= PROGRESS_EVERY:
            shown = seconds
            emit("progress", step=step, seconds=seconds, loss=loss_v)
        if step % recipe["eval_every"] == 0:
            val = evaluation()
            if stop_below is not None and val <= stop_below:
                break
    if step % recipe["eval_every"]:
        evaluation()
    captured = {"capture": train_step.state, "kernel_calls": train_step.n_calls} if capture else {}
    emit("done", step=step, seconds=seconds, wall=time.perf_counter() - wall0, **captured)


def main(argv=None) -> None:
    """Read the recipe named by ``--recipe`` and train."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--recipe", required=True, help="path of the recipe without .json/.npz")
    p.add_argument("--capture", action="store_true", help="torchlight only: capture the step")
    args = p.parse_args(argv)
    with open(args.recipe + ".json") as f:
        recipe = json.load(f)
    with np.load(args.recipe + ".npz") as arrays:
        train(recipe, arrays, args.capture)


if __name__ == "__main__":
    main()
