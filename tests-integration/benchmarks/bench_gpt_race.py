"""The mini-GPT trained side by side on torchlight and on PyTorch eager: wall time to a validation loss.

Run: ``python tests-integration/benchmarks/bench_gpt_race.py [--minutes 60] [--target 1.50]
[--backend numba] [--eval-every 100] [--out DIR]`` (or ``nox -s bench``). The model and recipe are
``projects/mini-gpt``'s headline preset (``train.py --preset headline``: 4 layers, width 192,
context 128, batch 32, AdamW with warmup and a cosine over 4,384 steps, clipping at 1.0, dropout
0.1): the same initial weights (the project's model after ``tl.manual_seed(seed)``), the same
batch at every step (``train.py``'s draws), the same learning rate at every step and the same
fixed validation batches, all written once into a recipe that both sides read
(``gpt_race_recipe.py``).

Both sides run one program, ``gpt_race_program.py``, written against PyTorch's API: under
PyTorch as a plain script, under torchlight through ``python -m torchlight.compat`` with
``TORCHLIGHT_DEVICE`` set to ``--backend``. Each is a child process pinned to a core of its own
(``os.sched_setaffinity``) with one thread (``OMP``/``OPENBLAS``/``MKL``/``NUMBA_NUM_THREADS=1``);
by default they run at the same time (``--sequential``: one after the other). Each trains for at
most ``--minutes`` of training clock (evaluations pause the clock) and evaluates the validation
loss every ``--eval-every`` steps.

``--capture`` runs the torchlight side with its training step captured (``gpt_race_program.py
--capture``: ``torch.jit.capture_step``, replayed kernel calls).

Reported per framework: the training time at which the validation loss first reaches
``--target`` (linear interpolation between the two evaluations around the crossing), the step
there, tokens per second, the last validation loss and the child's peak RSS; and the ratio
torchlight / PyTorch of the crossing times (the issue's bar: <= 1.1). Written to ``--out``:
``race.json`` (settings, every evaluation, the summary) and ``race.png`` (validation loss against
training time). PyTorch is optional: without it the torchlight side runs alone and the ratio is
left out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gpt_race_recipe import preset_config, write_recipe  # noqa: E402
from thread_pools import thread_env  # noqa: E402

PROGRAM = HERE / "gpt_race_program.py"
HEADINGS = {"torchlight": "torchlight", "torch": "PyTorch"}
#: the issue's bar: torchlight's time to the target at most this many times PyTorch's
BAR = 1.1


# ---- arithmetic on the evaluation records ---------------------------------------------------------


def crossing(evals: list, target: float) -> dict | None:
    """The first point where the validation loss reaches ``target``: ``{"seconds", "step"}``
    interpolated linearly between the last evaluation above it and the first at or below it
    (the first evaluation itself when it is already there); ``None`` if it never does.

    ``evals`` are records ``{"seconds", "step", "val_loss"}`` in the order they were taken.
    """
    prev = None
    for rec in evals:
        if rec["val_loss"] <= target:
            if prev is None:
                return {"seconds": rec["seconds"], "step": float(rec["step"])}
            f = (prev["val_loss"] - target) / (prev["val_loss"] - rec["val_loss"])
            return {
                "seconds": prev["seconds"] + f * (rec["seconds"] - prev["seconds"]),
                "step": prev["step"] + f * (rec["step"] - prev["step"]),
            }
        prev = rec
    return None


def tokens_per_second(evals: list) -> float | None:
    """Tokens trained on per second of training clock, up to the last evaluation."""
    last = evals[-1] if evals else None
    return last["tokens"] / last["seconds"] if last and last["seconds"] > 0 else None


def steady_tokens_per_second(evals: list) -> float | None:
    """Tokens per second of training clock from the first evaluation after step 0 to the last:
    the first interval, which holds numba's compilation (or cache loading) on first use and
    the allocator's warm-up, left out."""
    later = [e for e in evals if e["step"] > 0]
    if len(later) < 2 or later[-1]["seconds"] <= later[0]["seconds"]:
        return None
    first, last = later[0], later[-1]
    return (last["tokens"] - first["tokens"]) / (last["seconds"] - first["seconds"])


