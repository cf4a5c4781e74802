"""One recurrent layer forward + backward with the backend's ``cell_sequence`` capability (every
step in one call) and without it (the core's loop of one BLAS product and one cell call per step).

    taskset -c 1 python tests-integration/benchmarks/bench_cell_sequence.py [--repeat 5]

For each case (kind, steps T, batch N, hidden H) and backend (``cpu``, ``numba``): µs per
``recurrent_layer(...)`` plus ``(states * states).sum().backward()``, the best of ``--repeat``
timings of ``--number`` calls, float32, one thread. The work column is one step's product
``N·G·H·H`` (G = 3 gates for a GRU, 4 for an LSTM), the size the numba backend's
``SEQUENCE_MAX_WORK`` compares; a declined case runs the step loop in both columns
(``TORCHLIGHT_NUMBA_SEQUENCE_MAX_WORK=1048576`` makes the kernel take every case).
"""

from __future__ import annotations

import argparse
import timeit

from thread_pools import default_threads

if __name__ == "__main__":  # one thread per pool, before numpy and numba load and read it
    default_threads(1)

import numpy as np  # noqa: E402

import torchlight as tl  # noqa: E402
from torchlight.tensor.functions.recurrent import CELLS, recurrent_layer  # noqa: E402

#: (kind, T, N, H): the BiLSTM-CRF tutorial's layer, small and mid-sized batches, near the threshold
CASES = [
    ("lstm", 11, 1, 2),
    ("gru", 32, 1, 64),
    ("gru", 16, 16, 16),
    ("lstm", 16, 4, 32),
    ("lstm", 16, 16, 16),
    ("gru", 16, 16, 24),
    ("lstm", 16, 8, 32),
    ("lstm", 16, 64, 64),
]


def time_layer(kind, steps, n, hid, device, number, repeat):
    """Best µs per forward + backward of one layer on ``device``."""
    rng = np.random.default_rng(0)
    g = CELLS[kind].gates * hid

    def leaf(*shape):
        return tl.tensor(
            rng.standard_normal(shape), dtype=tl.float32, device=device, requires_grad=True
        )

    gi, h0, w, b = leaf(steps, n, g), leaf(n, hid), leaf(g, hid), leaf(g)
    c0 = leaf(n, hid) if kind == "lstm" else None

    def step():
        states = recurrent_layer(kind, gi, h0, c0, w, b)
        (states * states).sum().backward()

    step()  # numba compiles (or loads) its kernels here
    return min(timeit.repeat(step, number=number, repeat=repeat)) / number * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=50)
    args = parser.parse_args(argv)
    print("| layer (T, N, H) | work N·G·H² | device | µs whole sequence | µs step loop | ratio |")
    print("|---|---:|---|---:|---:|---:|")
    for kind, steps, n, hid in CASES:
        for device in ("cpu", "numba"):
            be = tl.ones(1, device=device).backend
            whole = time_layer(kind, steps, n, hid, device, args.number, args.repeat)
            shipped = be.capabilities
            be.capabilities = shipped - {"cell_sequence"}
            try:
                loop = time_layer(kind, steps, n, hid, device, args.number, args.repeat)
            finally:
                be.capabilities = shipped
            work = n * CELLS[kind].gates * hid * hid
            print(
                f"| {kind} ({steps}, {n}, {hid}) | {work} | {device} | {whole:.0f} | {loop:.0f} "
                f"| {whole / loop:.2f} |"
            )


if __name__ == "__main__":
    main()
