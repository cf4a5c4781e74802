"""Peak memory of the mini-GPT training step: torchlight's numpy and numba backends and PyTorch.

Run: ``python tests-integration/benchmarks/bench_memory.py [--repeat 3] [--steps 5]
[--frameworks numpy numba torch] [--json PATH]`` (or ``nox -s bench``). The model and batch are
``bench_backends.py``'s GPT step (vocab 65, 4 layers, 4 heads, width 128, context 64, batch 32,
dropout 0, AdamW): on torchlight ``projects/mini-gpt/model.py``'s GPT, as ``bench_backends.py``
and ``bench_gpt_phases.py`` build it; on PyTorch ``gpt_race_program.GPT``, the same model written
against PyTorch's API (same modules, same parameter names).

Every figure comes from a fresh child process with one thread (``OMP``/``OPENBLAS``/``MKL``/
``NUMBA_NUM_THREADS=1``). A *step* child imports the framework, builds the model, the optimizer
and the batch and runs ``--steps`` training steps (forward, ``zero_grad``, backward, AdamW); a
*baseline* child does the same but runs no step. Their peak resident set sizes (``VmHWM`` of
``/proc/self/status``, read by the child as it ends) give:

* **peak**: the step child's peak RSS, everything included (interpreter, libraries, numba's
  compiler when it compiles or loads kernels on first use);
* **step-only**: peak minus the baseline child's peak, in the same repetition: what running
  training steps adds on top of a process that holds the framework and the model;
* **steady**: the highest RSS over the step child's steps after the first (``VmHWM`` reset
  through ``/proc/self/clear_refs`` after step 1) minus the baseline child's peak. It leaves out
  what only the first step's peak holds (numba's compiler at work, say) and keeps what stays
  resident: the optimizer's state, loaded kernels, the memory the allocator keeps for reuse, and
  each step's activations, saved tensors and gradients.

Each figure is the median over ``--repeat`` repetitions, the frameworks taking turns in a rotating
order. Ratios are torchlight over PyTorch (the issue's bar: <= 1.2 for the step). PyTorch is
optional: without it the ratios are left out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_gpt  # noqa: E402
from thread_pools import thread_env  # noqa: E402

MINI_GPT = bench_gpt.MINI_GPT
FRAMEWORKS = ("numpy", "numba", "torch")
HEADINGS = {"numpy": "torchlight-numpy", "numba": "torchlight-numba", "torch": "PyTorch"}
TORCHLIGHT_DEVICE = {"numpy": "cpu", "numba": "numba"}
#: the benchmark GPT (bench_gpt.py), shared with bench_backends.py and bench_gpt_phases.py
MODEL, BATCH = bench_gpt.MODEL, bench_gpt.BATCH
#: the issue's bar: torchlight's step memory at most this many times PyTorch's
BAR = 1.2
KIB = 1024


# ---- arithmetic ----------------------------------------------------------------------------------


def median(values: list) -> float | None:
    """The median of the values that are not ``None``; ``None`` if there are none."""
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def step_only(peaks: list, baselines: list) -> list:
    """Per repetition, the step child's peak minus the baseline child's (``None`` if one failed)."""
    return [
        None if p is None or b is None else p - b for p, b in zip(peaks, baselines, strict=True)
    ]


def ratio(value: float | None, reference: float | None) -> float | None:
    """``value / reference``; ``None`` when either is missing or the reference is not positive."""
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def row(framework: str, samples: list) -> dict:
    """The medians of one framework's repetitions; each sample is ``{"peak", "baseline",
    "steady"}`` in MiB (``None`` where a child failed)."""
    peaks = [s["peak"] for s in samples]
    bases = [s["baseline"] for s in samples]
    return {
        "framework": framework,
        "peak_mib": median(peaks),
        "baseline_mib": median(bases),
        "step_only_mib": median(step_only(peaks, bases)),
        "steady_mib": median([s["steady"] for s in samples]),
        "samples": samples,
    }


def add_ratios(rows: list) -> list:
    """Each row's peak, step-only and steady figures over PyTorch's (``None`` without PyTorch)."""
    ref = next((r for r in rows if r["framework"] == "torch"), None)
    for r in rows:
        for key in ("peak", "step_only", "steady"):
            r[f"{key}_ratio"] = ratio(r[f"{key}_mib"], ref and ref[f"{key}_mib"])
    return rows


def _cell(value, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def table(rows: list) -> str:
    """The rows as a markdown table (MiB; ratios against PyTorch)."""
    lines = [
        "| framework | peak RSS | baseline | step-only | steady step | peak / PyTorch "
        "| step-only / PyTorch | steady / PyTorch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {HEADINGS[r['framework']]} | {_cell(r['peak_mib'], '.1f')} "
            f"| {_cell(r['baseline_mib'], '.1f')} | {_cell(r['step_only_mib'], '.1f')} "
            f"| {_cell(r['steady_mib'], '.1f')} | {_cell(r['peak_ratio'], '.2f')} "
            f"| {_cell(r['step_only_ratio'], '.2f')} | {_cell(r['steady_ratio'], '.2f')} |"
        )
    return "\n".join(lines)


# ---- inside a child ------------------------------------------------------------------------------


def proc_status_kib(field: str) -> int:
    """A ``/proc/self/status`` figure such as ``VmRSS`` or ``VmHWM``, in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def reset_peak() -> bool:
    """Reset this process's ``VmHWM`` to its current RSS (Linux >= 4.0); ``False`` if refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def build_torchlight(device: str):
    """model.py's GPT on ``device``, its AdamW and a batch: ``bench_gpt.build``."""
    model, opt, idx, tgt = bench_gpt.build(device)
    return (lambda: model(idx, tgt)[1]), opt


