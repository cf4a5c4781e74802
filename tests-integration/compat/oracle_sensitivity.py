"""How much of a public program's loss curve can the PyTorch oracle fairly compare?

    python oracle_sensitivity.py examples_regression [makemore_gru ...]

Runs each case (public_cases.py) three times through oracle_runner.py: under torchlight, under
PyTorch from the same weights and draws, and under PyTorch again with every shared floating-point
weight nudged by one ulp (``numpy.nextafter``). For each tolerance it prints the first step at
which torchlight and PyTorch differ by more than that (relative), and the first at which PyTorch
and the nudged PyTorch do. Where the nudge alone parts the curves early, the training amplifies
rounding, and only the steps before that can be held to 1e-3: that is the case's ``ORACLE_STEPS``.
Needs PyTorch installed; a few seconds to a minute per case.
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np
from public_cases import load_cases

TOLERANCES = (1e-5, 1e-4, 1e-3)


def first_above(a, b, tol):
    """The first step where ``a`` and ``b`` differ by more than ``tol`` relative (None: never)."""
    n = min(len(a), len(b))
    rel = np.abs(a[:n] - b[:n]) / np.maximum(np.abs(b[:n]), np.finfo(np.float64).tiny)
    above = np.flatnonzero(rel > tol)
    return int(above[0]) if above.size else None


def measure(case, folder: Path) -> dict:
    runs = dict(zip(("torchlight", "torch"), case.run_both(folder)))
    weights = folder / "weights.npz"
    with np.load(weights) as stored:
        nudged = {
            k: np.nextafter(v, np.inf).astype(v.dtype) if v.dtype.kind == "f" else v
            for k, v in stored.items()
        }
    np.savez(weights, **nudged)
    runs["torch nudged"] = case.run_oracle("torch", folder)
    return {name: np.array(run["losses"]) for name, run in runs.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", help="case names, e.g. examples_regression")
    opts = parser.parse_args()
    cases = load_cases()
    for name in opts.cases:
        with tempfile.TemporaryDirectory() as tmp:
            losses = measure(cases[name], Path(tmp))
        ours, theirs, nudged = losses["torchlight"], losses["torch"], losses["torch nudged"]
        print(f"{name}: {len(ours)} / {len(theirs)} / {len(nudged)} losses")
        for tol in TOLERANCES:
            print(
                f"  first step above {tol:g}: torchlight vs PyTorch {first_above(ours, theirs, tol)}, "
                f"PyTorch vs nudged PyTorch {first_above(nudged, theirs, tol)}"
            )


if __name__ == "__main__":
    main()
