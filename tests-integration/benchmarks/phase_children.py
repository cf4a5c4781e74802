"""Step phases timed in a child process per framework, printed side by side: the shared part of
the phase benchmarks (``bench_makemore_phases.py``, ``bench_bilstm_crf_phases.py``).

A phase script defines ``measure(args)`` (its step timed phase by phase, after ``import
torch``) and hands its command line to :func:`main`: run by a user, ``main`` starts the script
again as a child per framework (:func:`child`: one thread in every pool, the phases read back as
JSON from the child's last line) and prints the two columns and their ratio
(:func:`print_table`); run as ``--child torchlight`` the child first aliases ``torch`` to
torchlight (:func:`become`), as ``--child torch`` it uses PyTorch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from thread_pools import thread_env

__all__ = ["FRAMEWORKS", "become", "child", "print_table", "main"]

FRAMEWORKS = ("torchlight", "torch")


def become(framework: str) -> None:
    """In a child: make ``import torch`` give torchlight when ``framework`` is ``"torchlight"``."""
    if framework == "torchlight":
        import torchlight.compat

        torchlight.compat.install()


def child(script: str, framework: str, args: list[str], device: str) -> dict | None:
    """Run ``script --child framework *args`` in a fresh process with one thread per pool and
    ``TORCHLIGHT_DEVICE=device``; its phases, or None when PyTorch is not importable."""
    env = dict(os.environ, TORCHLIGHT_DEVICE=device)
    env.update(thread_env(1))
    done = subprocess.run(
        [sys.executable, script, "--child", framework, *args],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        if framework == "torch" and "No module named 'torch'" in done.stderr:
            return None
        raise RuntimeError(f"{framework} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(
    what: str, unit: str, phases, ours: dict, peer: dict | None, device: str, digits: int
):
    """The phases as a markdown table: ``unit`` torchlight (on ``device``), PyTorch, the ratio
    (dashes where ``peer`` is None)."""
    print(f"| phase{what} | {unit} torchlight ({device}) | {unit} PyTorch | ratio |")
    print("|---|---:|---:|---:|")
    for phase in phases:
        theirs = "—" if peer is None else f"{peer[phase]:.{digits}f}"
        ratio = "—" if peer is None else f"{ours[phase] / peer[phase]:.2f}"
        print(f"| {phase} | {ours[phase]:.{digits}f} | {theirs} | {ratio} |")


def main(script, doc, argv, measure, phases, unit, digits, options=None) -> int:
    """A phase script's command line: ``--device``, ``--steps`` and the script's own
    ``options`` (flag -> ``add_argument`` keywords; their values are passed on to the children
    and shown in the table's title); ``measure(args)`` runs in each child."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    options = options or {}
    for flag, kwargs in options.items():
        parser.add_argument(flag, **kwargs)
    parser.add_argument("--device", default="cpu", help="torchlight's device (default cpu)")
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--child", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        become(args.child)
        print(json.dumps(measure(args)))
        return 0
    values = [str(getattr(args, flag.lstrip("-").replace("-", "_"))) for flag in options]
    forwarded = ["--steps", str(args.steps)]
    for flag, value in zip(options, values):
        forwarded += [flag, value]
    ours, peer = (child(script, fw, forwarded, args.device) for fw in FRAMEWORKS)
    title = "".join(f" ({v})" for v in values)
    print_table(title, unit, phases, ours, peer, args.device, digits)
    return 0
