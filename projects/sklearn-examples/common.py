"""Shared pieces of the scikit-learn examples: stratified splits, the epoch loop, checkpoints, plots.

Every example writes ``<out>/<example>/model.npz`` (the best-validation weights, through
``tl.save``), ``meta.json`` (the config and whatever ``post.py`` needs to rebuild inputs, e.g.
the standardisation statistics) and ``history.json`` (per-epoch curves).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import torchlight as tl
from torchlight.data import DataLoader, TensorDataset


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: each class split ``1 - test_fraction`` / ``test_fraction``, seeded.

    scikit-learn's ``train_test_split(stratify=y, random_state=seed)`` gives the same class
    proportions; this one keeps the examples free of hidden sklearn splitting rules.
    """
    rng = np.random.RandomState(seed)
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.nonzero(y == c)[0])
        n_test = int(round(test_fraction * len(idx)))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def three_way_split(y: np.ndarray, test_fraction: float, val_fraction: float, seed: int):
    """``(train, val, test)`` indices: a stratified test set, then a stratified validation set
    carved out of what remains (used only for choosing the checkpoint)."""
    pool, test = stratified_split(y, test_fraction, seed)
    tr, va = stratified_split(y[pool], val_fraction, seed + 1)
    return pool[tr], pool[va], test


def loader(*arrays, batch_size: int, shuffle: bool, seed: int = 0) -> DataLoader:
    return DataLoader(
        TensorDataset(*[np.ascontiguousarray(a) for a in arrays]),
        batch_size=batch_size,
        shuffle=shuffle,
        seed=seed,
    )


def predict(model, x: np.ndarray, batch_size: int = 512) -> np.ndarray:
    """The model's outputs on ``x`` in eval mode without grad, as numpy."""
    model.eval()
    outs = []
    with tl.no_grad():
        for s in range(0, len(x), batch_size):
            outs.append(model(tl.tensor(x[s : s + batch_size])).to_numpy())
    model.train()
    return np.concatenate(outs)


class Recorder:
    """Per-epoch history, best-checkpoint bookkeeping and the final meta.json / history.json."""

    def __init__(self, out: Path, higher_is_better: bool):
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.sign = 1.0 if higher_is_better else -1.0
        self.best = -np.inf
        self.best_epoch = 0
        self.history: dict[str, list] = {}
        self.t0 = time.perf_counter()

    def log(self, epoch: int, model, score: float, **values) -> bool:
        values = {"epoch": epoch, **values, "seconds": time.perf_counter() - self.t0}
        for k, v in values.items():
            self.history.setdefault(k, []).append(float(v))
        improved = self.sign * score > self.best
        if improved:
            self.best, self.best_epoch = self.sign * score, epoch
            tl.save({"model": model.state_dict()}, str(self.out / "model.npz"))
        shown = "  ".join(
            f"{k} {v:.4f}" for k, v in values.items() if k not in ("epoch", "seconds")
        )
        tqdm.write(
            f"epoch {epoch:3d}  {shown}  {values['seconds']:6.1f}s{'  *' if improved else ''}"
        )
        return improved

    def finish(self, meta: dict) -> dict:
        meta = {
            **meta,
            "best_epoch": self.best_epoch,
            "best_val": self.sign * self.best,
            "train_seconds": time.perf_counter() - self.t0,
        }
        (self.out / "meta.json").write_text(json.dumps(meta, indent=1))
        (self.out / "history.json").write_text(json.dumps(self.history, indent=1))
        print(
            f"best epoch {self.best_epoch} (val {meta['best_val']:.4f}); {meta['train_seconds']:.1f}s; "
            f"wrote {self.out}/model.npz, meta.json, history.json"
        )
        return meta


def load_weights(model, out: Path):
    model.load_state_dict(tl.load(str(out / "model.npz"))["model"])
    model.eval()
    return model


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def confusion(y_true: np.ndarray, y_pred: np.ndarray, n: int) -> np.ndarray:
    cm = np.zeros((n, n), dtype=int)
    np.add.at(cm, (y_true, y_pred), 1)
    return cm


def plot_curves_and_confusion(
    path: Path,
    history: dict,
    keys: list[tuple[str, str]],
    cm: np.ndarray,
    labels,
    title: str,
    best_epoch: int,
):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
    ep = history["epoch"]
    for ax, group in zip(axes[:2], keys):
        for k in group:
            if k in history:
                ax.plot(ep, history[k], ".-", label=k.replace("_", " "))
        ax.axvline(best_epoch, color="gray", ls=":", lw=1, label=f"checkpoint (epoch {best_epoch})")
        ax.set(xlabel="epoch")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set(title="loss")
    axes[1].set(title="accuracy")
    axes[2].imshow(cm, cmap="Blues")
    big = len(labels) > 4
    for i in range(cm.shape[0]):
        for j in range(cm.shape[1]):
            if cm[i, j]:
                axes[2].text(
                    j,
                    i,
                    str(cm[i, j]),
                    ha="center",
                    va="center",
                    fontsize=9 if big else 15,
                    color="white" if cm[i, j] > cm.max() / 2 else "black",
                )
    axes[2].set(
        xticks=range(len(labels)),
        yticks=range(len(labels)),
        xticklabels=labels,
        yticklabels=labels,
        xlabel="predicted",
        ylabel="true",
        title="test confusion matrix",
    )
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
