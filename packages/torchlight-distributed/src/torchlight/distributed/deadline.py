"""Collective timeouts: a rank that never arrives is named, and the job ends, instead of hanging.

A rank that raises, exits or is killed ends the job (see :mod:`~torchlight.distributed.comm`).
A rank that *hangs* (a deadlock, an endless loop, a blocked read, a ``sleep``) would leave the
others waiting in their next collective forever. So torchlight's collectives are posted
non-blocking (``Ibarrier``, ``Ibcast``, ``Iallreduce``, ``Iallgather``; the pickled-object ones
after an ``Ibarrier`` that checks every rank has arrived) and waited on with a deadline: the
*collective timeout*, :data:`DEFAULT_TIMEOUT_S` seconds (30 minutes, PyTorch's default for its
CPU backend) unless ``init(timeout=...)`` or the environment variable
``TORCHLIGHT_COLLECTIVE_TIMEOUT`` (seconds; ``0``, ``none`` or ``inf`` to wait forever) says
otherwise. It bounds how long a rank waits for the *others*, so set it above the longest stretch
one rank may spend between two collectives (evaluation or a checkpoint on rank 0 alone, a first
numba compilation).

When the deadline passes, the rank finds out who is missing. Every rank waiting in a collective
answers queries on a communicator of its own (the "heartbeat"): the timed-out rank asks every
other rank which collective it is in (its sequence number and name), waits up to
:data:`QUERY_GRACE_S` seconds for answers, and raises :class:`CollectiveTimeoutError` naming the
ranks that did not answer (hung, or busy outside any collective) and the ranks waiting in a
different collective (a mismatched call sequence). Uncaught, like any exception, it aborts the
job through the hook :func:`~torchlight.distributed.init` installs; the communicator cannot be
used after it, so a script that catches it should call :func:`~torchlight.distributed.abort`.

Waiting polls: ``Test`` in a tight loop for the first :data:`SPIN_S` seconds (what ``MPI_Wait``
does anyway: every poll also drives MPI's progress, so a large transfer must not sleep between
its steps), then with naps of at most 0.1 ms, so a rank waiting long for a straggler leaves most
of its core to others.
"""

from __future__ import annotations

import math
import os
import time

from . import comm as _comm
from .comm import DistributedError, _import_mpi

__all__ = [
    "CollectiveTimeoutError",
    "collective_timeout",
    "set_collective_timeout",
    "wait",
    "arrive",
    "DEFAULT_TIMEOUT_S",
    "ENV_VAR",
    "QUERY_GRACE_S",
    "SPIN_S",
]

#: The environment variable holding the collective timeout in seconds.
ENV_VAR = "TORCHLIGHT_COLLECTIVE_TIMEOUT"
#: The collective timeout when neither ``init(timeout=...)`` nor the environment sets one.
DEFAULT_TIMEOUT_S = 1800.0
#: Seconds a timed-out rank waits for the other ranks to say where they are.
QUERY_GRACE_S = 3.0
#: Seconds a wait spins on ``Test`` before it starts napping between polls.
SPIN_S = 1.0
_NAP_MAX_S = 1e-4
_PROBE_EVERY_S = 0.01
_TAG_QUERY, _TAG_ANSWER = 1, 2

_TIMEOUT: float | None = None  # seconds; math.inf = wait forever; None = not set (use the env)
_SEQ: list = [0, ""]  # number and name of the collective this rank is in (or was last in)
_SENDS: list = []  # heartbeat messages in flight (kept until complete)


class CollectiveTimeoutError(DistributedError, TimeoutError):
    """A collective waited longer than the collective timeout: some rank never arrived."""


def _parse(value, origin: str) -> float:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("", "none", "inf", "infinity", "0"):
            return math.inf
        try:
            value = float(text)
        except ValueError:
            raise DistributedError(
                f"{origin}={value!r} is not a number of seconds (use e.g. 600, "
                "or 0/none to wait forever)"
            ) from None
    if value is None or value == 0:
        return math.inf
    value = float(value)
    if not value > 0:
        raise DistributedError(f"{origin} must be a positive number of seconds, got {value}")
    return value


def set_collective_timeout(seconds) -> None:
    """Set the collective timeout (seconds; ``None``, ``0`` or ``math.inf`` to wait forever).
    Set the same value on every rank."""
    global _TIMEOUT
    _TIMEOUT = _parse(seconds, "timeout")


