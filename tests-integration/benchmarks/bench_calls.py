"""Python function calls per training step of the compatibility programs on torchlight: a count
that does not move with the machine's load.

    python tests-integration/benchmarks/bench_calls.py [--only NAME ...] [--device cpu|numba]

Each program runs under ``cProfile`` as ``python -m torchlight.compat``, once with N and once
with 2N steps (N = the suite's step count) after an unmeasured run; a step's calls are the
difference over N. On this
project's shared machines a timing can move by tens of percent within an hour, so whether a
change added work to a program's step is better read here first: the count is the same on
every run, and ``bench_commits.py BASE -- bench_calls.py --only ...`` compares two commits in
one repetition. It counts Python-level calls (each op's dispatch, autograd bookkeeping, module
calls), not the time inside numpy: a change to a kernel shows in ``bench_ops.py``, not here.
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_compat import base_steps, child_env, programs, with_steps  # noqa: E402


def calls(prog, script, folder: Path, n: int, device: str) -> int:
    """Python function calls of one run of ``prog`` with ``n`` steps (cProfile's total)."""
    out = folder / f"calls-{n}.prof"
    env = child_env("numpy", 1, prog.env)
    env["TORCHLIGHT_DEVICE"] = device
    args = with_steps(prog.args, prog.steps, n)
    command = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "torchlight.compat"]
    subprocess.run(
        [*command, str(script), *args],
        cwd=folder,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=prog.timeout,
    )
    return pstats.Stats(str(out)).total_calls


def calls_per_step(prog, device: str, workdir: str) -> float:
    """``(calls(2N) - calls(N)) / N`` with N the suite's step count."""
    folder = Path(tempfile.mkdtemp(prefix=f"{prog.name}-", dir=workdir))
    script = prog.prepare(folder)
    n = base_steps(prog.args, prog.steps)
    # unmeasured first: a fresh tree's first run also compiles bytecode and fills caches
    calls(prog, script, folder, n, device)
    return (calls(prog, script, folder, 2 * n, device) - calls(prog, script, folder, n, device)) / n


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these programs only")
    parser.add_argument("--device", default="cpu", help="torchlight's device (default cpu)")
    args = parser.parse_args(argv)
    found = {name: p for name, p in programs().items() if p.steps}
    names = args.only or sorted(found)
    unknown = sorted(set(names) - set(found))
    if unknown:
        raise SystemExit(f"unknown or whole-run programs {unknown}; per-step: {sorted(found)}")
    print(f"| program | Python calls per step ({args.device}) |")
    print("|---|---:|")
    with tempfile.TemporaryDirectory() as workdir:
        for name in names:
            print(f"| {name} | {calls_per_step(found[name], args.device, workdir):.0f} |")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
