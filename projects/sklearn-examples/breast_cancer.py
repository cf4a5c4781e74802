"""Breast cancer (Wisconsin diagnostic, 569 × 30): an MLP with BatchNorm1d, Dropout and a cosine lr.

Stratified split: 20% test (114), then 15% of the rest for validation (checkpoint choice only).
Features are standardised with the *training* mean and standard deviation (stored in meta.json
so ``post`` applies the same transform). Model: ``30 → 64 → 32 → 2`` with
``Linear → BatchNorm1d → ReLU → Dropout`` blocks; AdamW, ``CosineAnnealingLR`` per epoch.
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
from sklearn.datasets import load_breast_cancer
from tqdm import tqdm

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F
from torchlight.optim import AdamW
from torchlight.optim.lr_scheduler import CosineAnnealingLR

NAME = "breast_cancer"
DEFAULTS = dict(epochs=60, batch_size=32, lr=3e-3, weight_decay=1e-2, dropout=0.3, hidden=(64, 32))


def build(cfg: dict) -> nn.Module:
    layers, d = [], 30
    for h in cfg["hidden"]:
        layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(cfg["dropout"])]
        d = h
    return nn.Sequential(*layers, nn.Linear(d, 2))


def data(seed: int):
    ds = load_breast_cancer()
    x, y = ds.data.astype(np.float64), ds.target.astype(np.int64)  # target 1 = benign
    tr, va, te = three_way_split(y, 0.2, 0.15, seed)
    return x, y, tr, va, te, [str(n) for n in ds.target_names]


def train(cfg: dict, out: Path) -> dict:
    tl.manual_seed(cfg["seed"])
    x, y, tr, va, te, names = data(cfg["seed"])
    mean, std = x[tr].mean(0), x[tr].std(0)
    z = ((x - mean) / std).astype(np.float32)
    model = build(cfg)
    opt = AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    sched = CosineAnnealingLR(opt, T_max=cfg["epochs"], eta_min=cfg["lr"] * 0.01)
    dl = loader(z[tr], y[tr], batch_size=cfg["batch_size"], shuffle=True, seed=cfg["seed"])
    rec = Recorder(out, higher_is_better=False)
    print(
        f"[{NAME}] train {len(tr)}  val {len(va)}  test {len(te)}  params "
        f"{sum(p.numel() for p in model.parameters()):,}"
    )
    for epoch in tqdm(
        range(1, cfg["epochs"] + 1), desc=NAME, disable=not cfg["progress"], leave=False
    ):
        model.train()
        tot, seen, correct = 0.0, 0, 0
        for b, (xb, yb) in enumerate(dl):
            if cfg["max_batches"] and b >= cfg["max_batches"]:
                break
            if xb.shape[0] < 2:  # BatchNorm needs two samples per batch in training
                continue
            xb, yb = xb.to(cfg["backend"]), yb.to(cfg["backend"])  # the loader yields cpu tensors
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * xb.shape[0]
            seen += xb.shape[0]
            correct += int((logits.detach().to_numpy().argmax(1) == yb.to_numpy()).sum())
        sched.step()
        val_logits = predict(model, z[va])
        val_loss = F.cross_entropy(tl.tensor(val_logits), tl.tensor(y[va])).item()
        val_acc = float((val_logits.argmax(1) == y[va]).mean())
        # checkpoint on validation loss (114 validation-free test samples stay untouched)
        rec.log(
            epoch,
            model,
            val_loss,
            train_loss=tot / max(seen, 1),
            val_loss=val_loss,
            train_acc=correct / max(seen, 1),
            val_acc=val_acc,
            lr=opt.param_groups[0]["lr"],
        )
    return rec.finish(
        {
            "example": NAME,
            "config": cfg,
            "mean": mean.tolist(),
            "std": std.tolist(),
            "class_names": names,
        }
    )


def post(out: Path) -> dict:
    meta = read_json(out / "meta.json")
    cfg = meta["config"]
    x, y, tr, va, te, names = data(cfg["seed"])
    z = ((x - np.array(meta["mean"])) / np.array(meta["std"])).astype(np.float32)
    model = load_weights(build(cfg), out)
    logits = predict(model, z[te])
    pred = logits.argmax(1)
    cm = confusion(y[te], pred, 2)
    acc = float((pred == y[te]).mean())
    # "malignant" (class 0) is the condition to detect: precision/recall for it
    tp, fp, fn = cm[0, 0], cm[1, 0], cm[0, 1]
    m = {
        "test_accuracy": acc,
        "malignant_precision": float(tp / max(tp + fp, 1)),
        "malignant_recall": float(tp / max(tp + fn, 1)),
        "n_test": int(len(te)),
        "confusion": cm.tolist(),
        "best_epoch": meta["best_epoch"],
        "train_seconds": meta["train_seconds"],
    }
    print(
        f"[{NAME}] test accuracy {acc:.4f} ({int((pred == y[te]).sum())}/{len(te)}), malignant precision "
        f"{m['malignant_precision']:.4f} recall {m['malignant_recall']:.4f}"
    )
    print(f"[{NAME}] confusion (rows true {names}, cols predicted):\n{cm}")
    hist = read_json(out / "history.json")
    plot_curves_and_confusion(
        out / "breast_cancer.png",
        hist,
        [("train_loss", "val_loss"), ("train_acc", "val_acc")],
        cm,
        names,
        f"breast cancer MLP (BatchNorm1d, Dropout, cosine lr): test accuracy {acc:.3f}",
        meta["best_epoch"],
    )
    return m
