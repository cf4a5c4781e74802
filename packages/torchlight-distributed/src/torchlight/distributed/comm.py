"""The MPI world: starting it, who am I, and what happens when a rank fails.

mpi4py is imported lazily, in :func:`init` (which every other entry point calls), so that
``import torchlight.distributed`` works on a machine without an MPI library; only using it needs one.

Processes are started by ``mpiexec`` (or ``python -m torchlight.distributed.run``); each one is a
*rank* of ``MPI.COMM_WORLD``. A script started without ``mpiexec`` is a world of one (MPI's
"singleton" start), so the same training script runs alone or in parallel.

Faults
------
An exception that escapes on one rank would otherwise leave the other ranks blocked forever in
their next collective (and the failing rank itself blocked in ``MPI_Finalize``). :func:`init`
therefore installs a ``sys.excepthook`` (and a ``threading.excepthook``) that prints the
traceback prefixed with the failing rank, flushes, and calls ``MPI.COMM_WORLD.Abort(1)``: the MPI
launcher then kills every rank and exits non-zero within about a second. ``KeyboardInterrupt``
aborts the same way (exit status 130).

``SystemExit`` never reaches an excepthook, so :func:`init` also wraps ``sys.exit``: a non-zero
``sys.exit(code)`` (argparse errors included) in a job of several ranks aborts the job with that
status. A bare ``raise SystemExit(code)`` is not seen, except under the launcher
(``python -m torchlight.distributed.run``, which runs scripts through ``python -m mpi4py``, which
aborts on any non-zero ``SystemExit``); :func:`abort` is the explicit way. A rank that dies (a
signal, ``os._exit``) is noticed by ``mpiexec``, which ends the job. A rank that *hangs*, or
that leaves with status 0 while the others still wait for it, is caught by the collective
timeout instead (:mod:`~torchlight.distributed.deadline`): the ranks waiting for it raise, naming
it, once the timeout passes.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

__all__ = [
    "init",
    "is_initialized",
    "is_available",
    "launched_by_mpiexec",
    "rank",
    "world_size",
    "local_rank",
    "barrier",
    "abort",
    "get_comm",
    "is_main_process",
    "DistributedError",
]

_COMM = None  # the communicator everything uses (a Dup of COMM_WORLD), set by init()
_CTRL = None  # the collective-timeout heartbeat's communicator (another Dup), set by init()
_MPI = None  # the mpi4py.MPI module once imported
_HOOKS_INSTALLED = False
_LOCK = threading.Lock()


# Keep the error a TorchlightError when torchlight is importable (it always is in practice).
if TYPE_CHECKING:  # (mypy cannot take a base class that is one of two types)
    from torchlight import TorchlightError as _Base
else:
    try:
        from torchlight import TorchlightError as _Base
    except Exception:  # noqa: BLE001 - pragma: no cover
        _Base = Exception


class DistributedError(_Base, RuntimeError):
    """MPI is missing or misused (no mpi4py / MPI library, a collective called wrongly, ...)."""


def _import_mpi():
    global _MPI
    if _MPI is not None:
        return _MPI
    try:
        from mpi4py import MPI
    except ImportError as exc:  # mpi4py missing, or present without an MPI library to load
        raise DistributedError(
            "torchlight.distributed needs mpi4py and an MPI library: "
            "pip install mpi4py mpich   (or apt-get install mpich / libopenmpi-dev and "
            "pip install mpi4py). "
            f"Import failed with: {exc}"
        ) from exc
    except RuntimeError as exc:  # mpi4py >= 4 raises RuntimeError when no libmpi can be loaded
        raise DistributedError(
            "mpi4py is installed but found no MPI library: pip install mpich (MPICH's binary "
            f"wheel) or install one from your system's packages. Error: {exc}"
        ) from exc
    _MPI = MPI
    return MPI


def is_available() -> bool:
    """True when mpi4py and an MPI library can be loaded (never raises)."""
    try:
        _import_mpi()
    except Exception:  # noqa: BLE001
        return False
    return True


def init(abort_on_exception: bool = True, timeout: float | None = None):
    """Start MPI (once; later calls return the same communicator) and install the fault hooks.

    Returns the communicator torchlight uses: a duplicate of ``MPI.COMM_WORLD``, so user code's
    own messages on COMM_WORLD never mix with ours. ``abort_on_exception=False`` leaves
    ``sys.excepthook`` alone (then an exception on one rank can hang the others).
    ``timeout`` sets the collective timeout in seconds (default: ``$TORCHLIGHT_COLLECTIVE_TIMEOUT``,
    else 1800; ``0`` or ``math.inf`` waits forever): a collective that some rank does not reach
    within it raises :class:`~torchlight.distributed.deadline.CollectiveTimeoutError` naming that
    rank. Pass the same value on every rank.
    """
    global _COMM, _CTRL
    if timeout is not None:
        from .deadline import set_collective_timeout

        set_collective_timeout(timeout)
    with _LOCK:
        if _COMM is None:
            _refuse_in_worker_process()
            MPI = _import_mpi()
            if not MPI.Is_initialized():
                MPI.Init_thread(MPI.THREAD_MULTIPLE)
            _COMM = MPI.COMM_WORLD.Dup()
            _CTRL = MPI.COMM_WORLD.Dup()
        if abort_on_exception:
            _install_fault_hooks()
    return _COMM


def _refuse_in_worker_process() -> None:
    """A process started by ``multiprocessing`` (a DataLoader worker re-importing the script)
    inherits the rank's MPI environment; starting MPI there kills the job in obscure ways."""
    import multiprocessing

    child = (
        multiprocessing.parent_process() is not None  # set once the child runs its target
        or "--multiprocessing-fork" in sys.argv  # spawn's child, while re-importing __main__
        or getattr(multiprocessing.current_process(), "_inheriting", False)
    )
    if child:
        raise DistributedError(
            "torchlight.distributed.init() was called in a multiprocessing child process (a "
            "DataLoader worker importing your script?). Only the ranks started by mpiexec may "
            "start MPI: put init() and the training code under `if __name__ == '__main__':`."
        )


