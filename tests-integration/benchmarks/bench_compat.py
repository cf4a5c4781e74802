"""The compatibility programs timed side by side: torchlight's numpy backend, its numba backend,
the numba backend with the training step captured, and PyTorch eager, per training step, at 1
and 2 threads, with each run's peak memory.

Run: ``python tests-integration/benchmarks/bench_compat.py [--threads 1 2] [--repeat 3]
[--quick] [--only NAME ...] [--json PATH]`` (or ``nox -s bench``). The programs are those of the
compatibility suite, unchanged: the verbatim public programs (``compat/public/<name>/``, their
``case.py`` gives the data setup, the small settings and the flags that set the step count) and
the suite's own programs (``compat/test_programs.py``'s table). Every run is a fresh child
process: ``python -m torchlight.compat`` with ``TORCHLIGHT_DEVICE=cpu`` (the numpy backend) or
``numba`` (where a program's own ``"cpu"`` then names numba too), and the plain script under PyTorch (the column is left out, with a note, when PyTorch
is not importable; it is never a dependency). The captured column runs, on numba, the programs
of the suite that take ``--capture`` (``test_programs.py``: ``capture=True``), the one line a
user adds to replay a training step with ``tl.jit.capture_step``; other programs leave it empty.

Per training step: a program with a steps flag runs with N and with 2N steps (N = its suite
setting times ``--scale``, grown until the N extra steps take ``--min-seconds`` on every
framework, see :func:`calibrate`); ``(t(2N) - t(N)) / N`` leaves out the imports, the data setup
and numba's compilation, which both runs pay alike. A program without one is timed as a whole run
(``mode`` says which). Peak memory is the child's peak resident set (``ru_maxrss`` from
``os.wait4``) in the 2N run. Each figure is the median over ``--repeat`` repetitions, the
frameworks taking turns in a rotating order within each. The ratio is the faster torchlight
backend over PyTorch (< 1: torchlight is faster); the summary gives the geometric mean and the
worst ratio over the per-step rows (whole runs are dominated by the imports).

``--paired`` (one thread): each torchlight backend runs at the same time as PyTorch, each child
pinned to a core of its own (``taskset``), twice per repetition with the cores swapped; the
repetition's ratio is the geometric mean of the two pairs' ratios and a row's ratio the median
over the repetitions. This project's shared machines have slow spells of tens of seconds, and
their two cores are not always equally fast: run one after the other, a spell falls on one
framework's run and not the other's, while run together both sides live through it (the
mini-GPT race, ``bench_gpt_race.py``, runs its sides the same way), and swapping the cores
cancels a steady difference between them (``√((a·s)/b · a/(b·s)) = a/b`` for a core ``s`` times
slower).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

COMPAT = Path(__file__).resolve().parent.parent / "compat"
sys.path.insert(0, str(COMPAT))

import test_programs  # noqa: E402
from compat_helpers import PROGRAMS as PROGRAMS_DIR  # noqa: E402
from compat_helpers import numba_available  # noqa: E402
from public_cases import load_cases  # noqa: E402
from thread_pools import thread_env  # noqa: E402

#: column keys, in the table's order, and their headings
FRAMEWORKS = ("numpy", "numba", "captured", "torch")
HEADINGS = {
    "numpy": "torchlight-numpy",
    "numba": "torchlight-numba",
    "captured": "torchlight-numba, captured step",
    "torch": "PyTorch",
}
TORCHLIGHT_DEVICE = {"numpy": "cpu", "numba": "numba", "captured": "numba"}
#: the torchlight columns, one of which is the ratio's numerator
TORCHLIGHT = ("numpy", "numba", "captured")
#: what the captured column adds to a program's arguments
CAPTURE_FLAG = "--capture"
#: PyTorch 2.6+ refuses to unpickle the numpy array time_sequence_prediction's data file holds
TORCH_ENV = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
#: a handful of small programs of each kind for ``--quick``
QUICK = ("makemore_mlp", "nanogpt_train", "custom_function", "tutorial_bow_classifier")
#: the least time (s) the N extra steps of a 2N run may take (see ``calibrate``)
MIN_SECONDS = 2.0
#: how often ``calibrate`` may grow N for one framework
CALIBRATION_ROUNDS = 3


@dataclass
class Program:
    """One program as the benchmark runs it: ``prepare(folder)`` writes its data there and returns
    the script's path; ``steps`` are the flags in ``args`` that set its step count;
    ``setup_for_torch(folder)``, when given, rewrites the data files in PyTorch's format for the
    PyTorch run (a file written by ``torchlight.save`` is not one PyTorch reads)."""

    name: str
    prepare: object
    args: list
    steps: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    timeout: float = 600
    setup_for_torch: object = None
    capture: bool = False


def _in_child(case_file: Path) -> object:
    """``setup_for_torch(folder)`` of ``case_file``, run in a child process: it imports PyTorch,
    and a benchmark process grown by PyTorch's import would pass its size on to every child it
    forks (a child's peak RSS counts from the fork)."""
    code = (
        "import importlib.util, sys; from pathlib import Path; "
        "spec = importlib.util.spec_from_file_location('case', sys.argv[1]); "
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); "
        "mod.setup_for_torch(Path(sys.argv[2]))"
    )

    def setup(folder: Path) -> None:
        subprocess.run([sys.executable, "-c", code, str(case_file), str(folder)], check=True)

    return setup


