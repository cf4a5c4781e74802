"""Verbatim public PyTorch programs (``public/``, see public_cases.py) run unchanged through
``python -m torchlight.compat`` on ``cpu`` and ``numba``, and with PyTorch installed their losses
agree with PyTorch's from the same initial weights and random draws."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from compat_helpers import DEVICES
from public_cases import PUBLIC, load_cases

CASES = load_cases()
HEADER_FIELDS = ("Source:", "Path:", "Commit:", "License:")


def _run(cmd, cwd, env, timeout):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _env(**extra):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.update(extra)
    return env


def _cases():
    for name, case in CASES.items():
        for device in DEVICES:
            if isinstance(device, str):
                device = pytest.param(device)
            marks = list(device.marks) + ([pytest.mark.slow] if case.slow else [])
            yield pytest.param(name, device.values[0], marks=marks, id=f"{name}-{device.values[0]}")


def test_the_suite_has_ten_public_programs():
    folders = {case.folder.name for case in CASES.values()}
    assert len(folders) >= 10, sorted(folders)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_program_names_its_source_and_license(name):
    case = CASES[name]
    head = (case.folder / case.script).read_text(encoding="utf-8")[:2000]
    for word in HEADER_FIELDS:
        assert word in head, f"{case.script} of {name}: no '{word}' line in its header"
    assert (case.folder / "LICENSE").is_file(), f"{name}: the license text (LICENSE) is missing"


@pytest.mark.parametrize("name, device", list(_cases()))
def test_public_program_runs_unchanged(name, device, tmp_path):
    case = CASES[name]
    script = case.prepare(tmp_path)
    result = _run(
        [sys.executable, "-m", "torchlight.compat", str(script), *case.args],
        tmp_path,
        _env(TORCHLIGHT_DEVICE=device, **case.env),
        case.timeout,
    )
    assert result.returncode == 0, (
        f"{name} exited {result.returncode} on {device}:\n{result.stderr[-3000:]}"
    )
    losses = case.losses(result.stdout)
    assert len(losses) >= 2, f"{name} printed fewer than two losses:\n{result.stdout[-3000:]}"
    assert all(math.isfinite(v) for v in losses), f"{name}: non-finite losses {losses}"
    if case.expect == "decrease":
        assert losses[-1] < losses[0], f"{name}: loss did not fall on {device}: {losses}"


@pytest.mark.slow
@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.oracle))
def test_public_losses_agree_with_pytorch(name, tmp_path):
    pytest.importorskip("torch")
    case = CASES[name]
    ours, theirs = case.run_both(tmp_path)
    assert ours["optimizers"] == theirs["optimizers"]
    a, b = np.array(ours["losses"]), np.array(theirs["losses"])
    if case.oracle_steps is None:
        assert len(a) == len(b), (len(a), len(b))
    else:  # past ORACLE_STEPS the runs may take other paths (e.g. stop at another step)
        a, b = a[: case.oracle_steps], b[: case.oracle_steps]
        assert len(a) == len(b) == case.oracle_steps, (len(a), len(b), case.oracle_steps)
    assert len(a) >= 2, len(a)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, err_msg=f"{name}: first loss")
    np.testing.assert_allclose(a, b, rtol=1e-3, err_msg=f"{name}: losses over {len(a)} steps")


def test_public_folder_is_where_the_cases_are():
    assert PUBLIC.is_dir() and all(c.folder.parent == PUBLIC for c in CASES.values())
    assert {"makemore_transformer", "makemore_gru"} <= set(CASES)  # VARIANTS of one folder
