"""The file side of checkpoints: reading an entry without trusting the file, durable renames, and
the temporary files of killed saves.

A checkpoint is read from a file that may be truncated, corrupt or built to hurt. Nothing in it
is believed before it is checked against something cheaper to verify:

* the *declared* sizes in the zip directory come first: an entry's uncompressed size must agree
  with the shape and dtype the manifest gives it, and cannot exceed what its compressed bytes
  can inflate to (deflate expands at most :data:`DEFLATE_MAX_RATIO` times; a stored entry not at
  all) nor, compressed, what the archive holds;
* the ``.npy`` header comes next: its shape and dtype must match the manifest and account for
  exactly the entry's size, so a header declaring 10**11 values in a 1 kB entry is refused;
* only then is the array allocated, once, at its final size, and filled by streaming the entry
  in :data:`CHUNK`-byte pieces. An entry whose data inflates beyond its declared size is cut off
  there by :mod:`zipfile`, and its CRC then fails; at no point is more than one chunk of it held.

Temporary files. :func:`~torchlight.nn.checkpoint.save` writes ``.<name>.<host>.<pid>.<random>.tmp``
next to the destination. A save killed mid-write (SIGKILL, power loss) leaves that file behind;
the next save of the same destination removes it (:func:`remove_stale_temps`) when the process
that made it is gone: made on this host by a process id that no longer runs, or untouched for
:data:`STALE_AFTER_S` seconds (a temporary file of another host, whose processes cannot be
seen from here).
"""

from __future__ import annotations

import math
import os
import re
import socket
import time
import zipfile

import numpy as np

__all__ = [
    "read_entry",
    "temp_prefix",
    "remove_stale_temps",
    "default_mode",
    "fsync_dir",
    "CHUNK",
    "DEFLATE_MAX_RATIO",
    "NPY_HEADER_MAX",
    "MANIFEST_MAX_BYTES",
    "STALE_AFTER_S",
    "PLAIN_KINDS",
]

#: Bytes of an entry streamed per read (the most of it ever held outside its array).
CHUNK = 1 << 20
#: Deflate's largest possible expansion of its input (zlib's documented bound).
DEFLATE_MAX_RATIO = 1032
#: Most bytes of ``.npy`` magic and header accepted (numpy writes 128 for a checkpoint's arrays).
NPY_HEADER_MAX = 1 << 16
#: Largest manifest accepted: 256 MiB of JSON, about two million tensors.
MANIFEST_MAX_BYTES = 1 << 28
#: Seconds after which an untouched temporary file counts as stale whoever made it.
STALE_AFTER_S = 24 * 3600.0

#: numpy array kinds that round-trip through ``.npy`` without pickle: bool, ints, floats,
#: complex, bytes and unicode strings.
PLAIN_KINDS = "biufcSU"


def read_entry(
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    archive_size: int,
    fail,
    dtype: np.dtype | None = None,
    shape: tuple | None = None,
    max_bytes: int | None = None,
) -> np.ndarray:
    """The array stored in ``info``, after checking sizes, header and (when given) the manifest's
    ``dtype`` and ``shape``; ``fail(text)`` builds the exception raised for a bad entry."""
    declared = info.file_size
    if info.compress_type == zipfile.ZIP_STORED:
        inflatable = info.compress_size
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        inflatable = info.compress_size * DEFLATE_MAX_RATIO + 64
    else:
        raise fail(
            f"uses zip compression method {info.compress_type}; checkpoints are stored or deflated"
        )
    if info.compress_size > archive_size:
        raise fail(
            f"claims {info.compress_size} compressed bytes, but the whole file has {archive_size}"
        )
    if declared > inflatable:
        raise fail(
            f"declares {declared} bytes, more than its {info.compress_size} stored bytes can "
            "hold (a corrupt file, or a zip bomb)"
        )
    if max_bytes is not None and declared > max_bytes:
        raise fail(f"declares {declared} bytes, more than the {max_bytes} allowed")
    if dtype is not None and shape is not None:
        need = _nbytes(dtype, shape)
        if declared > need + NPY_HEADER_MAX:
            raise fail(
                f"declares {declared} bytes, far more than the {need} its shape {tuple(shape)} "
                f"and dtype {dtype} need (a corrupt file, or a zip bomb)"
            )
    with zf.open(info) as member:
        h_shape, fortran, h_dtype, header_len = _read_header(member, fail)
        if h_dtype.hasobject or h_dtype.kind not in PLAIN_KINDS or h_dtype.fields is not None:
            raise fail(f"holds dtype {h_dtype}, which would need pickle; refused")
        if dtype is not None and h_dtype != dtype:
            raise fail(f"the manifest says dtype {dtype}, the stored array has {h_dtype}")
        if shape is not None and tuple(h_shape) != tuple(shape):
            raise fail(
                f"the manifest says shape {tuple(shape)}, the stored array has {tuple(h_shape)}"
            )
        need = _nbytes(h_dtype, h_shape)
        if need != declared - header_len:
            raise fail(
                f"its header declares shape {tuple(h_shape)} of {h_dtype} ({need} bytes), but "
                f"the entry holds {declared - header_len} bytes of data"
            )
        try:
            arr = np.empty(h_shape[::-1] if fortran else h_shape, dtype=h_dtype)
        except (MemoryError, ValueError) as exc:
            raise fail(f"needs {need} bytes of memory, which cannot be allocated ({exc})") from None
        _fill(member, arr, fail)
        if member.read(1):  # (also makes zipfile check the CRC of what was read)
            raise fail("holds more data than its header declares")
    return arr.T if fortran else arr


