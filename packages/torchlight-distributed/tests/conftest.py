"""Fixtures of the torchlight-distributed tests.

The MPI tests start real jobs: ``mpiexec -n 2 python tests/mpi_scripts/<name>.py`` as a
subprocess (with a timeout, so a hang fails the test instead of the run). Each script asserts on
every rank and ends with a barrier after which rank 0 prints ``ALL OK <n>``; a failed assertion aborts the job (the excepthook that
``torchlight.distributed.init()`` installs), so the exit status says it all and the output says why.

They skip, with the reason, when mpi4py or an MPI library or ``mpiexec`` is missing
(``pip install mpich mpi4py`` provides all three; the nox ``tests`` session installs them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The repository's shared hypothesis profiles (each distribution registers them: conftest files
# only reach their own directory): ``ci`` has no deadline and prints the replay blob.
settings.register_profile(
    "ci",
    deadline=None,
    print_blob=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=20,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(
    os.environ.get("TORCHLIGHT_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)

SCRIPTS = Path(__file__).resolve().parent / "mpi_scripts"


def _mpi_problem() -> str | None:
    """Why MPI jobs cannot run here, or None when they can."""
    try:
        from mpi4py import MPI  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - ImportError, or RuntimeError without a libmpi
        return f"mpi4py with an MPI library is not importable ({exc}); pip install mpich mpi4py"
    from torchlight.distributed.run import find_mpiexec

    if find_mpiexec() is None:
        return "no mpiexec found (next to python or on PATH); pip install mpich"
    return None


MPI_PROBLEM = _mpi_problem()
requires_mpi = pytest.mark.skipif(MPI_PROBLEM is not None, reason=str(MPI_PROBLEM))


class MPIResult:
    def __init__(self, proc: subprocess.CompletedProcess, seconds: float):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds

    @property
    def output(self) -> str:
        return f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"

    def all_ok(self, n: int) -> bool:
        return f"ALL OK {n}" in self.stdout

    def assert_ok(self, n: int = 2) -> None:
        """Exit status 0 and every one of the ``n`` ranks reached the script's end."""
        assert self.returncode == 0, self.output
        assert self.all_ok(n), self.output


def run_mpi(
    script: str | Path,
    *args: str,
    n: int = 2,
    timeout: float = 60,
    launcher: bool = False,
    cwd: str | Path | None = None,
) -> MPIResult:
    """Run ``script`` (a name under mpi_scripts/ or a path) on ``n`` ranks."""
    from torchlight.distributed.run import find_mpiexec

    path = Path(script)
    if not path.is_absolute():
        path = SCRIPTS / script
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    env["PYTHONUNBUFFERED"] = "1"
    if launcher:
        cmd = [sys.executable, "-m", "torchlight.distributed.run", "-n", str(n), str(path), *args]
    else:
        cmd = [find_mpiexec(), "-n", str(n), sys.executable, str(path), *args]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(
            f"MPI job {path.name} did not finish within {timeout} s (hang?)\n"
            f"--- stdout\n{out}\n--- stderr\n{err}"
        )
    return MPIResult(proc, time.monotonic() - start)


@pytest.fixture
def mpi():
    """``mpi(script, *args, n=2, timeout=60)`` -> MPIResult; skips when MPI is unavailable."""
    if MPI_PROBLEM is not None:
        pytest.skip(MPI_PROBLEM)
    return run_mpi
