"""A class-conditioned autoencoder on the 8×8 digits: encoder and decoder both see a label embedding.

    e = Embedding(10, 16)[label]
    z = Enc([x, e])   : 64+16 → 128 → 64 → latent (4)
    x̂ = Dec([z, e])   : latent+16 → 64 → 128 → 64, sigmoid

Trained on pixel MSE (pixels scaled to [0, 1]); the checkpoint is the epoch with the lowest
validation MSE. Because the label is given to the decoder, the small latent only has to carry
*style* (slant, thickness, position); decoding one latent with each of the ten labels draws the
same style as ten different digits. Class-conditioned samples: latents drawn from a Gaussian
fitted (mean, covariance) to the training images' latents, decoded with each label.

Split as digits_cnn: stratified 20% test, 10% of the rest for validation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from common import Recorder, read_json, three_way_split
from sklearn.datasets import load_digits
from tqdm import tqdm

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F
from torchlight.optim import AdamW
from torchlight.optim.lr_scheduler import CosineAnnealingLR

NAME = "digits_cae"
DEFAULTS = dict(epochs=60, batch_size=64, lr=3e-3, weight_decay=1e-4, latent=4, label_dim=16)


class ConditionalAutoencoder(nn.Module):
    def __init__(self, latent: int = 4, label_dim: int = 16, n_classes: int = 10, d: int = 64):
        super().__init__()
        self.label = nn.Embedding(n_classes, label_dim)
        self.encoder = nn.Sequential(
            nn.Linear(d + label_dim, 128),
            nn.ReLU(),
            nn.Linear(128, 64),
            nn.ReLU(),
            nn.Linear(64, latent),
        )
        self.decoder = nn.Sequential(
            nn.Linear(latent + label_dim, 64),
            nn.ReLU(),
            nn.Linear(64, 128),
            nn.ReLU(),
            nn.Linear(128, d),
            nn.Sigmoid(),
        )

    def encode(self, x, y):
        return self.encoder(tl.cat([x, self.label(y)], 1))

    def decode(self, z, y):
        return self.decoder(tl.cat([z, self.label(y)], 1))

    def forward(self, x, y):
        return self.decode(self.encode(x, y), y)


def build(cfg: dict) -> ConditionalAutoencoder:
    return ConditionalAutoencoder(cfg["latent"], cfg["label_dim"])


def data(seed: int):
    ds = load_digits()
    x = (ds.data / 16.0).astype(np.float32)  # (N, 64)
    y = ds.target.astype(np.int64)
    tr, va, te = three_way_split(y, 0.2, 0.1, seed)
    return x, y, tr, va, te


def run(
    model, x: np.ndarray, y: np.ndarray, what: str = "forward", batch_size: int = 512
) -> np.ndarray:
    model.eval()
    outs = []
    with tl.no_grad():
        for s in range(0, len(x), batch_size):
            xb, yb = tl.tensor(x[s : s + batch_size]), tl.tensor(y[s : s + batch_size])
            outs.append((model.encode(xb, yb) if what == "encode" else model(xb, yb)).to_numpy())
    model.train()
    return np.concatenate(outs)


def train(cfg: dict, out: Path) -> dict:
    from common import loader

    tl.manual_seed(cfg["seed"])
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
    for epoch in tqdm(
        range(1, cfg["epochs"] + 1), desc=NAME, disable=not cfg["progress"], leave=False
    ):
        tot, seen = 0.0, 0
        for b, (xb, yb) in enumerate(dl):
            if b >= steps:
                break
            xb, yb = xb.to(cfg["backend"]), yb.to(cfg["backend"])  # the loader yields cpu tensors
            loss = F.mse_loss(model(xb, yb), xb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot, seen = tot + loss.item() * xb.shape[0], seen + xb.shape[0]
        val_mse = float(((run(model, x[va], y[va]) - x[va]) ** 2).mean())
        rec.log(
            epoch,
            model,
            val_mse,
            train_mse=tot / seen,
            val_mse=val_mse,
            lr=opt.param_groups[0]["lr"],
        )
    # the latent Gaussian used for sampling, from the checkpointed weights
    from common import load_weights

    load_weights(model, out)
    z = run(model, x[tr], y[tr], "encode")
    return rec.finish(
        {
            "example": NAME,
            "config": cfg,
            "z_mean": z.mean(0).tolist(),
            "z_cov": np.cov(z, rowvar=False).reshape(cfg["latent"], cfg["latent"]).tolist(),
        }
    )


def post(out: Path) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from common import load_weights

    meta = read_json(out / "meta.json")
    cfg = meta["config"]
    x, y, tr, va, te = data(cfg["seed"])
    model = load_weights(build(cfg), out)
    rec = run(model, x[te], y[te])
    mse = float(((rec - x[te]) ** 2).mean())
    # references: the per-class mean training image, and a wrong label given to the decoder
    class_mean = np.stack([x[tr][y[tr] == c].mean(0) for c in range(10)])
    mse_class_mean = float(((class_mean[y[te]] - x[te]) ** 2).mean())
    wrong = (y[te] + 1 + np.random.default_rng(0).integers(0, 9, len(te))) % 10
    z_te = run(model, x[te], y[te], "encode")
    model.eval()
    with tl.no_grad():
        rec_wrong = model.decode(tl.tensor(z_te), tl.tensor(wrong)).to_numpy()
    mse_wrong_label = float(((rec_wrong - x[te]) ** 2).mean())
    m = {
        "test_mse": mse,
        "test_mse_class_mean_baseline": mse_class_mean,
        "test_mse_with_wrong_label": mse_wrong_label,
        "n_test": int(len(te)),
        "best_epoch": meta["best_epoch"],
        "train_seconds": meta["train_seconds"],
    }
    print(
        f"[{NAME}] test reconstruction MSE {mse:.5f} per pixel (pixels in [0, 1]); "
        f"class-mean image baseline {mse_class_mean:.5f}; same latent, wrong label {mse_wrong_label:.5f}"
    )

    # samples: one latent per column (shared by all rows), decoded with each label (rows)
    rng = np.random.default_rng(cfg["seed"])
    n_cols = 10
    zs = rng.multivariate_normal(
        np.array(meta["z_mean"]), np.array(meta["z_cov"]), size=n_cols
    ).astype(np.float32)
    with tl.no_grad():
        samples = [
            model.decode(tl.tensor(zs), tl.tensor(np.full(n_cols, c, dtype=np.int64))).to_numpy()
            for c in range(10)
        ]

    hist = read_json(out / "history.json")
    fig = plt.figure(figsize=(16, 6.2))
    gs = fig.add_gridspec(1, 3, width_ratios=[1.0, 1.35, 1.35])
    ax = fig.add_subplot(gs[0])
    ax.semilogy(hist["epoch"], hist["train_mse"], ".-", label="train")
    ax.semilogy(hist["epoch"], hist["val_mse"], ".-", label="validation")
    ax.axhline(mse_class_mean, color="gray", ls="--", lw=1, label="class-mean image (test)")
    ax.set(xlabel="epoch", ylabel="MSE per pixel", title=f"reconstruction MSE (test {mse:.4f})")
    ax.grid(alpha=0.3)
    ax.legend()
    # reconstructions: first test image of each class, originals above reconstructions
    firsts = [np.nonzero(y[te] == c)[0][:2] for c in range(10)]
    idx = np.concatenate([f for f in firsts])
    grid = np.ones((4 * 9 - 1, len(idx) // 2 * 9 - 1))
    for k, i in enumerate(idx):
        col, pair = k // 2, k % 2
        r0 = pair * 18
        grid[r0 : r0 + 8, col * 9 : col * 9 + 8] = 1 - x[te][i].reshape(8, 8)
        grid[r0 + 9 : r0 + 17, col * 9 : col * 9 + 8] = 1 - rec[i].reshape(8, 8)
    ax = fig.add_subplot(gs[1])
    ax.imshow(grid, cmap="gray", vmin=0, vmax=1)
    ax.set_yticks([3.5, 12.5, 21.5, 30.5], ["original", "reconstr.", "original", "reconstr."])
    ax.set_xticks([c * 9 + 3.5 for c in range(10)], [str(c) for c in range(10)])
    ax.set_title("test digits and their reconstructions")
    sgrid = np.ones((10 * 9 - 1, n_cols * 9 - 1))
    for c in range(10):
        for j in range(n_cols):
            sgrid[c * 9 : c * 9 + 8, j * 9 : j * 9 + 8] = 1 - samples[c][j].reshape(8, 8)
    ax = fig.add_subplot(gs[2])
    ax.imshow(sgrid, cmap="gray", vmin=0, vmax=1)
    ax.set_yticks([c * 9 + 3.5 for c in range(10)], [f"label {c}" for c in range(10)])
    ax.set_xticks([])
    ax.set_xlabel("one sampled latent (style) per column")
    ax.set_title("class-conditioned samples")
    fig.suptitle(
        f"class-conditioned autoencoder on the 8×8 digits (latent {cfg['latent']}, label embedding "
        f"{cfg['label_dim']})"
    )
    fig.tight_layout()
    fig.savefig(out / "digits_cae.png", dpi=110)
    plt.close(fig)
    return m
