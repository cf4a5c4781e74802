"""Helpers of the compatibility suite: running a program through ``python -m torchlight.compat``."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
# "loss 1.23", "loss: 1.23", "loss=1.23", "loss_d 1.23", "val_loss 1.2" (one list per loss name)
LOSS_RE = re.compile(
    r"\b(\w*loss\w*)[:= ]\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))", re.IGNORECASE
)


def parse_losses(stdout: str) -> dict:
    """Every loss a program printed, by name, in order: ``{"loss": [2.3, 1.9, ...], ...}``."""
    found: dict = {}
    for name, value in LOSS_RE.findall(stdout):
        found.setdefault(name.lower(), []).append(float(value))
    return found


NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)")
# "tensor(" up to its closing parenthesis; the only parentheses a tensor's repr holds are its own
TENSOR_RE = re.compile(r"tensor\(([^()]*)\)")


def printed_tensors(stdout: str) -> list:
    """The values of every ``tensor(...)`` a program printed, in order, each flattened to a list
    of floats (the keyword part of the repr, ``grad_fn=<...>``, ``dtype=...``, is left out), so
    that a case can read the log-probabilities a tutorial prints instead of a loss."""
    found = []
    for body in TENSOR_RE.findall(stdout):
        values = body[: body.rindex("]")] if "[" in body else body.split(",")[0]
        found.append([float(v) for v in NUMBER_RE.findall(values)])
    return found


def numba_available() -> bool:
    from torchlight.tensor.backend.registry import backend_status

    return any(name == "numba" and status == "available" for name, status, _ in backend_status())


# A numba run costs 20-45 s on a busy 2-core machine (numba's import and kernel cache), so those
# are marked slow; the cpu runs are the quick check.
DEVICES = [
    "cpu",
    pytest.param(
        "numba",
        marks=[
            pytest.mark.slow,
            pytest.mark.skipif(not numba_available(), reason="numba backend not available"),
        ],
    ),
]


def run_program(
    script: str, args, cwd, device: str, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Run ``programs/<script>`` unchanged through the entry point on ``device``."""
    env = dict(os.environ, TORCHLIGHT_DEVICE=device, OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-m", "torchlight.compat", str(PROGRAMS / script), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def check_finite(losses: dict) -> None:
    for name, values in losses.items():
        bad = [v for v in values if not math.isfinite(v)]
        assert not bad, f"{name}: non-finite values {bad} in {values}"


ORACLE_RUNNER = Path(__file__).parent / "oracle_runner.py"


def run_oracle(framework: str, script, args, cwd, timeout: float = 600, extra_env=None) -> dict:
    """Run ``script`` under ``framework`` ("torchlight" or "torch") through oracle_runner.py in
    ``cwd`` (where the shared ``weights.npz`` lives) and return its record: the losses
    ``.backward()`` was called on and the number of optimizers built."""
    record = Path(cwd) / f"{framework}.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.update(extra_env or {})
    if framework == "torch":
        env.pop("TORCHLIGHT_DEVICE", None)
    else:
        env["TORCHLIGHT_DEVICE"] = "cpu"
    result = subprocess.run(
        [
            sys.executable,
            str(ORACLE_RUNNER),
            "--framework",
            framework,
            "--record",
            str(record),
            "--weights",
            str(Path(cwd) / "weights.npz"),
            str(script),
            *map(str, args),
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, (
        f"{Path(script).name} under {framework} exited {result.returncode}:\n{result.stderr[-3000:]}"
    )
    return json.loads(record.read_text())
