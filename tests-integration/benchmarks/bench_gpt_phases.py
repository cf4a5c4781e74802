"""Where a GPT training step spends its time: forward, backward, optimizer, per backend.

Run: ``python tests-integration/benchmarks/bench_gpt_phases.py --threads 2`` (``--devices cpu numba``,
``--composite-adam`` to take the ``adam`` capability away and time the optimizer's composite
update instead). The model and batch are ``bench_backends.py``'s GPT case (vocab 65, 4 layers,
4 heads, width 128, context 64, batch 32, AdamW); medians over ``--steps`` steps after 5 warm-up
steps, in ms. PyTorch's phases are printed too when it is installed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "projects" / "mini-gpt"))

import bench_gpt  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--threads", type=int, default=None, help="numba/torch threads (default: numba's)"
    )
    p.add_argument("--devices", nargs="+", default=["cpu", "numba"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument(
        "--composite-adam", action="store_true", help="run AdamW without the fused kernel"
    )
    return p.parse_args()


def phases(forward, backward, step, n):
    """Median ms of each phase over ``n`` steps (after 5 warm-up steps)."""
    times = []
    for i in range(5 + n):
        t0 = time.perf_counter()
        loss = forward()
        t1 = time.perf_counter()
        backward(loss)
        t2 = time.perf_counter()
        step()
        t3 = time.perf_counter()
        if i >= 5:
            times.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
    return [statistics.median(col) * 1e3 for col in zip(*times)]


def torchlight_phases(dev, n, composite_adam):
    model, opt, idx, tgt = bench_gpt.build(dev)
    if composite_adam:
        be = type(next(iter(model.parameters())).backend)
        be.capabilities = be.capabilities - {"adam"}

    def backward(loss):
        opt.zero_grad()
        loss.backward()

    return phases(lambda: model(idx, tgt)[1], backward, opt.step, n)


def torch_phases(n):
    import bench_backends

    step = bench_backends.torch_gpt_step()
    cells = dict(zip(step.__code__.co_freevars, (c.cell_contents for c in step.__closure__)))
    model, opt, idx, tgt = cells["model"], cells["opt"], cells["idx"], cells["tgt"]

    def backward(loss):
        opt.zero_grad()
        loss.backward()

    return phases(lambda: model(idx, tgt), backward, opt.step, n)


def main():
    args = parse()
    sys.argv = sys.argv[:1]  # bench_backends parses its own arguments on import
    # torch before numba starts its OpenMP pool: imported after it, torch's AdamW step (many
    # small ops) measured 55 ms instead of 2.3 ms
    try:
        import torch
    except ImportError:
        torch = None
    import numba

    threads = args.threads or numba.get_num_threads()
    numba.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    print(
        f"{threads} threads; AdamW {'composite' if args.composite_adam else 'fused where the backend has it'}"
    )
    print(
        f"{'backend':10s} {'forward':>9s} {'backward':>9s} {'optimizer':>10s} {'step':>9s}  (ms, medians)"
    )
    rows = [
        (dev, lambda dev=dev: torchlight_phases(dev, args.steps, args.composite_adam))
        for dev in args.devices
    ]
    if torch is not None:
        rows.append(("torch", lambda: torch_phases(args.steps)))
    for name, run in rows:
        f, b, o, s = run()
        print(f"{name:10s} {f:9.1f} {b:9.1f} {o:10.1f} {s:9.1f}", flush=True)
        time.sleep(0.5)  # let this backend's thread pool go idle (see bench_backends.settle)


if __name__ == "__main__":
    main()
