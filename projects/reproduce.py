"""One command per headline result: train a project's headline configuration, evaluate it, print
the metric next to the number its README reports.

    python projects/reproduce.py sentiment                   # ~1 minute on 2 cores
    python projects/reproduce.py sklearn                     # ~1-2 minutes
    python projects/reproduce.py mini-gpt                    # the 4,384-step headline run (1-1.5 hours on one core)
    python projects/reproduce.py translation                 # the 9,757-step headline run (1-1.5 hours on one core)
    python projects/reproduce.py mini-gpt --max-steps 50     # extra flags go to train.py: a short check

``nox -s reproduce -- <project> [train.py flags]`` runs the same in a fresh environment. Each
project's headline run is defined by its steps, schedule and seed (a preset of its ``train.py``, or
its defaults), never by minutes, so the same command gives the same numbers on any machine; the
wall time, throughput and backend are printed beside them, since those do depend on the machine.

Without extra flags the printed metric is compared with the README's: exactly (to the digits the
README prints) for the runs that take seconds, within a tolerance for the hour-long ones (their
backend's rounding and dropout masks differ from one backend to another, and the mini-GPT's README
number comes from the numpy run its preset was made from). A mismatch exits with status 1. With extra flags nothing is compared (the run is not the headline
one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Project:
    directory: str
    train: list[str]  # train.py flags of the headline run (before --out)
    metrics: Callable[[Path], dict]  # out -> {name: value}, read from what post.py wrote
    expected: dict  # name -> (README value, tolerance)
    runtime: Callable[[Path], str] = lambda out: ""  # throughput and backend, from what train wrote
    post: list[str] = field(default_factory=list)


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _gpt_metrics(out: Path) -> dict:
    v = _json(out / "eval.json")["validation"]
    return {
        "validation loss (nats/char, whole split)": v["loss"],
        "perplexity": v["perplexity"],
        "bits/char": v["bpc"],
    }


def _gpt_runtime(out: Path) -> str:
    s = _json(out / "summary.json")
    return (
        f"{s['steps']:,} steps, {s['tokens_per_s']:,.0f} training tokens/s on the {s['backend']} backend, "
        f"{s['minutes']} training minutes"
    )


def _sentiment_metrics(out: Path) -> dict:
    m = _json(out / "metrics.json")
    return {"test accuracy": m["accuracy"], "F1": m["f1"]}


def _mt_metrics(out: Path) -> dict:
    r = _json(out / "test_results.json")
    return {"test BLEU greedy": r["greedy"]["bleu"], "test BLEU beam 4": r["beam4"]["bleu"]}


def _mt_runtime(out: Path) -> str:
    history = _json(out / "history.json")
    last = history["evals"][-1]
    return (
        f"{last['step']:,} steps in {last['train_minutes']} training minutes "
        f"on the {history.get('backend', 'cpu')} backend"
    )


def _sklearn_metrics(out: Path) -> dict:
    return {
        "breast_cancer test accuracy": _json(out / "breast_cancer" / "metrics.json")[
            "test_accuracy"
        ],
        "digits_cnn test accuracy": _json(out / "digits_cnn" / "metrics.json")["test_accuracy"],
        "digits_cae test MSE": _json(out / "digits_cae" / "metrics.json")["test_mse"],
    }


PROJECTS = {
    "mini-gpt": Project(
        "mini-gpt",
        ["--preset", "headline", "--no-progress"],
        _gpt_metrics,
        {"validation loss (nats/char, whole split)": (1.4843, 0.02)},
        _gpt_runtime,
    ),
    "sentiment": Project(
        "sentiment-classifier",
        ["--no-progress"],
        _sentiment_metrics,
        {"test accuracy": (0.8617, 5e-5), "F1": (0.8557, 5e-5)},
    ),
    "translation": Project(
        "machine-translation",
        ["--preset", "headline", "--no-tqdm"],
        _mt_metrics,
        {"test BLEU greedy": (36.18, 1.0)},
        _mt_runtime,
    ),
    "sklearn": Project(
        "sklearn-examples",
        ["--no-progress"],
        _sklearn_metrics,
        {
            "breast_cancer test accuracy": (0.9912, 5e-5),
            "digits_cnn test accuracy": (0.9833, 5e-5),
            "digits_cae test MSE": (0.0165, 5e-5),
        },
    ),
}


def run(name: str, extra: list[str], out: Path | None = None) -> int:
    project = PROJECTS[name]
    folder = HERE / project.directory
    out = out or folder / "out" / "reproduce"
    steps = [
        (
            "train",
            [sys.executable, str(folder / "train.py"), *project.train, "--out", str(out), *extra],
        ),
        ("post", [sys.executable, str(folder / "post.py"), "--out", str(out), *project.post]),
    ]
    seconds = {}
    for label, cmd in steps:
        print(f"reproduce {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        seconds[label] = time.perf_counter() - t0
    metrics = project.metrics(out)
    print(
        f"\n=== {name}: {'a check run (' + ' '.join(extra) + ')' if extra else 'the headline run'} ==="
    )
    failed = []
    for key, value in metrics.items():
        line = f"  {key}: {value:.4f}"
        if not extra and key in project.expected:
            want, tol = project.expected[key]
            ok = abs(value - want) <= tol
            line += f"   (README: {want}{' ± ' + str(tol) if tol >= 1e-3 else ''}{'' if ok else '  MISMATCH'})"
            if not ok:
                failed.append(key)
        print(line)
    runtime = project.runtime(out)
    print(
        f"  wall time: {seconds['train']:.0f} s training + {seconds['post']:.0f} s evaluation"
        + (f"; {runtime}" if runtime else "")
    )
    print(f"  outputs: {out}")
    if failed:
        print(f"reproduce {name}: {', '.join(failed)} differ from the README", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("project", choices=sorted(PROJECTS))
    p.add_argument(
        "--out", type=Path, default=None, help="output directory (default <project>/out/reproduce)"
    )
    args, extra = p.parse_known_args(argv)
    return run(args.project, extra, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
