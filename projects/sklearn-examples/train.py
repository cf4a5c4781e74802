"""Train the scikit-learn examples with torchlight (data bundled with scikit-learn, no download).

    python projects/sklearn-examples/train.py                        # all three examples
    python projects/sklearn-examples/train.py --example digits_cnn   # one of them
    python projects/sklearn-examples/train.py --epochs 1 --max-batches 3 --out /tmp/x   # smoke

Examples: ``breast_cancer`` (MLP + BatchNorm1d + Dropout + cosine lr), ``digits_cnn`` (small
Conv2d/BatchNorm2d/pooling CNN on the 8×8 digits), ``digits_cae`` (class-conditioned autoencoder
on the digits). Each writes ``<out>/<example>/model.npz`` (best validation checkpoint),
``meta.json`` and ``history.json``; ``post.py`` evaluates them on their held-out test sets.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Small matrices: one BLAS thread is fastest, and on a busy machine OpenBLAS's spinning worker
# threads make each small matmul 10-300x slower. Set before numpy loads; override from the shell.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import breast_cancer  # noqa: E402
import digits_cae  # noqa: E402
import digits_cnn  # noqa: E402

import torchlight as tl  # noqa: E402

EXAMPLES = {m.NAME: m for m in (breast_cancer, digits_cnn, digits_cae)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--example", choices=["all", *EXAMPLES], default="all")
    p.add_argument(
        "--out", default=str(HERE / "out"), help="output root; each example writes <out>/<example>/"
    )
    p.add_argument(
        "--backend", default="cpu", help="torchlight device name (cpu, numba, cuda, ...)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=None, help="(per-example default)")
    p.add_argument(
        "--max-batches",
        type=int,
        default=0,
        help="stop each epoch after this many batches (0: all)",
    )
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help="tqdm bars"
    )
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.backend != "cpu":
        tl.set_default_device(args.backend)
    names = list(EXAMPLES) if args.example == "all" else [args.example]
    for name in names:
        mod = EXAMPLES[name]
        cfg = dict(mod.DEFAULTS)
        for k in ("epochs", "batch_size", "lr"):
            if getattr(args, k) is not None:
                cfg[k] = getattr(args, k)
        cfg.update(
            seed=args.seed,
            max_batches=args.max_batches,
            progress=args.progress,
            backend=args.backend,
        )
        t0, c0 = time.perf_counter(), time.process_time()
        mod.train(cfg, Path(args.out) / name)
        print(
            f"[{name}] wall time {time.perf_counter() - t0:.1f}s, CPU time {time.process_time() - c0:.1f}s\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
