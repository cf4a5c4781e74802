"""Without a CUDA driver (and without the simulator) asking for ``cuda`` raises a clear
``DeviceUnavailableError`` — never a silent CPU fallback. Runs in subprocesses with
``NUMBA_ENABLE_CUDASIM`` removed from the environment; skipped on a machine that has a GPU."""

import os
import subprocess
import sys

import pytest

from torchlight.backends.cuda.spec import driver_status

pytestmark = pytest.mark.skipif(driver_status()[0], reason="a CUDA driver and GPU are present")

_CODE = """
import torchlight as tl
from torchlight.tensor.errors import DeviceUnavailableError
try:
    {stmt}
except DeviceUnavailableError as exc:
    print("RAISED:", exc)
else:
    print("NO ERROR")
"""


def _run(stmt, **env):
    e = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NUMBA_ENABLE_CUDASIM", "TORCHLIGHT_DEVICE")
    }
    e.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", _CODE.format(stmt=stmt)],
        env=e,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _check(out):
    assert out.startswith("RAISED:"), out
    assert "no CUDA driver/GPU was found" in out
    assert "python -m torchlight" in out
    assert "nvidia-smi" in out


def test_explicit_device_raises():
    _check(_run("tl.tensor([1.0, 2.0], device='cuda')"))


def test_env_default_device_raises():
    _check(_run("tl.zeros(3)", TORCHLIGHT_DEVICE="cuda"))


def test_to_cuda_raises():
    _check(_run("tl.ones(2).to('cuda')"))


def test_spec_never_raises_and_explains():
    from torchlight.backends.cuda.spec import SPEC

    code = (
        "from torchlight.backends.cuda.spec import SPEC\n"
        "print(SPEC.is_available(), '|', SPEC.why_unavailable())\n"
        "import sys; print('numba' in sys.modules)"
    )
    e = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120
    )
    first, second = proc.stdout.strip().splitlines()
    assert first.startswith("False |") and "no CUDA driver/GPU was found" in first
    assert second == "False", "the availability check must not import numba"
    assert SPEC.name == "cuda"


def test_python_m_torchlight_reports_it():
    e = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run(
        [sys.executable, "-m", "torchlight"], env=e, capture_output=True, text=True, timeout=120
    )
    line = next(ln for ln in proc.stdout.splitlines() if ln.strip().startswith("cuda"))
    assert "unavailable" in line and "no CUDA driver/GPU was found" in line
