"""Machine instructions per call of ``bench_ops.py``'s cases, torchlight beside PyTorch: a cost
that does not move with the machine's load.

Run: ``python tests-integration/benchmarks/bench_instructions.py [--only NAME ...] [--number 500]
[--device cpu|numba] [--no-torch]``. Needs valgrind (``apt install valgrind``).

On this project's shared 2-core machines one op's time moves by tens of percent between two
processes started a minute apart (``i + 64`` on a 0-d int64 tensor read 4.6 µs in one process
and 8.3 in the next), so a change of a few percent to an op's Python path cannot be seen in a timing.
The number of instructions the CPU executes for the call can: each framework runs all its cases
in one child process under valgrind's callgrind, which counts every instruction (Python's
interpreter, numpy's C, BLAS) and writes a count at each ``os.getppid()`` call the child makes as a
marker (``--dump-before=getppid``). The child builds a case, calls it three times, marks, calls it
``--number`` times, marks; the count between the two marks over ``--number`` is the case's cost,
less that of the same loop around an empty call. The count repeats to within about a percent
(the child runs with ``PYTHONHASHSEED=0``; memory addresses still move a few branches). It is
not a time: a cache miss or a slow ``exp`` costs more time per instruction. It reads the Python
overhead of small ops, where the instructions are the cost, and a change to it, in one
repetition (``bench_commits.py BASE -- bench_instructions.py --only ...`` where BASE has this
script; else ``PYTHONPATH`` on the base tree's ``packages/*/src``). Under valgrind a run is about 50 times slower; PyTorch's import alone takes a
minute or two.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ops  # noqa: E402
from thread_pools import thread_env  # noqa: E402

MARKER = "getppid"
"""The C function whose entry makes callgrind write its count so far: called from Python as
``os.getppid()``, which nothing else in a child calls."""

WARM = 3
"""Calls of a case before its count starts: first calls fill caches (a view's memo, a compiled
kernel) that a training loop's later steps find filled."""


def child(framework: str, device: str, names: list, number: int) -> None:
    """Run in the child under callgrind: the empty loop, then each case, between markers."""
    m = importlib.import_module(framework)
    calls = [lambda: None]
    for name in names:
        if framework == "torchlight":
            with m.device(device):
                calls.append(bench_ops.CASES[name](m))
        else:
            calls.append(bench_ops.CASES[name](m))
    gc.disable()  # a collection inside one case's loop would be counted against it
    for call in calls:
        for _ in range(WARM):
            call()
        os.getppid()
        for _ in range(number):
            call()
        os.getppid()


def counts(dump_dir: Path) -> list:
    """The instruction counts of callgrind's dumps in ``dump_dir``, in the order written (the
    files ``cg.out.1``, ``cg.out.2``, ...; ``cg.out`` itself holds what ran after the last one)."""
    found = {}
    for path in dump_dir.glob("cg.out.*"):
        for line in path.read_text().splitlines():
            if line.startswith("summary:"):
                found[int(path.name.rsplit(".", 1)[1])] = int(line.split()[1])
                break
    return [found[k] for k in sorted(found)]


def per_call(dumps: list, n_cases: int, number: int) -> list:
    """Instructions per call of each case from the dumps of :func:`child`: dump ``2k + 1``
    (0-based) is case ``k``'s loop, case 0 the empty call whose loop is subtracted."""
    if len(dumps) < 2 * n_cases + 1:
        raise RuntimeError(f"expected {2 * n_cases + 1} callgrind dumps, found {len(dumps)}")
    loops = [dumps[2 * k + 1] for k in range(n_cases + 1)]
    return [(loop - loops[0]) / number for loop in loops[1:]]


def measure(framework: str, device: str, names: list, number: int) -> list:
    """Instructions per call of ``names`` on ``framework`` (``torchlight`` or ``torch``)."""
    with tempfile.TemporaryDirectory() as folder:
        script = [Path(__file__).resolve(), "--child", framework, "--device", device]
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--dump-before={MARKER}",
            f"--callgrind-out-file={folder}/cg.out",
            sys.executable,
            *map(str, script),
            "--number",
            str(number),
            "--only",
            *names,
        ]
        env = dict(os.environ, PYTHONHASHSEED="0")
        env.update(thread_env(1))
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{framework} under callgrind failed:\n{done.stderr[-2000:]}")
        return per_call(counts(Path(folder)), len(names), number)


def table(names: list, ours: list, theirs: list | None) -> str:
    """The markdown table: instructions per call and the ratio, with the geometric mean."""
    lines = [
        "| case | instructions torchlight | instructions PyTorch | torchlight / PyTorch |",
        "|---|---:|---:|---:|",
    ]
    ratios = []
    for i, name in enumerate(names):
        if theirs is None:
            lines.append(f"| {name} | {ours[i]:,.0f} | — | — |")
            continue
        ratios.append(ours[i] / theirs[i])
        lines.append(f"| {name} | {ours[i]:,.0f} | {theirs[i]:,.0f} | {ratios[-1]:.2f} |")
    if ratios:
        lines.append(f"\ngeometric mean of the ratios: {bench_ops.geomean(ratios):.2f}")
    return "\n".join(lines)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", metavar="NAME", help="these cases only")
    p.add_argument("--number", type=int, default=500, help="counted calls per case")
    p.add_argument("--device", default="cpu", help="torchlight's device (cpu, numba, ...)")
    p.add_argument("--no-torch", action="store_true", help="torchlight's column only")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    names = args.only or list(bench_ops.CASES)
    unknown = sorted(set(names) - set(bench_ops.CASES))
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {sorted(bench_ops.CASES)}")
    if args.child:
        child(args.child, args.device, names, args.number)
        return {}
    if shutil.which("valgrind") is None:
        raise SystemExit(
            "bench_instructions.py counts with valgrind: install it (apt install valgrind)"
        )
    ours = measure("torchlight", args.device, names, args.number)
    with_torch = not args.no_torch and importlib.util.find_spec("torch") is not None
    theirs = measure("torch", args.device, names, args.number) if with_torch else None
    print(table(names, ours, theirs))
    return {"names": names, "torchlight": ours, "torch": theirs}


if __name__ == "__main__":
    main()