def _own(prog) -> object:
    def prepare(folder: Path) -> Path:
        if prog.setup is not None:
            prog.setup(folder)
        return PROGRAMS_DIR / prog.script

    return prepare


def programs() -> dict[str, Program]:
    """Every program of the compatibility suite, public ones first, by name."""
    found = {
        name: Program(
            name,
            case.prepare,
            case.args,
            case.steps,
            case.env,
            case.timeout,
            _in_child(case.folder / "case.py") if case.setup_for_torch else None,
        )
        for name, case in load_cases().items()
    }
    for name, prog in test_programs.PROGRAMS.items():
        found[name] = Program(
            name, _own(prog), [str(a) for a in prog.args], list(prog.steps), capture=prog.capture
        )
    return found


def base_steps(args: list, flags: list) -> int:
    """The step count ``args`` give the first of ``flags`` (``--f N`` or ``--f=N``)."""
    flag = flags[0]
    for i, arg in enumerate(args):
        if arg == flag:
            return int(args[i + 1])
        if arg.startswith(flag + "="):
            return int(arg.split("=", 1)[1])
    raise ValueError(f"{flag} is not among the program's arguments {args}")


def with_steps(args: list, flags: list, n: int) -> list:
    """``args`` with every one of ``flags`` set to ``n``, in the spelling ``args`` use."""
    out = list(args)
    for flag in flags:
        hits = [i for i, a in enumerate(out) if a == flag or a.startswith(flag + "=")]
        if not hits:
            raise ValueError(f"{flag} is not among the program's arguments {args}")
        for i in hits:
            if out[i] == flag:
                out[i + 1] = str(n)
            else:
                out[i] = f"{flag}={n}"
    return out


def step_time(t_n: float, t_2n: float, n: int) -> float:
    """Time of one step from whole runs of N and 2N steps: what the N extra steps added, over N."""
    return (t_2n - t_n) / n


def median(values: list) -> float | None:
    """The median of the values that are not ``None`` (failed runs), ``None`` if there are none."""
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def geomean(values: list) -> float | None:
    """exp(mean(log v)): the mean of ratios that treats 2x and 0.5x alike."""
    kept = [v for v in values if v is not None and v > 0]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else None


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def available_frameworks(wanted=FRAMEWORKS) -> tuple[list, list]:
    """The frameworks of ``wanted`` that can run here, and a note for each one left out."""
    kept, notes = [], []
    for fw in wanted:
        if fw == "torch" and not torch_available():
            notes.append("PyTorch is not importable: its column is left out")
        elif fw in ("numba", "captured") and not numba_available():
            notes.append(f"the numba backend is not available: the {fw} column is left out")
        else:
            kept.append(fw)
    return kept, notes


