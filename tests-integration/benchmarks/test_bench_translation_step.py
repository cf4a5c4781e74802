"""bench_translation_step.py runs the translation project's real training step: at tiny sizes
its rows parse as ``bench_commits.py`` reads them, and the untrained model's loss is about
``ln V`` (a near-uniform prediction over V words), so what it times is the model's loss."""

import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torchlight.nn")
HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import bench_commits  # noqa: E402


def test_tiny_run_prints_a_step_time_and_a_plausible_loss():
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "bench_translation_step.py"),
            "--steps",
            "2",
            "--warmup",
            "1",
            "--batch",
            "4",
            "--vocab",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    rows = bench_commits.rows(out)
    (ms,) = rows["translation step (cpu, batch 4)"]
    (loss,) = rows["last loss"]
    assert ms > 0
    assert loss == pytest.approx(math.log(40), abs=0.3)