def time_ratio(a: dict | None, b: dict | None) -> float | None:
    """``a``'s crossing time over ``b``'s (``None`` unless both crossed, ``b`` after 0 s)."""
    if a is None or b is None or b["seconds"] <= 0:
        return None
    return a["seconds"] / b["seconds"]


def summarize(runs: dict, target: float) -> dict:
    """Per side: crossing, tokens/s, last validation loss, steps, peak RSS; and the ratios."""
    sides = {}
    for side, run in runs.items():
        evals = run["evals"]
        sides[side] = {
            "crossing": crossing(evals, target),
            "tokens_per_s": tokens_per_second(evals),
            "steady_tokens_per_s": steady_tokens_per_second(evals),
            "final_val_loss": evals[-1]["val_loss"] if evals else None,
            "steps": evals[-1]["step"] if evals else None,
            "seconds": evals[-1]["seconds"] if evals else None,
            "peak_rss_mib": run.get("peak_rss_mib"),
            "error": run.get("error"),
        }
    tl_side, pt_side = sides.get("torchlight"), sides.get("torch")
    both = tl_side is not None and pt_side is not None
    ratio = time_ratio(tl_side["crossing"], pt_side["crossing"]) if both else None
    speed = (
        pt_side["tokens_per_s"] / tl_side["tokens_per_s"]
        if both and tl_side["tokens_per_s"] and pt_side["tokens_per_s"]
        else None
    )
    return {
        "target": target,
        "sides": sides,
        "time_ratio": ratio,
        "meets_bar": None if ratio is None else ratio <= BAR,
        "throughput_ratio": speed,  # PyTorch's tokens/s over torchlight's: > 1, PyTorch is faster
    }


