"""The fixed cost of one call on a small array: into numba-compiled code, and into numpy.

    python tests-integration/benchmarks/bench_call_costs.py [--number 20000] [--repeat 7]

On a tensor of a few dozen values an op's time is its calls, not its arithmetic. This times, on
one row of 18 float32 values (a classifier's logits), a numba function that does nothing with
two arrays (numba's dispatch: typing the arguments, finding the compiled version), the same
function computing the whole log-softmax of the row, and numpy's calls: one ufunc, one
``keepdims`` reduction, and the five calls of a log-softmax written with numpy (max, subtract,
exp and sum, log, subtract). The best of ``--repeat`` runs of ``--number`` calls each, in µs per
call. Pure numpy and numba: no torchlight code runs.
"""

from __future__ import annotations

import argparse
import timeit

import numba
import numpy as np


@numba.njit
def nothing(x, out):
    """Two arrays in, no work: what calling compiled code costs."""


@numba.njit
def log_softmax_row(x, out):
    """``out = x - log Σ exp(x)`` over one row, shifted by its max, in one pass each."""
    m = x[0]
    for v in x:
        m = max(m, v)
    s = 0.0
    for v in x:
        s += np.exp(v - m)
    lse = np.log(s) + m
    for j in range(x.size):
        out[j] = x[j] - lse


def numpy_log_softmax(x, out):
    """The same log-softmax as numpy calls, written into ``out`` (no temporaries of x's size)."""
    np.subtract(x, np.maximum.reduce(x, keepdims=True), out=out)
    s = np.add.reduce(np.exp(out), keepdims=True)
    np.subtract(out, np.log(s, out=s), out=out)


def measure(number: int, repeat: int) -> list[tuple[str, float]]:
    """``(what, µs per call)`` for each call, best of ``repeat`` runs of ``number`` calls."""
    x = np.linspace(-3, 3, 18, dtype=np.float32)
    out = np.empty_like(x)
    cases = [
        ("numba function, two arrays, empty body", lambda: nothing(x, out)),
        ("numba function computing the log-softmax", lambda: log_softmax_row(x, out)),
        ("numpy: np.exp(x)", lambda: np.exp(x)),
        ("numpy: np.add.reduce(x, keepdims=True)", lambda: np.add.reduce(x, keepdims=True)),
        ("numpy: the log-softmax as 5 ufunc calls", lambda: numpy_log_softmax(x, out)),
    ]
    rows = []
    for what, call in cases:
        call()  # compiles the numba functions
        best = min(timeit.repeat(call, number=number, repeat=repeat)) / number
        rows.append((what, best * 1e6))
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--number", type=int, default=20000, help="calls per run")
    p.add_argument("--repeat", type=int, default=7, help="runs (the best is reported)")
    args = p.parse_args(argv)
    print("| call (one row of 18 float32 values) | µs per call |")
    print("|---|---:|")
    for what, us in measure(args.number, args.repeat):
        print(f"| {what} | {us:.2f} |")


if __name__ == "__main__":
    main()
