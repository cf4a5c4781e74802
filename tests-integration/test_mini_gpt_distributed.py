"""The mini-GPT trained on 2 MPI ranks (``mpiexec -n 2 python projects/mini-gpt/train.py``) follows
the single-process run: the global batch is split over the ranks and the gradients averaged, so
the loss curves agree to float32 rounding. Skips without MPI (``pip install mpich mpi4py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROJECT = Path(__file__).resolve().parents[1] / "projects" / "mini-gpt"
pytestmark = pytest.mark.slow


def _mpiexec():
    dist = pytest.importorskip("torchlight.distributed")
    if not dist.is_available():
        pytest.skip("mpi4py with an MPI library is not importable (pip install mpich mpi4py)")
    from torchlight.distributed.run import find_mpiexec

    exe = find_mpiexec()
    if exe is None:
        pytest.skip("no mpiexec (pip install mpich)")
    return exe


def _train(cmd, out: Path) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    res = subprocess.run(
        [*cmd, str(PROJECT / "train.py"), "--preset", "tiny", "--no-progress", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads((out / "history.json").read_text())


def test_two_ranks_follow_the_single_process_run(tmp_path):
    if not (PROJECT / "train.py").exists():
        pytest.skip("projects/mini-gpt is not there")
    mpiexec = _mpiexec()
    one = _train([sys.executable], tmp_path / "one")
    two = _train([mpiexec, "-n", "2", sys.executable], tmp_path / "two")
    assert two["step"] == one["step"]
    np.testing.assert_allclose(two["train_loss"], one["train_loss"], rtol=1e-4)
    np.testing.assert_allclose(
        [e["val_loss"] for e in two["eval"]], [e["val_loss"] for e in one["eval"]], rtol=1e-4
    )
    # rank 0 alone wrote the outputs, and the checkpoint resumes single-process
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(
        p.name for p in (tmp_path / "one").iterdir()
    )
