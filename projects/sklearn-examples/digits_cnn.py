"""Digits (1,797 images of 8×8, 10 classes): a small CNN with Conv2d, BatchNorm2d and pooling.

Stratified split: 20% test (360), then 10% of the rest for validation (checkpoint choice only).
Pixels 0..16 are scaled to [0, 1]. Training batches are augmented with random shifts of at most
one pixel (zero fill), a cheap way to teach a little translation invariance to a net that sees
only ~1,300 training images.

    (1, 8, 8) → Conv3×3(32) BN ReLU → MaxPool2 → (32, 4, 4)
              → Conv3×3(64) BN ReLU → MaxPool2 → (64, 2, 2) → Flatten → Dropout → Linear(256, 10)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from common import (
    Recorder,
    confusion,
    load_weights,
    loader,
    plot_curves_and_confusion,
    predict,
    read_json,
    three_way_split,
)
from sklearn.datasets import load_digits
from tqdm import tqdm

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F
from torchlight.optim import AdamW
from torchlight.optim.lr_scheduler import CosineAnnealingLR

NAME = "digits_cnn"
DEFAULTS = dict(epochs=20, batch_size=64, lr=3e-3, weight_decay=1e-3, dropout=0.3, shift=1)


def build(cfg: dict) -> nn.Module:
    def block(c_in, c_out):
        return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]

    return nn.Sequential(
        *block(1, 32),
        nn.MaxPool2d(2),
        *block(32, 64),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(cfg["dropout"]),
        nn.Linear(64 * 2 * 2, 10),
    )


def data(seed: int):
    ds = load_digits()
    x = (ds.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8)
    y = ds.target.astype(np.int64)
    tr, va, te = three_way_split(y, 0.2, 0.1, seed)
    return x, y, tr, va, te


def random_shift(x: np.ndarray, max_shift: int, rng: np.random.Generator) -> np.ndarray:
    """Shift every image by (dy, dx) in [-max_shift, max_shift]², filling with zeros."""
    if max_shift <= 0:
        return x
    n, _, h, w = x.shape
    pad = np.pad(x, ((0, 0), (0, 0), (max_shift, max_shift), (max_shift, max_shift)))
    dy, dx = rng.integers(0, 2 * max_shift + 1, size=(2, n))
    out = np.empty_like(x)
    for i in range(n):
        out[i] = pad[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w]
    return out


def train(cfg: dict, out: Path) -> dict:
    tl.manual_seed(cfg["seed"])
    rng = np.random.default_rng(cfg["seed"])
    x, y, tr, va, te = data(cfg["seed"])
    model = build(cfg)
    opt = AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    dl = loader(x[tr], y[tr], batch_size=cfg["batch_size"], shuffle=True, seed=cfg["seed"])
    steps = len(dl) if not cfg["max_batches"] else min(len(dl), cfg["max_batches"])
    sched = CosineAnnealingLR(opt, T_max=cfg["epochs"] * steps, eta_min=cfg["lr"] * 0.01)
    rec = Recorder(out, higher_is_better=False)
    print(
        f"[{NAME}] train {len(tr)}  val {len(va)}  test {len(te)}  params "
        f"{sum(p.numel() for p in model.parameters()):,}"
    )
    for epoch in range(1, cfg["epochs"] + 1):
        model.train()
        tot, seen, correct = 0.0, 0, 0
        bar = tqdm(
            dl, total=steps, desc=f"{NAME} epoch {epoch}", disable=not cfg["progress"], leave=False
        )
        for b, (xb, yb) in enumerate(bar):
            if b >= steps:
                break
            xb = tl.tensor(random_shift(xb.to_numpy(), cfg["shift"], rng), device=cfg["backend"])
            yb = yb.to(cfg["backend"])  # the loader yields cpu tensors
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            n = xb.shape[0]
            tot, seen = tot + loss.item() * n, seen + n
            correct += int((logits.detach().to_numpy().argmax(1) == yb.to_numpy()).sum())
            bar.set_postfix(loss=f"{tot / seen:.3f}")
        val_logits = predict(model, x[va])
        val_loss = F.cross_entropy(tl.tensor(val_logits), tl.tensor(y[va])).item()
        rec.log(
            epoch,
            model,
            val_loss,
            train_loss=tot / seen,
            val_loss=val_loss,
            train_acc=correct / seen,
            val_acc=float((val_logits.argmax(1) == y[va]).mean()),
            lr=opt.param_groups[0]["lr"],
        )
    return rec.finish({"example": NAME, "config": cfg})


def post(out: Path) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = read_json(out / "meta.json")
    cfg = meta["config"]
    x, y, tr, va, te = data(cfg["seed"])
    model = load_weights(build(cfg), out)
    logits = predict(model, x[te])
    pred = logits.argmax(1)
    acc = float((pred == y[te]).mean())
    cm = confusion(y[te], pred, 10)
    m = {
        "test_accuracy": acc,
        "errors": int((pred != y[te]).sum()),
        "n_test": int(len(te)),
        "confusion": cm.tolist(),
        "best_epoch": meta["best_epoch"],
        "train_seconds": meta["train_seconds"],
    }
    print(f"[{NAME}] test accuracy {acc:.4f} ({len(te) - m['errors']}/{len(te)})")
    print(f"[{NAME}] confusion (rows true 0-9, cols predicted):\n{cm}")
    hist = read_json(out / "history.json")
    path = out / "digits_cnn.png"
    plot_curves_and_confusion(
        path,
        hist,
        [("train_loss", "val_loss"), ("train_acc", "val_acc")],
        cm,
        [str(i) for i in range(10)],
        f"digits 8×8 CNN (Conv2d, BatchNorm2d, MaxPool2d): test accuracy {acc:.4f}",
        meta["best_epoch"],
    )
    # the misclassified test digits, appended as a second figure
    wrong = np.nonzero(pred != y[te])[0][:16]
    if len(wrong):
        fig, axes = plt.subplots(
            1, len(wrong), figsize=(1.3 * len(wrong) + 0.5, 1.8), squeeze=False
        )
        for ax, i in zip(axes[0], wrong):
            ax.imshow(x[te][i, 0], cmap="gray_r")
            ax.set_title(f"true {y[te][i]}\npred {pred[i]}", fontsize=8)
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(out / "digits_cnn_errors.png", dpi=110)
        plt.close(fig)
    return m
