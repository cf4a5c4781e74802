"""Train a sentiment classifier on the UCI sentences (2,400-sentence training pool).

    python projects/sentiment-classifier/train.py                  # default: n-gram bag + MLP
    python projects/sentiment-classifier/train.py --model mean     # the baseline: embedding, mean pool, MLP
    python projects/sentiment-classifier/train.py --model cnn      # Conv1d text CNN
    python projects/sentiment-classifier/train.py --epochs 1 --max-batches 3 --out /tmp/x   # smoke

A validation fold (``--val-fraction`` of the 2,400) is scored after every epoch; the epoch with
the lowest validation loss (``--select acc``: the best validation accuracy) is written to ``<out>/model.npz``,
with ``<out>/meta.json`` (config + fitted vocabulary, everything ``post.py`` needs) and
``<out>/history.json`` (per-epoch curves). The 600 test sentences are not touched here.

Optimiser: AdamW with a cosine-annealed learning rate (``CosineAnnealingLR`` stepped per batch).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

# Small matrices: one BLAS thread is fastest, and on a busy machine OpenBLAS's spinning worker
# threads make each small matmul 10-300x slower. Set before numpy loads; override from the shell.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import torchlight as tl  # noqa: E402
import torchlight.nn as nn  # noqa: E402
import torchlight.nn.functional as F  # noqa: E402
from torchlight.optim import AdamW  # noqa: E402
from torchlight.optim.lr_scheduler import CosineAnnealingLR  # noqa: E402

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from data import Encoder, batches, load_split, trim  # noqa: E402
from model import ENCODING, build_model  # noqa: E402

#: per-model defaults (a flag given on the command line wins)
MODEL_DEFAULTS = {
    "bag": dict(
        epochs=10, lr=1e-2, weight_decay=0.0, dropout=0.0, embed_dim=0, hidden=0, batch_size=32
    ),
    "mean": dict(
        epochs=20, lr=3e-3, weight_decay=1e-4, dropout=0.3, embed_dim=64, hidden=64, batch_size=32
    ),
    "cnn": dict(
        epochs=12, lr=2e-3, weight_decay=1e-4, dropout=0.5, embed_dim=64, hidden=0, batch_size=32
    ),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--model", choices=sorted(MODEL_DEFAULTS), default="bag")
    p.add_argument("--out", default=str(HERE / "out"), help="output directory")
    p.add_argument(
        "--backend", default="cpu", help="torchlight device name (cpu, numba, cuda, ...)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=None, help="(per-model default)")
    p.add_argument(
        "--max-batches",
        type=int,
        default=0,
        help="stop each epoch after this many batches (0: all)",
    )
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument(
        "--min-lr-ratio", type=float, default=0.05, help="cosine floor, as a fraction of --lr"
    )
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--dropout", type=float, default=None)
    p.add_argument("--embed-dim", type=int, default=None)
    p.add_argument("--hidden", type=int, default=None, help="MLP hidden width (0: linear head)")
    p.add_argument("--channels", type=int, default=64, help="cnn: filters per width")
    p.add_argument("--widths", default="2,3,4", help="cnn: filter widths")
    p.add_argument(
        "--token-dropout",
        type=float,
        default=0.0,
        help="drop each input token/n-gram with this probability while training (regulariser)",
    )
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--grad-clip", type=float, default=5.0, help="clip_grad_norm_ (0: off)")
    p.add_argument("--word-ngrams", type=int, default=2, help="bag: word n-grams 1..N")
    p.add_argument("--char-ngrams", default="2,5", help="bag: char n-gram range 'lo,hi' or 'none'")
    p.add_argument(
        "--min-df",
        type=int,
        default=1,
        help="bag: keep n-grams seen in >= this many training sentences",
    )
    p.add_argument(
        "--nb",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="bag: scale each n-gram's TF-IDF weight by its naive-Bayes log-count ratio",
    )
    p.add_argument(
        "--min-freq", type=int, default=1, help="mean/cnn: keep words seen >= this many times"
    )
    p.add_argument("--val-fraction", type=float, default=0.15)
    p.add_argument(
        "--select",
        choices=("loss", "acc"),
        default="loss",
        help="checkpoint the epoch with the lowest validation loss, or the best validation accuracy",
    )
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help="tqdm bars"
    )
    return p


def resolve(args) -> dict:
    cfg = dict(MODEL_DEFAULTS[args.model])
    for k in cfg:
        v = getattr(args, k)
        if v is not None:
            cfg[k] = v
    cfg.update(
        model=args.model,
        seed=args.seed,
        backend=args.backend,
        max_batches=args.max_batches,
        min_lr_ratio=args.min_lr_ratio,
        channels=args.channels,
        widths=[int(w) for w in args.widths.split(",")],
        token_dropout=args.token_dropout,
        label_smoothing=args.label_smoothing,
        grad_clip=args.grad_clip,
        word_ngrams=args.word_ngrams,
        char_ngrams=None
        if args.char_ngrams.lower() == "none"
        else [int(c) for c in args.char_ngrams.split(",")],
        min_df=args.min_df,
        nb=args.nb,
        min_freq=args.min_freq,
        val_fraction=args.val_fraction,
        select=args.select,
    )
    return cfg


def to_tensors(ids: np.ndarray, aux: np.ndarray, kind: str, device: str):
    t_ids = tl.tensor(ids, dtype=tl.int64, device=device)
    t_aux = tl.tensor(aux, dtype=tl.int64 if kind == "tokens" else tl.float32, device=device)
    return t_ids, t_aux


def drop_tokens(ids: np.ndarray, aux: np.ndarray, kind: str, p: float, rng: np.random.Generator):
    """Token dropout: remove each real token (or n-gram) with probability ``p`` (never all of them)."""
    real = ids != 0
    keep = (rng.random(ids.shape) >= p) & real
    keep[~keep.any(axis=1) & real.any(axis=1), 0] = True
    if kind == "bag":
        w = np.where(keep, aux, 0.0)
        norm = np.linalg.norm(w, axis=1, keepdims=True)
        return np.where(keep, ids, 0), (w / np.maximum(norm, 1e-12)).astype(np.float32)
    # tokens: compact the kept ones to the left
    out = np.zeros_like(ids)
    lengths = keep.sum(1)
    for i in range(len(ids)):
        kept = ids[i][keep[i]]
        out[i, : len(kept)] = kept
    return out[:, : max(1, int(lengths.max()))], lengths.astype(np.int64)


def evaluate(
    model, ids, aux, labels, kind, device, batch_size=256
) -> tuple[float, float, np.ndarray]:
    """Mean cross-entropy, accuracy and the positive-class probabilities, in eval mode, no grad."""
    model.eval()
    probs, total = [], 0.0
    with tl.no_grad():
        for idx in batches(len(labels), batch_size, None):
            b_ids, b_aux = trim(ids, aux, idx, kind)
            logits = model(*to_tensors(b_ids, b_aux, kind, device))
            y = tl.tensor(labels[idx], dtype=tl.int64, device=device)
            total += F.cross_entropy(logits, y, reduction="sum").item()
            probs.append(logits.softmax(-1).to_numpy()[:, 1])
    model.train()
    p = np.concatenate(probs)
    return total / len(labels), float(((p > 0.5).astype(int) == labels).mean()), p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    cfg = resolve(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = args.backend
    tl.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0, c0 = time.perf_counter(), time.process_time()

    split = load_split(cfg["val_fraction"])
    kind = ENCODING[args.model]
    y_tr = np.array([s.label for s in split.train], dtype=np.int64)
    y_va = np.array([s.label for s in split.val], dtype=np.int64)
    enc = Encoder.fit(
        kind,
        [s.text for s in split.train],
        y_tr,
        min_freq=cfg["min_freq"],
        nb=cfg["nb"],
        word_ngrams=cfg["word_ngrams"],
        char_ngrams=tuple(cfg["char_ngrams"]) if cfg["char_ngrams"] else None,
        min_df=cfg["min_df"],
    )
    tr_ids, tr_aux = enc.encode([s.text for s in split.train])
    va_ids, va_aux = enc.encode([s.text for s in split.val])

    model = build_model(args.model, enc.num_ids, cfg)
    if device != "cpu":
        model = model.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"model={args.model}  ids={enc.num_ids:,}  params={n_params:,}  train={len(y_tr)}  val={len(y_va)}  "
        f"(test: {len(split.test)} sentences, untouched)"
    )

    # no weight decay on biases / norms; embeddings and matrices decay
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = AdamW(
        [
            {"params": decay, "weight_decay": cfg["weight_decay"]},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=cfg["lr"],
    )
    steps_per_epoch = math.ceil(len(y_tr) / cfg["batch_size"])
    if args.max_batches:
        steps_per_epoch = min(steps_per_epoch, args.max_batches)
    sched = CosineAnnealingLR(
        opt, T_max=cfg["epochs"] * steps_per_epoch, eta_min=cfg["lr"] * cfg["min_lr_ratio"]
    )

    history = {
        "epoch": [],
        "train_loss": [],
        "train_acc": [],
        "val_loss": [],
        "val_acc": [],
        "lr": [],
        "seconds": [],
    }
    best = (-1.0, math.inf)
    best_epoch = 0
    for epoch in range(1, cfg["epochs"] + 1):
        model.train()
        seen, loss_sum, correct = 0, 0.0, 0
        bar = tqdm(
            list(batches(len(y_tr), cfg["batch_size"], rng))[:steps_per_epoch],
            desc=f"epoch {epoch}/{cfg['epochs']}",
            disable=not args.progress,
            leave=False,
        )
        for idx in bar:
            b_ids, b_aux = trim(tr_ids, tr_aux, idx, kind)
            if cfg["token_dropout"] > 0:
                b_ids, b_aux = drop_tokens(b_ids, b_aux, kind, cfg["token_dropout"], rng)
            x = to_tensors(b_ids, b_aux, kind, device)
            y = tl.tensor(y_tr[idx], dtype=tl.int64, device=device)
            logits = model(*x)
            loss = F.cross_entropy(logits, y, label_smoothing=cfg["label_smoothing"])
            opt.zero_grad()
            loss.backward()
            if cfg["grad_clip"] > 0:
                nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
            opt.step()
            sched.step()
            n = len(idx)
            seen += n
            loss_sum += loss.item() * n
            correct += int((logits.detach().to_numpy().argmax(1) == y_tr[idx]).sum())
            bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.3f}")
        val_loss, val_acc, _ = evaluate(model, va_ids, va_aux, y_va, kind, device)
        elapsed = time.perf_counter() - t0
        for k, v in (
            ("epoch", epoch),
            ("train_loss", loss_sum / seen),
            ("train_acc", correct / seen),
            ("val_loss", val_loss),
            ("val_acc", val_acc),
            ("lr", opt.param_groups[0]["lr"]),
            ("seconds", elapsed),
        ):
            history[k].append(v)
        if cfg["select"] == "loss":
            improved = (-val_loss, val_acc) > (-best[1], best[0])
        else:
            improved = (val_acc, -val_loss) > (best[0], -best[1])
        if improved:
            best, best_epoch = (val_acc, val_loss), epoch
            tl.save({"model": model.state_dict()}, str(out / "model.npz"))
        print(
            f"epoch {epoch:3d}  train loss {loss_sum / seen:.4f} acc {correct / seen:.4f}  "
            f"val loss {val_loss:.4f} acc {val_acc:.4f}  {elapsed:6.1f}s{'  *' if improved else ''}"
        )

    meta = {
        "config": cfg,
        "encoder": enc.to_dict(),
        "best_epoch": best_epoch,
        "best_val_acc": best[0],
        "best_val_loss": best[1],
        "n_params": n_params,
        "train_seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "split": {
            "train": len(y_tr),
            "val": len(y_va),
            "test": len(split.test),
            "rule": "RandomState(0).permutation(3000): first 2400 pool, last 600 test; "
            "val carved from the pool with RandomState(1000)",
        },
    }
    (out / "meta.json").write_text(json.dumps(meta))
    (out / "history.json").write_text(json.dumps(history, indent=1))
    print(
        f"best epoch {best_epoch}: val acc {best[0]:.4f}, val loss {best[1]:.4f}; "
        f"{meta['train_seconds']:.1f}s wall, {meta['cpu_seconds']:.1f}s CPU; wrote {out}/model.npz, meta.json, history.json"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
