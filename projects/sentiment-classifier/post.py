"""Evaluate the trained sentiment classifier on the 600 held-out test sentences.

    python projects/sentiment-classifier/post.py [--out projects/sentiment-classifier/out]

Reloads ``<out>/model.npz`` with the vocabulary and config from ``<out>/meta.json``, prints
accuracy, precision, recall and F1 (positive class = 1) and the confusion matrix, the most
confident correct predictions and the misclassified sentences with their true labels, and saves
``<out>/sentiment_eval.png`` (loss and accuracy curves from ``history.json`` + the confusion
matrix) and ``<out>/metrics.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# Small matrices: one BLAS thread is fastest, and on a busy machine OpenBLAS's spinning worker
# threads make each small matmul 10-300x slower. Set before numpy loads; override from the shell.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402

import torchlight as tl  # noqa: E402

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from data import Encoder, load_split  # noqa: E402
from model import build_model  # noqa: E402
from train import evaluate  # noqa: E402

NAMES = ("negative", "positive")


def metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict:
    cm = np.zeros((2, 2), dtype=int)  # rows: true, cols: predicted
    np.add.at(cm, (y_true, y_pred), 1)
    tp, fp, fn = cm[1, 1], cm[0, 1], cm[1, 0]
    precision = tp / max(tp + fp, 1)
    recall = tp / max(tp + fn, 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-12)
    return {
        "accuracy": float((y_true == y_pred).mean()),
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
        "confusion": cm.tolist(),
    }


def load(out: Path, backend: str = "cpu"):
    meta = json.loads((out / "meta.json").read_text())
    enc = Encoder.from_dict(meta["encoder"])
    model = build_model(meta["config"]["model"], enc.num_ids, meta["config"])
    if backend != "cpu":
        model = model.to(backend)
    state = tl.load(str(out / "model.npz"))["model"]
    model.load_state_dict(state)
    model.eval()
    return model, enc, meta


def plot(out: Path, history: dict, m: dict, title: str, best_epoch: int) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
    ep = history["epoch"]
    axes[0].plot(ep, history["train_loss"], "o-", label="train")
    axes[0].plot(ep, history["val_loss"], "s-", label="validation")
    axes[0].set(xlabel="epoch", ylabel="cross-entropy", title="loss")
    axes[1].plot(ep, history["train_acc"], "o-", label="train")
    axes[1].plot(ep, history["val_acc"], "s-", label="validation")
    axes[1].axhline(
        m["accuracy"], color="k", ls="--", lw=1, label=f"test (best ckpt) {m['accuracy']:.3f}"
    )
    axes[1].set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    for ax in axes[:2]:
        ax.axvline(best_epoch, color="gray", ls=":", lw=1, label=f"checkpoint (epoch {best_epoch})")
        ax.grid(alpha=0.3)
        ax.legend()
    cm = np.array(m["confusion"])
    axes[2].imshow(cm, cmap="Blues")
    for i in range(2):
        for j in range(2):
            axes[2].text(
                j,
                i,
                str(cm[i, j]),
                ha="center",
                va="center",
                fontsize=16,
                color="white" if cm[i, j] > cm.max() / 2 else "black",
            )
    axes[2].set(
        xticks=[0, 1],
        yticks=[0, 1],
        xticklabels=NAMES,
        yticklabels=NAMES,
        xlabel="predicted",
        ylabel="true",
        title=f"test confusion (acc {m['accuracy']:.3f}, F1 {m['f1']:.3f})",
    )
    fig.suptitle(title)
    fig.tight_layout()
    path = out / "sentiment_eval.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(HERE / "out"))
    p.add_argument("--backend", default="cpu")
    p.add_argument("--show", type=int, default=8, help="how many examples of each kind to print")
    args = p.parse_args(argv)
    out = Path(args.out)

    model, enc, meta = load(out, args.backend)
    cfg = meta["config"]
    split = load_split(cfg["val_fraction"])
    texts = [s.text for s in split.test]
    y = np.array([s.label for s in split.test], dtype=np.int64)
    ids, aux = enc.encode(texts)
    loss, _, prob = evaluate(model, ids, aux, y, enc.kind, args.backend)
    pred = (prob > 0.5).astype(np.int64)
    m = metrics(y, pred)
    m["loss"] = loss
    m["n_test"] = len(y)
    cm = m["confusion"]
    print(
        f"model {cfg['model']} (best epoch {meta['best_epoch']}, val acc {meta['best_val_acc']:.4f}), "
        f"{len(y)} test sentences"
    )
    print(
        f"accuracy  {m['accuracy']:.4f}\nprecision {m['precision']:.4f}\nrecall    {m['recall']:.4f}\n"
        f"F1        {m['f1']:.4f}\ntest loss {loss:.4f}"
    )
    print("confusion (rows true, cols predicted; negative, positive):")
    print(f"  neg  {cm[0][0]:4d} {cm[0][1]:4d}\n  pos  {cm[1][0]:4d} {cm[1][1]:4d}")

    conf = np.where(pred == 1, prob, 1 - prob)
    correct = np.nonzero(pred == y)[0]
    wrong = np.nonzero(pred != y)[0]
    print("\nmost confident correct predictions:")
    for i in correct[np.argsort(-conf[correct])][: args.show]:
        print(f"  [{NAMES[y[i]]:8s} p={conf[i]:.3f}] {texts[i]}")
    print(f"\nmisclassified ({len(wrong)}), most confident first (true label shown):")
    for i in wrong[np.argsort(-conf[wrong])][: args.show]:
        print(f"  [true {NAMES[y[i]]:8s} predicted {NAMES[pred[i]]} p={conf[i]:.3f}] {texts[i]}")

    history = json.loads((out / "history.json").read_text())
    path = plot(
        out,
        history,
        m,
        f"sentiment classifier ({cfg['model']}) on the UCI sentences",
        meta["best_epoch"],
    )
    (out / "metrics.json").write_text(json.dumps(m, indent=1))
    print(f"\nwrote {path} and {out / 'metrics.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