def _nbytes(dtype: np.dtype, shape) -> int:
    return math.prod(int(d) for d in shape) * dtype.itemsize


def _read_header(member, fail):
    try:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(
                member, max_header_size=NPY_HEADER_MAX
            )
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(
                member, max_header_size=NPY_HEADER_MAX
            )
        else:
            raise ValueError(f".npy format version {version} is not one a checkpoint uses")
    except (ValueError, EOFError, SyntaxError, TypeError) as exc:  # (a bad CRC is not caught here)
        raise fail(f"is not a valid .npy array ({exc})") from None
    return shape, fortran, dtype, member.tell()


def _fill(member, arr: np.ndarray, fail) -> None:
    """Stream ``member``'s remaining bytes into ``arr``'s memory, CHUNK bytes at a time."""
    if arr.nbytes == 0:
        return
    # numpy's stubs give ndarray ``__buffer__`` only for Python >= 3.12; it is a buffer on all
    view = memoryview(arr.reshape(-1).view(np.uint8))  # type: ignore[arg-type]
    pos = 0
    while pos < len(view):
        n = member.readinto(view[pos : pos + CHUNK])
        if not n:
            raise fail(f"ends after {pos} of its {len(view)} data bytes (truncated)")
        pos += n


# --- temporary files -----------------------------------------------------------------------------
def default_mode() -> int:
    """The permission bits a new file gets here (``0o666`` less the umask): a checkpoint written
    through a temporary file ends up with the mode ``open`` would have given it."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def fsync_dir(directory: str) -> None:
    """Make a rename in ``directory`` durable (POSIX); a no-op where directories cannot be
    opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:64] or "host"


def temp_prefix(base: str) -> str:
    """The prefix :func:`tempfile.mkstemp` gets for a save of ``base`` from this process."""
    return f".{base}.{_host()}.{os.getpid()}."


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process there; never guess
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def remove_stale_temps(directory: str, base: str) -> list[str]:
    """Delete the temporary files that killed saves of ``directory/base`` left; returns their names.

    One is stale when it was made on this host by a process that no longer exists, or has not
    been written to for :data:`STALE_AFTER_S` seconds. A save still running (here or on another
    host sharing the directory) is never disturbed.
    """
    ours = re.compile(
        r"\." + re.escape(base) + r"\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp"
    )
    legacy = re.compile(r"\." + re.escape(base) + r"\.[A-Za-z0-9_]+\.tmp")  # (no host and pid)
    host = _host()
    now = time.time()
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = ours.fullmatch(name)
        if m is None and legacy.fullmatch(name) is None:
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        dead = (
            m is not None
            and m["host"] == host
            and int(m["pid"]) != os.getpid()
            and not _pid_alive(int(m["pid"]))
        )
        if dead or now - st.st_mtime > STALE_AFTER_S:
            try:
                os.unlink(path)
            except OSError:
                continue
            removed.append(name)
    return removed