def _cell(value, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def table(summary: dict) -> str:
    """The summary as a markdown table, one row per framework, and a line with the ratio."""
    target = summary["target"]
    lines = [
        f"| framework | time to {target:g} (min) | step there | tokens/s | steady tokens/s "
        "| last val loss | steps | peak RSS (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, s in summary["sides"].items():
        c = s["crossing"]
        lines.append(
            f"| {s.get('label', HEADINGS[side])} | {_cell(c and c['seconds'] / 60, '.2f')} "
            f"| {_cell(c and c['step'], '.0f')} | {_cell(s['tokens_per_s'], ',.0f')} "
            f"| {_cell(s['steady_tokens_per_s'], ',.0f')} "
            f"| {_cell(s['final_val_loss'], '.4f')} | {_cell(s['steps'], 'd')} "
            f"| {_cell(s['peak_rss_mib'], '.0f')} |"
        )
    ratio = summary["time_ratio"]
    if ratio is not None:
        verdict = "meets" if summary["meets_bar"] else "misses"
        lines.append(
            f"\ntime to {target:g}, torchlight / PyTorch: {ratio:.3f} ({verdict} the bar {BAR})"
        )
    else:
        lines.append(f"\ntime to {target:g}, torchlight / PyTorch: — (a side did not reach it)")
    if summary["throughput_ratio"] is not None:
        lines.append(f"tokens/s, PyTorch / torchlight: {summary['throughput_ratio']:.3f}")
    return "\n".join(lines)


# ---- the children ---------------------------------------------------------------------------------


def torch_available() -> bool:
    """Whether PyTorch is importable here (it is optional, never a dependency)."""
    return importlib.util.find_spec("torch") is not None


def command(side: str, recipe: Path, capture: bool = False) -> list:
    """The child's command line: the program as a script (PyTorch) or through torchlight.compat
    (with ``--capture`` when ``capture``: PyTorch has no ``capture_step``)."""
    runner = [] if side == "torch" else ["-m", "torchlight.compat"]
    flags = ["--capture"] if capture and side != "torch" else []
    return [sys.executable, *runner, str(PROGRAM), "--recipe", str(recipe), *flags]


def child_env(side: str, backend: str) -> dict:
    """The child's environment: one thread everywhere, and torchlight's device for its side."""
    env = dict(os.environ)
    env.update(thread_env(1))
    if side == "torch":
        env.pop("TORCHLIGHT_DEVICE", None)
    else:
        env["TORCHLIGHT_DEVICE"] = backend
    return env


def run_child(side, recipe, backend, core, timeout, on_event, log_path, capture=False) -> dict:
    """Run one side to its end: its evaluation records, peak RSS (MiB) and error (``None``)."""
    evals = []
    with open(log_path, "w") as err:
        proc = subprocess.Popen(
            command(side, recipe, capture),
            env=child_env(side, backend),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        # pinned from here rather than in a preexec_fn, which is unsafe in a threaded parent; the
        # child is still starting Python then, and the threads it starts later inherit the mask
        os.sched_setaffinity(proc.pid, {core})
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            for line in proc.stdout:
                if not line.startswith("{"):
                    continue  # the program's own prints, if any
                rec = json.loads(line)
                if rec["event"] == "eval":
                    evals.append(rec)
                on_event(side, rec)
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
    code = os.waitstatus_to_exitcode(status)
    error = None
    if code != 0:
        tail = Path(log_path).read_text(errors="replace")[-1500:]
        error = (
            f"exit {code}" + (" (killed: ran past its time)" if code == -9 else "") + f"\n{tail}"
        )
    return {"evals": evals, "peak_rss_mib": usage.ru_maxrss / 1024, "error": error}


def pick_cores(wanted: list | None, n: int) -> list:
    """``n`` cores to pin the sides to: ``wanted``, else the first ``n`` this process may use,
    taken in turn when there are fewer than ``n`` (the sides then share a core: use
    ``--sequential`` there)."""
    allowed = sorted(os.sched_getaffinity(0))
    cores = wanted or allowed[:n]
    bad = [c for c in cores if c not in allowed]
    if bad:
        raise SystemExit(f"--cores {bad}: this process may only use cores {allowed}")
    return [cores[i % len(cores)] for i in range(n)]


def race(args, sides: list, out: Path) -> dict:
    """Write the recipe, run the sides (together or one after the other), return the results."""
    from tqdm import tqdm  # noqa: PLC0415

    cfg = preset_config(args.preset, args.max_iters)
    budget = 60.0 * args.minutes
    work = tempfile.TemporaryDirectory(prefix="gpt-race-")
    recipe = Path(work.name) / "recipe"
    write_recipe(recipe, cfg, budget, args.eval_every, args.target if args.stop_at_target else None)
    cores = pick_cores(args.cores, len(sides))
    bars = {
        side: tqdm(
            total=round(budget),
            desc=f"{HEADINGS[side]:10s}",
            unit="s",
            position=i,
            dynamic_ncols=True,
            mininterval=1.0,
        )
        for i, side in enumerate(sides)
    }
    last_val = {}
    lock = threading.Lock()

    def on_event(side, rec):
        with lock:
            bar = bars[side]
            if rec["event"] == "eval":
                last_val[side] = rec["val_loss"]
            bar.n = min(round(rec["seconds"]), bar.total)
            post = {"step": rec["step"]}
            if side in last_val:
                post["val"] = f"{last_val[side]:.3f}"
            if rec["seconds"] > 0:
                post["tok/s"] = (
                    f"{rec['step'] * cfg.batch_size * cfg.block_size / rec['seconds']:.0f}"
                )
            bar.set_postfix(post, refresh=False)
            bar.refresh()

    # startup, numba's compilation on first use and the evaluations come on top of the budget
    timeout = 2 * budget + 600
    runs = {}

    def go(side, core):
        try:
            runs[side] = run_child(
                side,
                recipe,
                args.backend,
                core,
                timeout,
                on_event,
                out / f"{side}.stderr.log",
                args.capture,
            )
        except Exception as exc:  # reported in the summary; the other side goes on
            runs[side] = {"evals": [], "peak_rss_mib": None, "error": repr(exc)}

    threads = [threading.Thread(target=go, args=(s, c)) for s, c in zip(sides, cores)]
    for t in threads:
        t.start()
        if args.sequential:
            t.join()
    for t in threads:
        t.join()
    runs = {side: runs[side] for side in sides}  # in the table's order, whichever ended first
    for bar in bars.values():
        bar.close()
    work.cleanup()
    return {
        "settings": {
            "minutes": args.minutes,
            "target": args.target,
            "backend": args.backend,
            "capture": args.capture,
            "eval_every": args.eval_every,
            "preset": args.preset,
            "max_iters": cfg.max_iters,
            "sequential": args.sequential,
            "cores": cores,
            "threads": 1,
            "train_config": vars(cfg),
            "command": " ".join(sys.argv),
        },
        "runs": runs,
    }


def label(backend: str, capture: bool) -> str:
    """The torchlight side's name in the table and the plot."""
    return f"torchlight ({backend}{', captured step' if capture else ''})"


def plot(runs: dict, target: float, path: Path, backend: str, preset: str, capture=False) -> None:
    """Validation loss against training minutes, one line per side, the target dashed."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for side, run in runs.items():
        ev = run["evals"]
        name = label(backend, capture) if side == "torchlight" else "PyTorch eager"
        ax.plot(
            [e["seconds"] / 60 for e in ev], [e["val_loss"] for e in ev], "o-", ms=3, label=name
        )
    ax.axhline(target, color="grey", ls="--", lw=1, label=f"target {target:g}")
    ax.set_xlabel("training time (min, one core each)")
    ax.set_ylabel("validation loss (nats/token)")
    ax.set_title(f"mini-GPT, {preset} preset: torchlight vs PyTorch")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse(argv=None):
    """The command line (``--backend numpy`` is read as the numpy backend's device, ``cpu``)."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--minutes", type=float, default=60.0, help="training budget per framework")
    p.add_argument("--target", type=float, default=1.50, help="validation loss to reach")
    p.add_argument("--backend", default="numba", help="torchlight device (numba, cpu, ...)")
    p.add_argument("--eval-every", type=int, default=100, help="steps between evaluations")
    p.add_argument("--out", default="out/gpt_race", help="folder for race.json and race.png")
    p.add_argument(
        "--preset", default="headline", help="train.py's preset (tiny: a few seconds, for tests)"
    )
    p.add_argument(
        "--max-iters", type=int, default=None, help="schedule length (default: the preset's)"
    )
    p.add_argument(
        "--cores", type=int, nargs="+", default=None, help="cores to pin the sides to, in turn"
    )
    p.add_argument("--sequential", action="store_true", help="one side after the other")
    p.add_argument(
        "--stop-at-target", action="store_true", help="end a side at its first eval <= target"
    )
    p.add_argument("--no-torch", action="store_true", help="run the torchlight side only")
    p.add_argument(
        "--capture", action="store_true", help="torchlight's training step captured and replayed"
    )
    args = p.parse_args(argv)
    if args.backend == "numpy":
        args.backend = "cpu"  # the numpy backend's device name
    return args


def main(argv=None) -> dict:
    """Run the race, print the table, write race.json and race.png; returns the result."""
    args = parse(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sides, notes = ["torchlight"], []
    if args.no_torch:
        notes.append("--no-torch: the torchlight side ran alone")
    elif torch_available():
        sides.append("torch")
    else:
        notes.append("PyTorch is not importable: the torchlight side ran alone")
    result = race(args, sides, out)
    result["notes"] = notes
    result["summary"] = summarize(result["runs"], args.target)
    result["summary"]["sides"]["torchlight"]["label"] = label(args.backend, args.capture)
    (out / "race.json").write_text(json.dumps(result, indent=1))
    plot(result["runs"], args.target, out / "race.png", args.backend, args.preset, args.capture)
    print(table(result["summary"]))
    for note in notes:
        print(note)
    for side, run in result["runs"].items():
        if run["error"]:
            print(f"{HEADINGS[side]} failed: {run['error']}")
    print(f"-> {out / 'race.json'}, {out / 'race.png'}")
    return result


if __name__ == "__main__":
    main()
