"""One benchmark at two commits, side by side: is a change within noise?

    python tests-integration/benchmarks/bench_commits.py BASE [HEAD] [--repeat 5] -- \\
        bench_gpt_phases.py --threads 1 --devices cpu numba --steps 20

Each commit is checked out into its own temporary ``git worktree`` (HEAD defaults to the working
tree itself, uncommitted changes included), and the benchmark script (a path under
``tests-integration/benchmarks/``, taken from each commit's own tree) runs there with
``PYTHONPATH`` set to that tree's ``packages/*/src``, so each side imports its own torchlight.
The two sides alternate (base, head, head, base, ...), one unmeasured warm-up run each first
(numba compiles into each tree's cache), ``--repeat`` measured runs each.

Every output line that ends in numbers is a row: its leading text is the row's name, its
trailing numbers the values (``numba  210.3  180.2  25.1  415.6`` is row ``numba``). Printed: for
each row and column, the median over the runs of each side, their ratio head / base, and the
spread (lowest and highest run) of each side, so that a difference can be read against the noise.
Needs both cores idle for numbers worth quoting.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: a number, or a ratio written with a trailing ``x`` (``1.22x``)
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?x?$")


def rows(output: str) -> dict:
    """``{row name: [numbers]}`` of every line of ``output`` that ends in numbers. A name may end
    in a number (``1024x1024 sum dim 0``) when two or more spaces part it from the values. A
    Markdown table row (``| name | 4.36 | 2.04 |``) is a row too: its leading cells that are not
    numbers are the name."""
    found = {}
    for line in output.splitlines():
        line = line.strip()
        split = _split_markdown(line) if line.startswith("|") else _split(line)
        if split is not None:
            found[split[0]] = split[1]
    return found


def _number(token: str) -> float:
    return float(token.rstrip("x"))


#: a table cell with no value (``bench_compat.py`` writes it for a column it did not run)
EMPTY = "—"


def _split_markdown(line: str):
    # the values are the trailing cells that are numbers or empty (NaN, left out by summarize)
    cells = [c.strip() for c in line.strip("|").split("|")]
    k = len(cells)
    while k > 0 and (NUMBER.match(cells[k - 1]) or cells[k - 1] == EMPTY):
        k -= 1
    if k == 0 or all(c == EMPTY for c in cells[k:]):
        return None
    return " | ".join(cells[:k]), [math.nan if c == EMPTY else _number(c) for c in cells[k:]]


def _split(line: str):
    gaps = [m.start() for m in re.finditer(r"\s{2,}", line)]
    tokens = line.split()
    k = len(tokens)
    while k > 0 and NUMBER.match(tokens[k - 1]):
        k -= 1
    if k == 0 or k == len(tokens):
        return None
    for at in gaps:  # the first wide gap after which every token is a number
        name, rest = line[:at], line[at:].split()
        if len(rest) <= len(tokens) - k and all(NUMBER.match(t) for t in rest):
            return name, [_number(t) for t in rest]
    return " ".join(tokens[:k]), [_number(t) for t in tokens[k:]]


def checkout(rev: str, into: Path) -> Path:
    """A worktree of ``rev`` at ``into`` (``HEAD`` of the working tree: the tree itself)."""
    if rev == "WORKTREE":
        return ROOT
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(into), rev],
        check=True,
    )
    return into


def run(tree: Path, script: str, args: list) -> str:
    src = os.pathsep.join(str(p) for p in sorted((tree / "packages").glob("*/src")))
    env = dict(os.environ, PYTHONPATH=src)
    path = tree / "tests-integration" / "benchmarks" / script
    result = subprocess.run(
        [sys.executable, str(path), *args], cwd=tree, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"{script} at {tree} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result.stdout


def summarize(runs: dict) -> None:
    base, head = runs
    names = [n for n in rows(runs[base][0]) if n in rows(runs[head][0])]
    print(f"\n{'row':34s} {'col':>3s} {base[:10]:>10s} {head[:10]:>10s} {'head/base':>9s}  spread")
    for name in names:
        width = min(len(rows(r)[name]) for side in runs.values() for r in side)
        for col in range(width):
            a = [rows(r)[name][col] for r in runs[base]]
            b = [rows(r)[name][col] for r in runs[head]]
            if any(math.isnan(v) for v in a + b):  # an empty cell in some run
                continue
            ma, mb = statistics.median(a), statistics.median(b)
            ratio = f"{mb / ma:9.3f}" if ma else f"{'-':>9s}"
            spread = f"{min(a):g}-{max(a):g} | {min(b):g}-{max(b):g}"
            print(f"{name[:34]:34s} {col:3d} {ma:10.4g} {mb:10.4g} {ratio}  {spread}")


def main() -> None:
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument(
        "head", nargs="?", default="WORKTREE", help="default: the working tree as it is"
    )
    parser.add_argument("--repeat", type=int, default=5, help="measured runs of each side")
    opts = parser.parse_args(argv[:split])
    bench = argv[split + 1 :]
    if not bench:
        parser.error("name the benchmark after --, e.g. -- bench_gpt_phases.py --threads 1")
    script, args = bench[0], bench[1:]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {}
        try:
            for rev, sub in ((opts.base, "base"), (opts.head, "head")):
                trees[rev] = checkout(rev, Path(tmp) / sub)
            runs: dict = {rev: [] for rev in trees}
            for rev, tree in trees.items():
                print(f"warm-up {rev}", flush=True)
                run(tree, script, args)
            order = list(trees)
            for i in range(opts.repeat):
                for rev in order if i % 2 == 0 else order[::-1]:
                    output = run(trees[rev], script, args)
                    runs[rev].append(output)
                    print(f"--- run {i + 1} of {rev}\n{output.rstrip()}", flush=True)
            summarize(runs)
        finally:
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(
                        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                        check=False,
                    )


if __name__ == "__main__":
    main()