def build_torch():
    """gpt_race_program's GPT (model.py's model in PyTorch), its AdamW and a batch."""
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    sys.path.insert(0, str(HERE))
    from gpt_race_program import GPT  # noqa: PLC0415

    torch.manual_seed(0)
    model = GPT(MODEL)
    opt = torch.optim.AdamW(model.parameters(), lr=bench_gpt.LR)
    rng = np.random.default_rng(0)
    shape = (BATCH, MODEL["block_size"])
    idx = torch.from_numpy(rng.integers(0, MODEL["vocab_size"], size=shape))
    tgt = torch.from_numpy(rng.integers(0, MODEL["vocab_size"], size=shape))
    return (lambda: model(idx, tgt)), opt


def child(framework: str, steps: int) -> dict:
    """Build, run ``steps`` training steps, and report the in-process figures (KiB)."""
    forward, opt = (
        build_torch() if framework == "torch" else build_torchlight(TORCHLIGHT_DEVICE[framework])
    )

    def step():
        loss = forward()
        opt.zero_grad()
        loss.backward()
        opt.step()

    report = {"later_peak_kib": None}
    peak = 0
    if steps > 0:
        step()  # first use: kernels compiled or loaded, the optimizer's state created
        # the reset below also resets the kernel's ru_maxrss, so the peak so far is kept here
        peak = proc_status_kib("VmHWM")
        if steps > 1 and reset_peak():
            for _ in range(steps - 1):
                step()
            report["later_peak_kib"] = proc_status_kib("VmHWM")
        else:
            for _ in range(steps - 1):
                step()
    report["peak_kib"] = max(peak, proc_status_kib("VmHWM"))
    return report


# ---- the parent ----------------------------------------------------------------------------------


def child_env(framework: str) -> dict:
    """A child's environment: one thread everywhere (the device is chosen in the child)."""
    env = dict(os.environ)
    env.update(thread_env(1))
    env.pop("TORCHLIGHT_DEVICE", None)
    return env


def run_child(framework: str, steps: int, timeout: float = 600) -> dict:
    """One fresh child's report (KiB), with its peak RSS in MiB added as ``peak_mib``."""
    proc = subprocess.run(
        [sys.executable, __file__, "--child", framework, "--steps", str(steps)],
        env=child_env(framework),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{framework} child (steps={steps}) failed:\n{proc.stderr[-1500:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    report["peak_mib"] = report["peak_kib"] / KIB
    return report


def measure(framework: str, steps: int) -> dict:
    """One repetition: a baseline child and a step child (MiB)."""
    base = run_child(framework, 0)
    run = run_child(framework, steps)
    later = run["later_peak_kib"]
    return {
        "peak": run["peak_mib"],
        "baseline": base["peak_mib"],
        "steady": None if later is None else later / KIB - base["peak_mib"],
    }


def torch_available() -> bool:
    """Whether PyTorch is importable here (it is optional, never a dependency)."""
    return importlib.util.find_spec("torch") is not None


def numba_available() -> bool:
    """Whether torchlight's numba backend is installed and usable."""
    try:
        import torchlight as tl  # noqa: PLC0415
    except ImportError:
        return False
    return "numba" in tl.available_backends()


def run(frameworks, repeat: int, steps: int, progress: bool = True) -> dict:
    """Measure ``frameworks`` (those that can run here), ``repeat`` times each; the rows."""
    kept, notes = [], []
    for fw in frameworks:
        if fw == "torch" and not torch_available():
            notes.append("PyTorch is not importable: its row and the ratios are left out")
        elif fw == "numba" and not numba_available():
            notes.append("the numba backend is not available: its row is left out")
        else:
            kept.append(fw)
    samples = {fw: [] for fw in kept}
    bar = None
    if progress:
        from tqdm import tqdm  # noqa: PLC0415

        bar = tqdm(total=repeat * len(kept), unit="run", desc="memory")
    for r in range(repeat):
        for fw in kept[r % len(kept) :] + kept[: r % len(kept)]:
            try:
                samples[fw].append(measure(fw, steps))
            except RuntimeError as exc:
                notes.append(str(exc))
                samples[fw].append({"peak": None, "baseline": None, "steady": None})
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    rows = add_ratios([row(fw, samples[fw]) for fw in kept])
    return {
        "settings": {"model": MODEL, "batch": BATCH, "steps": steps, "repeat": repeat},
        "rows": rows,
        "notes": notes,
    }


def parse(argv=None):
    """The command line (``--child`` is how the parent starts a measured child)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3, help="repetitions (medians are reported)")
    p.add_argument("--steps", type=int, default=5, help="training steps in a step child")
    p.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    p.add_argument("--json", default=None, help="write the result here")
    p.add_argument("--child", choices=FRAMEWORKS, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> dict | None:
    """As a child: measure and print the report. Otherwise: run, print the table, write JSON."""
    args = parse(argv)
    if args.child:
        print(json.dumps(child(args.child, args.steps)))
        return None
    result = run(args.frameworks, args.repeat, args.steps)
    print(table(result["rows"]))
    for note in result["notes"]:
        print(note)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
