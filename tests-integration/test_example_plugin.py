"""The plugin path, end to end: a third-party backend built as a wheel, installed into a fresh
venv next to the torchlight wheels, found through its entry point, passes the conformance kit.

Slow (builds five wheels and a venv; ~1 min with a warm uv cache). Needs ``uv``; third-party
packages (numpy, pytest, hypothesis) come from the index, torchlight ones only from the local
wheelhouse (``--no-index``), so nothing named torchlight* can be fetched from PyPI.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "tests-integration" / "plugins" / "torchlight_example_backend"
DISTS = [
    ROOT / "packages" / d
    for d in ("torchlight-autograd", "torchlight-tensor", "torchlight-testing")
]

pytestmark = pytest.mark.slow


def _run(*cmd, cwd=None, timeout=300):
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


def test_example_plugin_wheel_passes_the_kit(tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        try:  # the `uv` Python package (e.g. from nox[uv]) ships the binary
            from uv import find_uv_bin

            uv = find_uv_bin()
        except Exception:
            pytest.skip("uv is not installed")
    wheels = tmp_path / "wheelhouse"
    for dist in [*DISTS, PLUGIN]:
        _run(uv, "build", "--wheel", "--quiet", "--out-dir", wheels, dist)
    venv = tmp_path / "venv"
    _run(uv, "venv", "--quiet", venv, "--python", sys.executable)
    py = venv / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    pip = [uv, "pip", "install", "--quiet", "--python", py]
    _run(*pip, "numpy", "pytest", "hypothesis")
    _run(
        *pip,
        "--no-cache",
        "--no-index",
        "--find-links",
        wheels,
        "torchlight-autograd",
        "torchlight-tensor",
        "torchlight-testing",
        "torchlight-example-backend",
    )

    # run from a scratch directory with a copy of the test, so the checkout cannot shadow the wheels
    work = tmp_path / "run"
    work.mkdir()
    shutil.copy(PLUGIN / "tests" / "test_conformance_example.py", work)
    check = (
        "import torchlight, torchlight_example_backend as p, sysconfig\n"
        "site = sysconfig.get_paths()['purelib']\n"
        "assert torchlight.__file__.startswith(site) and p.__file__.startswith(site), (torchlight.__file__, p.__file__)\n"
        "from torchlight.tensor.backend.registry import available_backends\n"
        "assert 'example' in available_backends(), available_backends()\n"
        "x = torchlight.ones(3, device='example') * 2\n"
        "assert x.device == 'example' and x.sum().item() == 6.0\n"
    )
    _run(py, "-c", check, cwd=work)
    out = _run(
        py,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "--rootdir",
        work,
        "test_conformance_example.py",
        cwd=work,
        timeout=600,
    )
    assert " passed" in out and " failed" not in out, out[-2000:]
