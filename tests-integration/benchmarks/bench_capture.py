"""Eager vs captured training steps (``tl.jit.capture_step``): ms per step, per backend.

Run: ``python tests-integration/benchmarks/bench_capture.py`` (``--devices cpu numba``,
``--steps 30``, ``--repeats 3``, ``--threads 2``, ``--no-gpt``). Cases: an MLP 784-256-256-10 at
batch 64 with SGD-momentum and with AdamW, and the mini-GPT benchmark model of
``bench_gpt_phases.py`` (vocab 65, 4 layers, 4 heads, width 128, context 64, batch 32, AdamW).
Each cell is the median step time over ``--steps`` steps after warm-up (the captured step's
eager warm-up and recording calls are excluded), best of ``--repeats`` runs; ``fused`` is the
captured step with elementwise chains compiled (backends with the ``compile`` capability only);
the speed-up is eager / captured. The machine may be shared: treat the numbers as indicative.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "projects" / "mini-gpt"))
sys.path.insert(0, str(HERE))

import bench_gpt  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--devices", nargs="+", default=["cpu", "numba"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None, help="numba threads (default: numba's)")
    p.add_argument("--no-gpt", action="store_true", help="only the MLP cases")
    return p.parse_args()


def _mlp_case(dev, opt_name):
    import torchlight as tl
    from torchlight import nn

    tl.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    ).to(dev)
    if opt_name == "sgd":
        opt = tl.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        opt = tl.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.standard_normal((64, 784)).astype(np.float32), device=dev)
    y = tl.tensor(rng.integers(0, 10, 64), device=dev)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, (x, y)


def _gpt_case(dev):
    model, opt, idx, tgt = bench_gpt.build(dev)

    def step(idx, tgt):
        opt.zero_grad()
        _, loss = model(idx, tgt)
        loss.backward()
        opt.step()
        return loss

    return step, (idx, tgt)


def median_step_ms(make, mode, steps, repeats):
    """Best (over ``repeats`` fresh models) median ms of one step; ``mode`` eager/captured/fused."""
    import torchlight as tl

    best = None
    for _ in range(repeats):
        step, args = make()
        if mode != "eager":
            step = tl.jit.capture_step(step, fuse=mode == "fused")
        for _ in range(4):  # warm-up (and, captured, the two recording calls)
            step(*args)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step(*args)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times) * 1e3
        best = med if best is None else min(best, med)
    return best


def main():
    args = parse()
    if args.threads:
        import numba

        numba.set_num_threads(args.threads)
    cases = [("MLP 784-256-256-10 b64 SGD-m", lambda d: _mlp_case(d, "sgd"))]
    cases.append(("MLP 784-256-256-10 b64 AdamW", lambda d: _mlp_case(d, "adamw")))
    if not args.no_gpt:
        cases.append(("mini-GPT 4x128 T64 b32 AdamW", _gpt_case))
    print(
        f"{'case':30s} {'device':7s} {'eager':>9s} {'captured':>9s} {'fused':>9s} {'speed-up':>9s}"
    )
    import torchlight as tl

    for name, build in cases:
        for dev in args.devices:
            modes = ["eager", "captured"]
            if "compile" in tl.get_backend(dev).capabilities:
                modes.append("fused")
            ms = {
                mode: median_step_ms(functools.partial(build, dev), mode, args.steps, args.repeats)
                for mode in modes
            }
            fused = f"{ms['fused']:9.2f}" if "fused" in ms else f"{'-':>9s}"
            print(
                f"{name:30s} {dev:7s} {ms['eager']:9.2f} {ms['captured']:9.2f} {fused} "
                f"{ms['eager'] / ms['captured']:8.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
