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

import statistics
import sys
import time
from pathlib import Path

import phase_children

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


def main(argv=None) -> int:
    return phase_children.main(__file__, __doc__, argv, lambda a: measure(a.steps), PHASES, "ms", 2)


if __name__ == "__main__":
    sys.exit(main())
