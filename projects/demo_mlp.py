"""A 2-16-16-2 MLP learns the two-moons dataset: ``python projects/demo_mlp.py`` (about a second).

Written with raw torchlight tensors — parameters, ReLU, log-softmax cross-entropy and a hand-made
SGD step — so it shows the tensor + autograd core alone, without ``nn`` or ``optim``.
Exits non-zero unless the loss falls well below where it started.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

import torchlight as tl


def two_moons(n: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles (a classic not-linearly-separable 2-D problem), standardised."""
    rng = np.random.default_rng(seed)
    half = n // 2
    t = rng.uniform(0.0, math.pi, size=n)
    upper = np.stack([np.cos(t[:half]), np.sin(t[:half])], axis=1)
    lower = np.stack([1.0 - np.cos(t[half:]), 0.5 - np.sin(t[half:])], axis=1)
    x = np.concatenate([upper, lower]) + rng.normal(0.0, noise, size=(n, 2))
    y = np.concatenate([np.zeros(half), np.ones(n - half)]).astype(np.int64)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    return x.astype(np.float32), y


def init_layer(n_in: int, n_out: int) -> list:
    """He-scaled weights (ReLU halves the variance) and zero biases, as trainable leaves."""
    w = tl.randn(n_in, n_out) * math.sqrt(2.0 / n_in)
    b = tl.zeros(n_out)
    return [w.requires_grad_(), b.requires_grad_()]


def forward(params: list, x):
    w1, b1, w2, b2, w3, b3 = params
    h = (x @ w1 + b1).relu()
    h = (h @ w2 + b2).relu()
    return h @ w3 + b3


def cross_entropy(logits, target_col):
    """Mean negative log-likelihood; ``target_col`` is an (N, 1) int64 tensor of class indices."""
    logp = logits.log_softmax(dim=-1)
    return -logp.gather(1, target_col).mean()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--lr", type=float, default=0.2)
    parser.add_argument("--n", type=int, default=512, help="number of points")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--print-every", type=int, default=100)
    args = parser.parse_args(argv)

    tl.manual_seed(args.seed)
    x_np, y_np = two_moons(args.n, noise=0.1, seed=args.seed)
    x = tl.tensor(x_np)
    target = tl.tensor(y_np.reshape(-1, 1), dtype=tl.int64)
    params = init_layer(2, 16) + init_layer(16, 16) + init_layer(16, 2)

    first = None
    for step in range(args.steps + 1):
        loss = cross_entropy(forward(params, x), target)
        value = loss.item()
        if not math.isfinite(value):
            print(f"step {step}: loss is {value}; stopping", file=sys.stderr)
            return 1
        first = value if first is None else first
        if step % args.print_every == 0 or step == args.steps:
            print(f"step {step:5d}  loss {value:.4f}")
        if step == args.steps:
            break
        loss.backward()
        with tl.no_grad():  # the update itself must not be recorded
            for p in params:
                p.add_(p.grad, alpha=-args.lr)
                p.grad = None

    with tl.no_grad():
        pred = forward(params, x).numpy().argmax(axis=1)
    accuracy = float((pred == y_np).mean())
    print(f"loss {first:.4f} -> {value:.4f}, training accuracy {accuracy:.1%}")
    if value > 0.5 * first:
        print("FAIL: the loss did not fall by at least half", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
