"""``SummaryWriter``: PyTorch's TensorBoard logger, writing the event files TensorBoard reads.

The writer opens one file ``events.out.tfevents.<seconds>.<host>.<pid>.<n><filename_suffix>`` in
``log_dir``, starts it with the ``file_version`` event, and appends one ``Event`` per logged value.
Events wait in memory until ``max_queue`` of them are pending or ``flush_secs`` have passed since
the last write, or until :meth:`~SummaryWriter.flush` / :meth:`~SummaryWriter.close`; the writing
happens on the caller's thread (PyTorch's writer uses a background thread; the file holds the same
records either way).
"""

import itertools
import os
import socket
import time
from datetime import datetime

from . import event_proto
from .records import encode_record

__all__ = ["SummaryWriter"]

_file_counter = itertools.count()  # several writers of one process in one folder get distinct files


def _as_float(value) -> float:
    """A Python float from a number, a numpy scalar or a one-element tensor (anything with ``item``)."""
    item = getattr(value, "item", None)
    return float(item() if callable(item) else value)


class SummaryWriter:
    """Writes scalars to a TensorBoard event file in ``log_dir``, with PyTorch's signature.

    ``log_dir`` defaults to ``runs/<Mon>DD_HH-MM-SS_<hostname><comment>``; ``comment`` is only
    used for that default name. ``purge_step`` writes a session-start marker at that step, which
    tells TensorBoard to drop the events of an earlier run at and after it. ``max_queue`` and
    ``flush_secs`` bound how long events wait in memory; ``filename_suffix`` ends the file's name.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> writer = SummaryWriter(log_dir=folder)
    >>> for step in range(3):
    ...     writer.add_scalar("Loss/train", 1.0 / (step + 1), step)
    >>> writer.close()
    >>> [name.startswith("events.out.tfevents.") for name in os.listdir(folder)]
    [True]
    """

    def __init__(
        self,
        log_dir=None,
        comment="",
        purge_step=None,
        max_queue=10,
        flush_secs=120,
        filename_suffix="",
    ):
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        os.makedirs(self.log_dir, exist_ok=True)
        name = (
            f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
            f"{os.getpid()}.{next(_file_counter)}{filename_suffix}"
        )
        self.file_name = os.path.join(self.log_dir, name)
        self._file = open(self.file_name, "wb")  # noqa: SIM115 (closed by close())
        self._pending = []
        self._last_flush = time.time()
        self._write_event(event_proto.event(time.time(), file_version=event_proto.FILE_VERSION))
        if purge_step is not None:
            self._write_event(
                event_proto.event(time.time(), purge_step, session_log=event_proto.session_start())
            )
        self.flush()

    def get_logdir(self) -> str:
        """The folder the event file is written in."""
        return self.log_dir

    def add_scalar(
        self,
        tag,
        scalar_value,
        global_step=None,
        walltime=None,
        new_style=False,
        double_precision=False,
    ):
        """Log ``scalar_value`` (a number or one-element tensor) under ``tag`` at ``global_step``
        (default 0), timestamped ``walltime`` (default now, seconds since the epoch).

        The value is stored as a float32 ``simple_value``; with ``new_style`` as a scalar tensor
        for TensorBoard's scalars plugin, float64 when ``double_precision``.

        >>> import tempfile
        >>> with SummaryWriter(tempfile.mkdtemp()) as w:
        ...     w.add_scalar("lr", 3e-4, global_step=10, new_style=True, double_precision=True)
        """
        if self._file is None:
            raise ValueError(f"add_scalar on a closed SummaryWriter ({self.log_dir})")
        value = event_proto.scalar_value(
            str(tag), _as_float(scalar_value), new_style=new_style, double=double_precision
        )
        step = 0 if global_step is None else int(global_step)
        wall_time = time.time() if walltime is None else float(walltime)
        self._write_event(event_proto.event(wall_time, step, values=(value,)))

    def _write_event(self, encoded: bytes) -> None:
        self._pending.append(encode_record(encoded))
        if (
            len(self._pending) >= self.max_queue
            or time.time() - self._last_flush >= self.flush_secs
        ):
            self.flush()

    def flush(self) -> None:
        """Write the pending events to the file and flush it to the operating system."""
        if self._file is None:
            return
        self._file.write(b"".join(self._pending))
        self._pending.clear()
        self._file.flush()
        self._last_flush = time.time()

    def close(self) -> None:
        """Flush and close the file; further ``close`` calls do nothing."""
        if self._file is None:
            return
        self.flush()
        self._file.close()
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
