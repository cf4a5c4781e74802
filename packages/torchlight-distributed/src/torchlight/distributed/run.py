"""``python -m torchlight.distributed.run -n N script.py args...``: start N ranks with ``mpiexec``.

It builds and runs::

    mpiexec -n N [-f HOSTFILE] python -m mpi4py script.py args...

* ``mpiexec`` is looked up as ``--mpiexec``, ``$TORCHLIGHT_MPIEXEC``, next to the running Python
  (the ``mpich`` wheel installs it into the environment's ``bin/``), then on ``PATH``
  (``mpiexec``, ``mpirun``). MPICH and Open MPI are recognised; with Open MPI the launcher adds
  ``--allow-run-as-root`` when running as root and ``--oversubscribe`` when N exceeds the cores.
* ``python -m mpi4py`` runs the script and turns an unhandled exception *or* a non-zero
  ``sys.exit`` on any rank into ``MPI_Abort``, so the whole job ends instead of hanging.
* On one machine, BLAS/OpenMP threads per rank default to ``cores // N`` (``OMP_NUM_THREADS``,
  ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``; values already set are kept), so N ranks do not
  oversubscribe the cores.
* ``-f/--hostfile FILE`` spreads the ranks over machines (MPICH's ``-f``, Open MPI's
  ``--hostfile``); every machine needs the same Python environment at the same path and
  password-less ssh from the first one.
* ``--timeout SECONDS`` sets every rank's collective timeout (``$TORCHLIGHT_COLLECTIVE_TIMEOUT``,
  see :mod:`~torchlight.distributed.deadline`): a collective some rank does not reach within it
  ends the job with an error naming that rank. With Open MPI the variable is exported to the
  other hosts (``-x``); MPICH passes the whole environment on.

Exits with ``mpiexec``'s exit status. ``--dry-run`` prints the command instead of running it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .deadline import ENV_VAR as _TIMEOUT_VAR

__all__ = ["find_mpiexec", "mpi_flavour", "build_command", "main"]

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def find_mpiexec(explicit: str | None = None) -> str | None:
    """The ``mpiexec`` to use (see the module docstring for the search order), or ``None``."""
    for cand in (explicit, os.environ.get("TORCHLIGHT_MPIEXEC")):
        if cand:
            return shutil.which(cand) or (cand if Path(cand).exists() else None)
    here = Path(sys.executable).parent
    for name in ("mpiexec", "mpirun"):
        p = here / name
        if p.exists() and os.access(p, os.X_OK):
            return str(p)
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name)
        if found:
            return found
    return None


def mpi_flavour(mpiexec: str) -> str:
    """``"openmpi"``, ``"mpich"`` (MPICH, Intel MPI, MVAPICH: hydra) or ``"unknown"``."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20)
        text = (out.stdout + out.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "open mpi" in text or "openrte" in text or "open-mpi" in text or "prrte" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel" in text:
        return "mpich"
    return "unknown"


def build_command(
    nproc: int,
    target: list[str],
    *,
    mpiexec: str,
    hostfile: str | None = None,
    flavour: str = "mpich",
    extra: list[str] | None = None,
    python: str | None = None,
) -> list[str]:
    """The full ``mpiexec`` command line for ``target`` (``[script, args...]`` or
    ``["-m", module, args...]``)."""
    cmd = [mpiexec]
    if flavour == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if hostfile is None and nproc > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
    cmd += ["-n", str(nproc)]
    if hostfile:
        cmd += ["--hostfile", hostfile] if flavour == "openmpi" else ["-f", hostfile]
    cmd += list(extra or [])
    cmd += [python or sys.executable, "-m", "mpi4py", *target]
    return cmd


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m torchlight.distributed.run",
        description="Run a torchlight script on N MPI ranks (a thin wrapper of mpiexec).",
        usage="%(prog)s -n N [options] (script.py | -m module) [args...]",
    )
    p.add_argument("-n", "--nproc", type=int, required=True, help="number of ranks")
    p.add_argument(
        "-f",
        "--hostfile",
        default=None,
        help="hosts to run on (one per line; MPICH: 'host:slots', Open MPI: 'host slots=N')",
    )
    p.add_argument("--mpiexec", default=None, help="the mpiexec executable to use")
    p.add_argument(
        "--mpi-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument passed to mpiexec (repeatable)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS/OpenMP threads per rank (default: cores // N on one machine)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="collective timeout of every rank (0: wait forever; default: "
        "$TORCHLIGHT_COLLECTIVE_TIMEOUT, else 1800)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the command, do not run it")
    p.add_argument("-m", dest="module", default=None, help="run a module (like python -m)")
    p.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments")
    return p


def main(argv: list[str] | None = None) -> int:
    """The command line of ``python -m torchlight.distributed.run``: start ``-n`` MPI ranks of a
    script (or ``-m module``) through ``mpiexec``; returns the exit status. ``argv`` defaults to
    ``sys.argv[1:]``.
    """
    args = _parser().parse_args(argv)
    if args.nproc < 1:
        print("error: -n must be >= 1", file=sys.stderr)
        return 2
    target = list(args.target)
    if target and target[0] == "--":
        target = target[1:]
    if args.module:
        target = ["-m", args.module, *target]
    if not target:
        print(
            "error: no script given (python -m torchlight.distributed.run -n N script.py ...)",
            file=sys.stderr,
        )
        return 2
    mpiexec = find_mpiexec(args.mpiexec)
    if mpiexec is None:
        print(
            "error: no mpiexec found. Install an MPI: pip install mpich  (or apt-get install "
            "mpich), or pass --mpiexec PATH.",
            file=sys.stderr,
        )
        return 127
    flavour = mpi_flavour(mpiexec)
    extra = list(args.mpi_arg)
    env = dict(os.environ)
    if args.timeout is not None:
        if args.timeout < 0:
            print("error: --timeout must be >= 0 seconds", file=sys.stderr)
            return 2
        env[_TIMEOUT_VAR] = f"{args.timeout:g}"
        if flavour == "openmpi":
            extra += ["-x", _TIMEOUT_VAR]
    cmd = build_command(
        args.nproc, target, mpiexec=mpiexec, hostfile=args.hostfile, flavour=flavour, extra=extra
    )
    threads = args.threads
    if threads is None and args.hostfile is None:
        threads = max(1, (os.cpu_count() or 1) // args.nproc)
    if threads is not None:
        for var in _THREAD_VARS:
            env.setdefault(var, str(threads))
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
