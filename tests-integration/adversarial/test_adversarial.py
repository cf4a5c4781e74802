"""The adversarial suite: bad inputs on every backend, each group of cases in its own process.

A kernel that reads or writes outside its buffers can kill the interpreter (SIGSEGV). So the
cases (``cases.py``) run in a child process per (device, group); the child reports one result
per case as JSON and this module turns each into a test. A child that dies fails every case of
its group with the signal named. Devices: ``cpu``, ``numba`` and ``cuda`` under numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``, as ``nox -s conformance`` runs it).
"""

import functools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import GROUPS  # noqa: E402

sys.path.remove(str(HERE))

DEVICES = ("cpu", "numba", "cuda")
TIMEOUT = {"cpu": 600, "numba": 900, "cuda": 1800}  # the simulator runs GPU threads in Python


def _device_available(device):
    if device == "cpu":
        return True
    try:
        __import__(f"torchlight.backends.{device}")
    except ImportError:
        return False
    return True


def run_child(cmd, names, env=None, timeout=600, what="the child"):
    """Run ``cmd``, which prints ``{case: result}`` as its last JSON line; a child that dies or
    says nothing fails every case in ``names``, naming the signal or exit status."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        rc = proc.returncode
        how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited with status {rc}"
        return {n: f"fail: {what} {how}\n{proc.stderr[-3000:]}" for n in names}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {
            n: f"fail: no report from {what}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            for n in names
        }
    return json.loads(lines[-1])


@functools.cache
def run_group(device, group):
    """``{case: "pass" | "fail: ..."}`` from one child process (cached: one child per group)."""
    env = dict(os.environ)
    if device == "cuda":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return run_child(
        [sys.executable, str(HERE / "cases.py"), device, group],
        [case.__name__ for case in GROUPS[group]],
        env,
        TIMEOUT[device],
        f"the child running group {group!r} on {device!r}",
    )


# the simulator's cases take minutes: "slow" (CI runs them; a quick local run skips them)
CASES = [
    pytest.param(
        device,
        group,
        case.__name__,
        id=f"{device}-{case.__name__}",
        marks=[pytest.mark.slow] if device == "cuda" else [],
    )
    for device in DEVICES
    for group, cases in GROUPS.items()
    for case in cases
]


@pytest.mark.parametrize("device,group,case", CASES)
def test_adversarial(device, group, case):
    if not _device_available(device):
        pytest.skip(f"backend {device!r} is not installed")
    result = run_group(device, group)[case]
    assert result == "pass", result


def test_a_crash_is_a_failure_not_a_dead_run(tmp_path):
    """The harness's own promise: a child killed by a signal fails its cases, naming the signal."""
    script = tmp_path / "crash.py"
    script.write_text(
        "import os, signal\nprint('started', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    got = run_child([sys.executable, str(script)], ["a", "b"], timeout=60)
    assert set(got) == {"a", "b"} and all("killed by SIGSEGV" in r for r in got.values()), got