def launched_by_mpiexec() -> bool:
    """True when this process was started by an MPI launcher as one of several ranks (judged
    from the environment it sets: MPICH/hydra, Intel MPI, Open MPI, PMIx); never imports MPI."""
    env = os.environ
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        if var in env:
            try:
                return int(env[var]) > 1
            except ValueError:
                return True
    return "PMIX_RANK" in env


def shutdown() -> None:
    """Free torchlight's communicator (``destroy_process_group``); a later call starts a new one."""
    global _COMM
    with _LOCK:
        if _COMM is not None:
            _COMM.Free()
            _COMM = None


def is_initialized() -> bool:
    """True once :func:`init` has run in this process."""
    return _COMM is not None


def get_comm():
    """The communicator (initialising MPI on first use)."""
    return _COMM if _COMM is not None else init()


def rank() -> int:
    """This process's rank in ``0 .. world_size() - 1``."""
    return get_comm().Get_rank()


def world_size() -> int:
    """The number of ranks (1 when started without ``mpiexec``)."""
    return get_comm().Get_size()


def local_rank() -> int:
    """This process's rank among the ranks on the same machine (for pinning devices/threads)."""
    MPI = _import_mpi()
    node = get_comm().Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank()
    finally:
        node.Free()


def is_main_process() -> bool:
    """True on rank 0 (the rank that logs, saves checkpoints and writes files)."""
    return rank() == 0


def barrier(group=None, async_op=False, device_ids=None):
    """Block until every rank has reached this call (within the collective timeout);
    ``group``/``async_op`` as in PyTorch (see :mod:`torchlight.distributed.process_group`)."""
    from .deadline import arrive
    from .process_group import check_group, maybe_work

    check_group(group, "barrier")
    arrive(get_comm(), "barrier")
    return maybe_work(async_op, None)


