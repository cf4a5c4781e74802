"""Where the step of ``bilstm_crf`` (the compatibility suite's BiLSTM-CRF tagger) goes, phase by
phase, on torchlight and on PyTorch.

    taskset -c 1 python tests-integration/benchmarks/bench_bilstm_crf_phases.py [--device numba]

The program's own model (``tests-integration/compat/programs/bilstm_crf.py``, imported unchanged:
on torchlight through ``torchlight.compat.install()``) trains on its two sentences; each step
(one epoch: both sentences) is cut into the LSTM features, the forward algorithm (log Z), the
gold path's score, ``backward`` and the SGD step. Each framework runs in a child process of its
own with one thread; ms per step, the median over ``--steps`` steps after 50 unmeasured ones.
PyTorch's column is left out when it is not importable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parents[1] / "compat" / "programs"
PHASES = ("features", "forward algorithm", "gold score", "backward", "SGD step", "whole step")
WARMUP = 50


def measure(steps: int) -> dict:
    """ms per step of each phase in this process (``torch`` already aliased or real)."""
    import torch

    sys.path.insert(0, str(PROGRAMS))
    import bilstm_crf as program

    torch.manual_seed(1)
    data = [
        ("the wall street journal reported today that apple corporation made money", "BIIIOOOBIOO"),
        ("georgia tech is a university in georgia", "BIOOOOB"),
    ]
    words = {}
    for sentence, _ in data:
        for w in sentence.split():
            words.setdefault(w, len(words))
    tags = {"B": 0, "I": 1, "O": 2, program.START_TAG: 3, program.STOP_TAG: 4}
    model = program.BiLSTM_CRF(len(words), tags, 5, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
    batches = [
        (
            program.prepare_sequence(s.split(), words),
            torch.tensor([tags[t] for t in ts], dtype=torch.long),
        )
        for s, ts in data
    ]
    times = {p: [] for p in PHASES}
    for step in range(WARMUP + steps):
        spent = dict.fromkeys(PHASES, 0.0)
        start = time.perf_counter()
        for sentence, targets in batches:
            model.zero_grad()
            t0 = time.perf_counter()
            feats = model._get_lstm_features(sentence)
            t1 = time.perf_counter()
            log_z = model._forward_alg(feats)
            t2 = time.perf_counter()
            loss = (log_z - model._score_sentence(feats, targets)).sum()
            t3 = time.perf_counter()
            loss.backward()
            t4 = time.perf_counter()
            opt.step()
            loss.item()
            t5 = time.perf_counter()
            for phase, (a, b) in zip(PHASES, [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)]):
                spent[phase] += b - a
        spent["whole step"] = time.perf_counter() - start
        if step >= WARMUP:
            for phase in PHASES:
                times[phase].append(spent[phase])
    return {p: statistics.median(v) * 1e3 for p, v in times.items()}


def child(framework: str, steps: int, device: str) -> dict | None:
    """Run :func:`measure` in a fresh process on ``framework``; None if it cannot import."""
    env = dict(os.environ, TORCHLIGHT_DEVICE=device)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = "1"
    done = subprocess.run(
        [sys.executable, __file__, "--child", framework, "--steps", str(steps)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        if framework == "torch" and "No module named 'torch'" in done.stderr:
            return None
        raise RuntimeError(f"{framework} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="torchlight's device (default cpu)")
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--child", choices=["torchlight", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.child == "torchlight":
            import torchlight.compat

            torchlight.compat.install()
        print(json.dumps(measure(args.steps)))
        return 0
    ours = child("torchlight", args.steps, args.device)
    peer = child("torch", args.steps, args.device)
    print(f"| phase | ms torchlight ({args.device}) | ms PyTorch | ratio |")
    print("|---|---:|---:|---:|")
    for phase in PHASES:
        theirs = "—" if peer is None else f"{peer[phase]:.2f}"
        ratio = "—" if peer is None else f"{ours[phase] / peer[phase]:.2f}"
        print(f"| {phase} | {ours[phase]:.2f} | {theirs} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
