"""Evaluate the trained scikit-learn examples on their held-out test sets and draw their plots.

    python projects/sklearn-examples/post.py [--example all] [--out projects/sklearn-examples/out]

Prints each example's metrics, writes ``<out>/<example>/metrics.json`` and its PNG
(``breast_cancer.png``, ``digits_cnn.png``, ``digits_cae.png``).
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


HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from train import EXAMPLES  # noqa: E402

import torchlight as tl  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--example", choices=["all", *EXAMPLES], default="all")
    p.add_argument("--out", default=str(HERE / "out"))
    p.add_argument("--backend", default="cpu")
    args = p.parse_args(argv)
    if args.backend != "cpu":
        tl.set_default_device(args.backend)
    names = list(EXAMPLES) if args.example == "all" else [args.example]
    for name in names:
        out = Path(args.out) / name
        m = EXAMPLES[name].post(out)
        (out / "metrics.json").write_text(json.dumps(m, indent=1))
        print(f"[{name}] wrote {out}/metrics.json and the plot\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