def abort(code: int = 1, message: str | None = None) -> None:
    """End the whole job now with exit status ``code`` (use instead of ``sys.exit`` on one rank)."""
    if message:
        print(f"[rank {_rank_or_unknown()}] {message}", file=sys.stderr, flush=True)
    _abort_world(_import_mpi(), int(code))


#: Seconds between writing a failing rank's message and ``MPI_Abort``: the launcher forwards each
#: rank's output through its own proxy, and an abort that comes first can kill the proxy with the
#: message still in it (seen with MPICH: the job ended with empty stderr).
_ABORT_GRACE = 0.25


def _abort_world(MPI, code: int) -> None:
    _flush()
    time.sleep(_ABORT_GRACE)
    MPI.COMM_WORLD.Abort(code)
    # MPI_Abort should not return, but under load it was seen to (the rank went on into the
    # next collective): this rank must not run another line of the program
    os._exit(code)


# --- faults ---------------------------------------------------------------------------------
def _rank_or_unknown():
    try:
        return _MPI.COMM_WORLD.Get_rank() if _MPI is not None else "?"
    except Exception:  # noqa: BLE001
        return "?"


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass


def _report_and_abort(exc_type, exc, tb, where="") -> None:
    r = _rank_or_unknown()
    size = _MPI.COMM_WORLD.Get_size() if _MPI is not None else "?"
    lines = traceback.format_exception(exc_type, exc, tb)
    text = "".join(f"[rank {r}] {line}" for chunk in lines for line in chunk.splitlines(True))
    print(
        f"[rank {r}] torchlight.distributed: unhandled {exc_type.__name__}{where} on rank {r} "
        f"of {size}; aborting the MPI job (every rank stops).\n{text}",
        file=sys.stderr,
        end="" if text.endswith("\n") else "\n",
        flush=True,
    )
    _flush()
    code = 130 if issubclass(exc_type, KeyboardInterrupt) else 1
    if os.environ.get("TORCHLIGHT_DISTRIBUTED_NO_ABORT"):  # debugging escape hatch
        return
    _abort_world(_MPI, code)


def _excepthook(exc_type, exc, tb):
    if _MPI is None or _MPI.Is_finalized() or _MPI.COMM_WORLD.Get_size() == 1:
        _ORIGINAL["sys"](exc_type, exc, tb)
        return
    _report_and_abort(exc_type, exc, tb)


def _thread_excepthook(args):
    if (
        args.exc_type is SystemExit
        or _MPI is None
        or _MPI.Is_finalized()
        or _MPI.COMM_WORLD.Get_size() == 1
    ):
        _ORIGINAL["threading"](args)
        return
    name = getattr(args.thread, "name", "?")
    _report_and_abort(args.exc_type, args.exc_value, args.exc_traceback, f" in thread {name!r}")


def _exit(status=None):
    """``sys.exit`` that aborts the job when one rank of several exits with an error status."""
    code = 0 if status is None else (status if isinstance(status, int) else 1)
    if (
        code
        and _MPI is not None
        and not _MPI.Is_finalized()
        and _MPI.COMM_WORLD.Get_size() > 1
        and threading.current_thread() is threading.main_thread()
    ):
        r = _rank_or_unknown()
        if not isinstance(status, int):
            print(status, file=sys.stderr)
        print(
            f"[rank {r}] torchlight.distributed: sys.exit({status!r}) on rank {r}; aborting "
            "the MPI job (every rank stops).",
            file=sys.stderr,
            flush=True,
        )
        _abort_world(_MPI, code)  # with the grace that lets the launcher forward the message
    _ORIGINAL["exit"](status)


_ORIGINAL: dict = {}


def _install_fault_hooks() -> None:
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _ORIGINAL["sys"] = sys.excepthook
    _ORIGINAL["threading"] = threading.excepthook
    _ORIGINAL["exit"] = sys.exit
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    sys.exit = _exit
    _HOOKS_INSTALLED = True