def collective_timeout() -> float:
    """The collective timeout in seconds (``math.inf`` when collectives wait forever)."""
    if _TIMEOUT is not None:
        return _TIMEOUT
    env = os.environ.get(ENV_VAR)
    return DEFAULT_TIMEOUT_S if env is None else _parse(env, ENV_VAR)


def _ctrl():
    # Made by init() with the main communicator: creating it here, in a collective some rank
    # may never reach, would itself hang.
    if _comm._CTRL is None:
        _comm.init()
    return _comm._CTRL


def _send(ctrl, obj, dest: int, tag: int) -> None:
    _SENDS[:] = [r for r in _SENDS if not r.Test()]
    _SENDS.append(ctrl.isend(obj, dest=dest, tag=tag))


def _answer_queries(ctrl, MPI) -> None:
    status = MPI.Status()
    while ctrl.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG_QUERY, status=status):
        ctrl.recv(source=status.Get_source(), tag=_TAG_QUERY)
        _send(ctrl, tuple(_SEQ), status.Get_source(), _TAG_ANSWER)


def wait(requests, what: str, comm) -> None:
    """Complete the MPI ``requests`` of collective ``what`` on ``comm`` within the collective
    timeout, answering the other ranks' heartbeat queries meanwhile; raises
    :class:`CollectiveTimeoutError` naming the missing ranks."""
    MPI = _import_mpi()
    requests = list(requests)
    if comm.Get_size() == 1:
        MPI.Request.Waitall(requests)
        return
    ctrl = _ctrl()
    _SEQ[0] += 1
    _SEQ[1] = what
    timeout = collective_timeout()
    start = time.monotonic()
    last_probe = start
    nap = 0.0
    test = requests[0].Test if len(requests) == 1 else (lambda: MPI.Request.Testall(requests))
    polls = 0
    while not test():
        polls += 1
        if polls & 31 and not nap:  # while spinning, read the clock on every 32nd poll only
            continue
        now = time.monotonic()
        if now - last_probe >= _PROBE_EVERY_S:
            _answer_queries(ctrl, MPI)
            last_probe = now
        if now - start > timeout:
            raise _timed_out(ctrl, MPI, what, timeout)
        if now - start > SPIN_S:
            nap = min(max(2 * nap, 1e-6), _NAP_MAX_S)
            time.sleep(nap)


def arrive(comm, what: str) -> None:
    """Wait, within the collective timeout, until every rank of ``comm`` has reached collective
    ``what`` (an ``Ibarrier``); used before the blocking collectives of pickled objects."""
    if comm.Get_size() > 1:
        wait([comm.Ibarrier()], what, comm)


def _timed_out(ctrl, MPI, what: str, timeout: float) -> CollectiveTimeoutError:
    me, size = ctrl.Get_rank(), ctrl.Get_size()
    for r in range(size):
        if r != me:
            _send(ctrl, None, r, _TAG_QUERY)
    answers: dict[int, tuple] = {}
    status = MPI.Status()
    end = time.monotonic() + QUERY_GRACE_S
    while len(answers) < size - 1 and time.monotonic() < end:
        while ctrl.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG_ANSWER, status=status):
            answers[status.Get_source()] = ctrl.recv(source=status.Get_source(), tag=_TAG_ANSWER)
        _answer_queries(ctrl, MPI)
        time.sleep(0.005)
    silent = [r for r in range(size) if r != me and r not in answers]
    elsewhere = {r: a for r, a in answers.items() if a[0] != _SEQ[0]}
    parts = []
    if silent:
        parts.append(
            f"rank(s) {', '.join(map(str, silent))} did not arrive and do not answer "
            "(hung, already finished, or busy outside any collective for that long)"
        )
    for r, (seq, name) in sorted(elsewhere.items()):
        parts.append(f"rank {r} is waiting in collective #{seq} ({name})")
    waiting = sorted(r for r in answers if r not in elsewhere)
    if waiting:
        parts.append(f"rank(s) {', '.join(map(str, waiting))} wait in this one too")
    if not parts:
        parts.append("every rank answers, yet the collective did not complete (an MPI problem?)")
    return CollectiveTimeoutError(
        f"rank {me}: collective #{_SEQ[0]} ({what}) timed out after {timeout:g} s: "
        + "; ".join(parts)
        + ". The job cannot continue. If a rank legitimately works alone for "
        f"longer (evaluation, saving), raise the timeout: init(timeout=seconds) or {ENV_VAR}=seconds."
    )