def child_env(framework: str, threads: int, extra: dict) -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", **extra)
    # Imports are not what is measured: without bytecode caches every child compiles each module
    # it imports (seconds for PyTorch), and that jitter swamps the difference of two short runs.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(thread_env(threads))
    if framework == "torch":
        env.pop("TORCHLIGHT_DEVICE", None)
        env.update(TORCH_ENV)
    else:
        env["TORCHLIGHT_DEVICE"] = TORCHLIGHT_DEVICE[framework]
    return env


def run_once(framework, script, args, folder, env, timeout, core=None) -> tuple[float, float]:
    """Run the program once in a child (pinned to ``core`` when given); its wall time (s) and
    peak RSS (MiB). Raises on failure."""
    runner = [] if framework == "torch" else ["-m", "torchlight.compat"]
    pin = [] if core is None else ["taskset", "-c", str(core)]  # taskset execs: same process
    with open(folder / "stdout.log", "w") as out, open(folder / "stderr.log", "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*pin, sys.executable, *runner, str(script), *args],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=err,
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = (folder / "stderr.log").read_text(errors="replace")[-1500:]
        why = f"ran past its {timeout:.0f} s" if proc.returncode == -9 else "failed"
        raise RuntimeError(f"{script.name} on {framework} {why} (exit {proc.returncode}):\n{tail}")
    return wall, usage.ru_maxrss / 1024  # Linux gives KiB


def columns(prog, frameworks) -> list:
    """The columns of ``frameworks`` that ``prog`` runs in: the captured one only for a program
    that takes ``--capture``."""
    return [fw for fw in frameworks if fw != "captured" or prog.capture]


def args_for(prog, framework) -> list:
    """The program's arguments on ``framework``: with ``--capture`` for the captured column."""
    return [*prog.args, CAPTURE_FLAG] if framework == "captured" else list(prog.args)


def warm_up(prog, framework, folder, script, threads) -> None:
    """Run the program once with its suite settings, unmeasured."""
    env = child_env(framework, threads, prog.env)
    run_once(framework, script, args_for(prog, framework), folder, env, prog.timeout)


def _n_and_2n(prog, framework, folder, script, threads, n, core=None) -> tuple[float, float, float]:
    """Wall times (s) of runs of N and 2N steps, and the 2N run's peak RSS (MiB)."""
    env = child_env(framework, threads, prog.env)
    runs = [
        run_once(
            framework,
            script,
            with_steps(args_for(prog, framework), prog.steps, k),
            folder,
            env,
            prog.timeout,
            core,
        )
        for k in (n, 2 * n)
    ]
    return runs[0][0], runs[1][0], runs[1][1]


def measure(prog, framework, folder, script, threads, n, core=None) -> dict:
    """One repetition of ``prog`` on ``framework`` (N = ``n`` steps): ms per step (or per whole
    run) and peak RSS."""
    if not prog.steps:
        env = child_env(framework, threads, prog.env)
        wall, rss = run_once(
            framework, script, args_for(prog, framework), folder, env, prog.timeout, core
        )
        return {"ms": wall * 1e3, "rss_mib": rss}
    t_n, t_2n, rss = _n_and_2n(prog, framework, folder, script, threads, n, core)
    return {"ms": step_time(t_n, t_2n, n) * 1e3, "rss_mib": rss}


def pair_cores() -> tuple[int, int]:
    """The two cores ``--paired`` pins its sides to: the first two this process may use."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise SystemExit(f"--paired needs two cores, this process may use {allowed}")
    return allowed[0], allowed[1]


def measure_pair(prog, framework, folders, n, cores) -> tuple[dict, dict]:
    """One repetition of ``framework`` and PyTorch at the same time, one thread each, pinned to
    ``cores`` (``framework``'s first): ``({side: measure(...)}, {side: error})``."""
    results, errors = {}, {}

    def go(side, core):
        try:
            results[side] = measure(prog, side, *folders[side], 1, n, core)
        except RuntimeError as exc:
            errors[side] = str(exc)

    sides = [threading.Thread(target=go, args=pair) for pair in zip((framework, "torch"), cores)]
    for t in sides:
        t.start()
    for t in sides:
        t.join()
    return results, errors


def calibrate(prog, frameworks, folders, threads, n, min_seconds, errors) -> int:
    """The step count N for every measured run of ``prog``: ``n``, grown until the N extra steps
    of the 2N run take at least ``min_seconds`` on each framework.

    A step time is a difference of two whole-process times, so it is only as exact as a process
    start is repeatable (±0.1 s seen here); N extra steps worth ``min_seconds`` keep that error
    to a few percent. The fastest framework needs the largest N, and all use the same one. N
    never grows so far that a 2N run could pass half the program's timeout.
    """
    if not prog.steps or min_seconds <= 0:
        return n
    for fw in frameworks:
        for _ in range(CALIBRATION_ROUNDS):
            if fw in errors:
                break
            try:
                t_n, t_2n, _ = _n_and_2n(prog, fw, *folders[fw], threads, n)
            except RuntimeError as exc:
                errors[fw] = str(exc)
                break
            extra = t_2n - t_n
            if extra >= min_seconds:
                break
            grow = 4 if extra <= 0 else min(8, math.ceil(1.25 * min_seconds / extra))
            if t_2n * grow > prog.timeout / 2:
                break
            n *= grow
    return n


def _pair(prog, fw, folders, n, cores, samples, errors) -> float | None:
    """One :func:`measure_pair` of ``fw`` beside PyTorch, its samples and errors recorded: the
    ratio of the two step times, or None (a failure, or a step time below the noise)."""
    if fw in errors or "torch" in errors:
        return None
    results, failed = measure_pair(prog, fw, folders, n, cores)
    errors.update(failed)
    for side, sample in results.items():
        samples[side].append(sample)
    if failed or results["torch"]["ms"] <= 0 or results[fw]["ms"] <= 0:
        return None
    return results[fw]["ms"] / results["torch"]["ms"]


def bench_program(
    prog,
    frameworks,
    threads,
    repeat,
    scale,
    workdir,
    progress=None,
    min_seconds=MIN_SECONDS,
    paired=None,
) -> dict:
    """The row of ``prog`` at ``threads``: the median over ``repeat`` repetitions per framework.
    ``paired``: the two cores of ``--paired`` (each torchlight backend beside PyTorch), or None.
    The captured column is run only for a program that takes ``--capture``."""
    frameworks = columns(prog, frameworks)
    # a folder per framework, so that no run reads what another framework's run wrote there
    folders = {}
    for fw in frameworks:
        folder = Path(tempfile.mkdtemp(prefix=f"{prog.name}-{fw}-", dir=workdir))
        folders[fw] = (folder, prog.prepare(folder))
        if fw == "torch" and prog.setup_for_torch is not None:
            prog.setup_for_torch(folder)
    samples = {fw: [] for fw in frameworks}
    errors = {}
    # one unmeasured run each first: it fills numba's kernel cache and the OS's file cache, which
    # the first measured run would otherwise pay for alone (t(2N) < t(N) was seen without it)
    for fw in frameworks:
        try:
            warm_up(prog, fw, *folders[fw], threads)
        except RuntimeError as exc:
            errors[fw] = str(exc)
        if progress is not None:
            progress.update(1)
    n = base_steps(prog.args, prog.steps) * scale if prog.steps else None
    n = calibrate(prog, frameworks, folders, threads, n, min_seconds, errors)
    pair_ratios = {fw: [] for fw in frameworks if fw != "torch"}
    for r in range(repeat):
        # a rotating order, so that no framework always runs right after the same other one
        turn = list(pair_ratios) if paired else frameworks
        for fw in turn[r % len(turn) :] + turn[: r % len(turn)]:
            if paired:
                both = [
                    _pair(prog, fw, folders, n, c, samples, errors) for c in (paired, paired[::-1])
                ]
                if None not in both:
                    pair_ratios[fw].append(math.sqrt(both[0] * both[1]))
            elif fw not in errors:
                try:
                    samples[fw].append(measure(prog, fw, *folders[fw], threads, n))
                except RuntimeError as exc:
                    errors[fw] = str(exc)
            if progress is not None:
                progress.update(2 if paired else 1)
    row = {
        "program": prog.name,
        "mode": f"per {prog.steps[0]}" if prog.steps else "whole run",
        "threads": threads,
        "steps": n,
        "ms": {fw: median([s["ms"] for s in samples.get(fw, [])]) for fw in FRAMEWORKS},
        "rss_mib": {fw: median([s["rss_mib"] for s in samples.get(fw, [])]) for fw in FRAMEWORKS},
        "errors": errors,
    }
    if paired:
        row["pair_ratios"] = pair_ratios
        best = [median(v) for v in pair_ratios.values() if median(v) is not None]
        row["ratio"] = min(best) if best and row["ms"]["torch"] is not None else None
    else:
        row["ratio"] = ratio(row["ms"])
    return row


def ratio(ms: dict) -> float | None:
    """The fastest torchlight column's time over PyTorch's. A time that is not positive (t(2N)
    no longer than t(N): the step is shorter than the timing noise) gives no ratio."""
    best = [ms[fw] for fw in TORCHLIGHT if ms.get(fw) is not None and ms[fw] > 0]
    torch_ms = ms["torch"]
    return min(best) / torch_ms if best and torch_ms is not None and torch_ms > 0 else None


def summarize(rows: list) -> dict:
    """Geometric mean and worst of the best-torchlight / PyTorch ratios over the per-step rows."""
    ratios = [r["ratio"] for r in rows if r["mode"] != "whole run" and r["ratio"] is not None]
    worst = max(
        (r for r in rows if r["mode"] != "whole run" and r["ratio"] is not None),
        key=lambda r: r["ratio"],
        default=None,
    )
    return {
        "geomean_ratio": geomean(ratios),
        "worst_ratio": worst["ratio"] if worst else None,
        "worst_program": f"{worst['program']} (threads={worst['threads']})" if worst else None,
        "rows_in_summary": len(ratios),
    }


def _cell(value, digits=1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _first_and_last(message: str) -> str:
    """The first line of a failure and the last line of the child's stderr (the exception)."""
    lines = [line for line in message.splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


def table(rows: list, summary: dict, notes: list) -> str:
    """The markdown table of ``rows``, then the summary and the notes."""
    head = ["program", "mode", "threads"]
    head += [f"ms {HEADINGS[fw]}" for fw in FRAMEWORKS] + ["best torchlight / PyTorch"]
    head += [f"RSS MiB {HEADINGS[fw]}" for fw in FRAMEWORKS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (2 * len(FRAMEWORKS) + 1)]
    for r in rows:
        cells = [r["program"], r["mode"], str(r["threads"])]
        cells += [_cell(r["ms"][fw], 2) for fw in FRAMEWORKS] + [_cell(r["ratio"], 2)]
        cells += [_cell(r["rss_mib"][fw], 0) for fw in FRAMEWORKS]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"geometric mean of the ratios (per-step rows): {_cell(summary['geomean_ratio'], 2)}; "
        f"worst: {_cell(summary['worst_ratio'], 2)} {summary['worst_program'] or ''}".rstrip()
    )
    failures = [
        f"{r['program']} on {HEADINGS[fw]}: {_first_and_last(message)}"
        for r in rows
        for fw, message in r["errors"].items()
    ]
    noisy = [
        f"{r['program']} (threads={r['threads']}) on {HEADINGS[fw]}: a step time that is not "
        "positive is below the timing noise; raise --min-seconds (or --repeat) for it"
        for r in rows
        for fw in FRAMEWORKS
        if r["ms"][fw] is not None and r["ms"][fw] <= 0
    ]
    lines += [f"- {note}" for note in [*notes, *failures, *noisy]]
    return "\n".join(lines)


def run(
    names, threads, repeat, scale, wanted=FRAMEWORKS, min_seconds=MIN_SECONDS, paired=False
) -> dict:
    """Benchmark ``names`` at every thread count; ``{"rows", "summary", "notes", "settings"}``."""
    catalogue = programs()
    unknown = sorted(set(names) - set(catalogue))
    if unknown:
        raise SystemExit(f"unknown programs {unknown}; known: {sorted(catalogue)}")
    frameworks, notes = available_frameworks(wanted)
    cores = None
    if paired:
        if list(threads) != [1] or "torch" not in frameworks:
            raise SystemExit("--paired runs one thread a side beside PyTorch: use --threads 1")
        cores = pair_cores()
        notes.append(
            f"paired: each torchlight backend beside PyTorch on cores {cores}, both ways round"
        )
    rows = []
    total = 0
    for name in names:
        cols = columns(catalogue[name], frameworks)
        turns = 2 * (len(cols) - 1) if paired else len(cols)
        total += len(threads) * (len(cols) + repeat * turns)
    with (
        tempfile.TemporaryDirectory(prefix="bench-compat-") as workdir,
        tqdm(total=total, desc="bench_compat", file=sys.stderr) as progress,
    ):
        for name in names:
            for t in threads:
                progress.set_postfix_str(f"{name} x{t}")
                prog = catalogue[name]
                rows.append(
                    bench_program(
                        prog, frameworks, t, repeat, scale, workdir, progress, min_seconds, cores
                    )
                )
    settings = {
        "threads": threads,
        "repeat": repeat,
        "scale": scale,
        "min_seconds": min_seconds,
        "frameworks": frameworks,
        "paired": cores,
    }
    return {"rows": rows, "summary": summarize(rows), "notes": notes, "settings": settings}


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--threads", type=int, nargs="+", help="thread counts (default 1 2; 1 with --paired)"
    )
    p.add_argument("--repeat", type=int, default=3, help="repetitions (the median is reported)")
    p.add_argument(
        "--scale", type=int, default=4, help="N = the suite's step count times this (default 4)"
    )
    p.add_argument(
        "--min-seconds",
        type=float,
        default=MIN_SECONDS,
        help="grow N until N steps take this long on every framework (0: keep N; default %(default)s)",
    )
    p.add_argument("--only", nargs="+", metavar="NAME", help="these programs only")
    p.add_argument("--quick", action="store_true", help=f"1 repeat, 1 thread, {', '.join(QUICK)}")
    p.add_argument(
        "--frameworks",
        nargs="+",
        choices=FRAMEWORKS,
        default=list(FRAMEWORKS),
        help="the columns to run (default: all)",
    )
    p.add_argument(
        "--paired",
        action="store_true",
        help="one thread: run each torchlight backend at the same time as PyTorch, a core each",
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse(argv)
    names = args.only or (list(QUICK) if args.quick else list(programs()))
    threads = args.threads or ([1] if args.paired else [1, 2])
    threads, repeat = ([1], 1) if args.quick else (threads, args.repeat)
    result = run(
        names,
        threads,
        repeat,
        args.scale,
        wanted=tuple(fw for fw in FRAMEWORKS if fw in args.frameworks),
        min_seconds=args.min_seconds,
        paired=args.paired,
    )
    print(table(result["rows"], result["summary"], result["notes"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
