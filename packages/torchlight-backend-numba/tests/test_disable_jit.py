"""``NUMBA_DISABLE_JIT=1`` runs the very same kernels as plain Python (debugging, coverage).

The kit runs in a subprocess (numba reads the variable at import) with the ``tiny`` size profile.
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_conformance_kit_without_jit(tmp_path):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", TORCHLIGHT_CONFORMANCE_PROFILE="tiny")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(HERE / "test_conformance_numba.py"),
            "-q",
            "-x",
            "--import-mode=importlib",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout


def test_kernels_are_python_functions_without_jit():
    code = (
        "from torchlight.backends.numba import _elementwise as E\n"
        "assert not hasattr(E.map_flat.ser, 'py_func') and not hasattr(E.map_flat.par, 'py_func'), type(E.map_flat.par)\n"
        "import numpy as np, torchlight as tl\n"
        "x = tl.tensor([[1.0, -2.0], [3.0, 4.0]], device='numba')\n"
        "y = (x.relu() * 2 + 1).softmax(-1).sum(0)\n"
        "z = np.maximum(x.numpy(), 0) * 2 + 1\n"
        "want = (np.exp(z) / np.exp(z).sum(1, keepdims=True)).sum(0)\n"
        "assert np.allclose(y.numpy(), want), (y, want)\n"
        "print('ok')\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
