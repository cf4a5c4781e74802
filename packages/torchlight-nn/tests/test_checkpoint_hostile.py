"""Checkpoints built to hurt: zip bombs, lying headers, truncated entries, path traversal,
symbolic links, and the temporary files of killed saves.

Every hostile file is built here, byte by byte where ``zipfile`` would refuse to lie. The cases
that would exhaust memory without the size checks run in a subprocess that reports its peak
resident memory, so a ``MemoryError``, a crash or an allocation of the declared size is a test
failure rather than a dead test run.
"""

import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time
import zlib

import numpy as np
import pytest

import torchlight as tl
from torchlight.nn import archive
from torchlight.nn import checkpoint as ck
from torchlight.nn.checkpoint import CheckpointError

MiB = 1 << 20


# --- building archives by hand --------------------------------------------------------------------
def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _npy_header(shape, dtype="<f4") -> bytes:
    """Magic and a v1.0 header declaring ``shape`` of ``dtype`` (no data follows)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": shape}
    )
    return np.lib.format.magic(1, 0) + buf.getvalue()[len(np.lib.format.magic(1, 0)) :]


def _manifest(root) -> bytes:
    text = json.dumps({"format": ck.FORMAT, "version": ck.VERSION, "root": root})
    return _npy(np.frombuffer(text.encode(), dtype=np.uint8))


def _tensor_node(entry="a0", shape=(4,), dtype="float32"):
    return {
        "t": "dict",
        "items": [
            [
                {"t": "str", "v": "w"},
                {
                    "t": "tensor",
                    "entry": entry,
                    "dtype": dtype,
                    "shape": list(shape),
                    "requires_grad": False,
                    "device": "cpu",
                },
            ]
        ],
    }


def _deflate(chunks):
    """Raw deflate of an iterable of byte chunks -> (compressed, crc32, uncompressed size)."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    out, crc, size = [], 0, 0
    for chunk in chunks:
        crc = zlib.crc32(chunk, crc)
        size += len(chunk)
        out.append(c.compress(chunk))
    out.append(c.flush())
    return b"".join(out), crc, size


def _member(name, data=None, *, chunks=None, deflate=False, file_size=None, crc=None):
    """One zip member; ``file_size``/``crc`` override the true values (a lying directory)."""
    if deflate:
        payload, true_crc, true_size = _deflate(chunks if chunks is not None else [data])
        method = 8
    else:
        payload, true_crc, true_size, method = data, zlib.crc32(data), len(data), 0
    return {
        "name": name.encode(),
        "payload": payload,
        "method": method,
        "crc": true_crc if crc is None else crc,
        "size": true_size if file_size is None else file_size,
    }


def _zip(path, members):
    """Write a zip archive (no zip64) exactly as described by ``members``."""
    out, central = io.BytesIO(), io.BytesIO()
    for m in members:
        offset = out.tell()
        out.write(
            struct.pack(
                "<IHHHHHIIIHH",
                0x04034B50,
                20,
                0,
                m["method"],
                0,
                0,
                m["crc"],
                len(m["payload"]),
                m["size"],
                len(m["name"]),
                0,
            )
        )
        out.write(m["name"] + m["payload"])
        central.write(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                m["method"],
                0,
                0,
                m["crc"],
                len(m["payload"]),
                m["size"],
                len(m["name"]),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
        )
        central.write(m["name"])
    cd_offset = out.tell()
    out.write(central.getvalue())
    out.write(
        struct.pack(
            "<IHHHHIIH",
            0x06054B50,
            0,
            0,
            len(members),
            len(members),
            len(central.getvalue()),
            cd_offset,
            0,
        )
    )
    path.write_bytes(out.getvalue())
    return path


def _load_in_subprocess(path, timeout=120):
    """Load ``path`` in a fresh interpreter; returns (exception type or 'ok', message, MiB of peak
    resident memory added by the load)."""
    code = textwrap.dedent(f"""
        import json, resource, sys
        import torchlight as tl
        from torchlight.nn import checkpoint as ck
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            ck.load({str(path)!r})
            kind, msg = "ok", ""
        except Exception as exc:
            kind, msg = type(exc).__name__, str(exc)
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        print(json.dumps([kind, msg, grown]))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"the load crashed (status {proc.returncode}):\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- zip bombs and lying sizes -----------------------------------------------------------------------
def _bomb_chunks(total):
    zero = bytes(MiB)
    yield _npy_header((4,))  # a valid header for what the manifest declares...
    for _ in range(total // MiB):
        yield zero  # ...followed by hundreds of MiB the header knows nothing about


def test_entry_inflating_far_beyond_its_manifest_shape(tmp_path):
    """A 0.6 MB file whose tensor entry inflates to 600 MB: refused from the declared sizes."""
    path = _zip(
        tmp_path / "bomb.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node())),
            _member("a0.npy", chunks=_bomb_chunks(600 * MiB), deflate=True),
        ],
    )
    assert path.stat().st_size < 1 * MiB
    kind, msg, grown = _load_in_subprocess(path)
    assert kind == "CheckpointError", msg
    assert "'a0'" in msg and "zip bomb" in msg and "(4,)" in msg
    assert grown < 50, f"the load grew resident memory by {grown:.0f} MiB"


def test_bomb_whose_directory_lies_about_its_size(tmp_path):
    """The zip directory declares the honest 144 bytes, the data inflates to 600 MB: streaming
    stops at the declared size and the CRC check fails, without inflating the rest."""
    honest = len(_npy_header((4,))) + 16
    path = _zip(
        tmp_path / "bomb.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node())),
            _member("a0.npy", chunks=_bomb_chunks(600 * MiB), deflate=True, file_size=honest),
        ],
    )
    kind, msg, grown = _load_in_subprocess(path)
    assert kind == "CheckpointError", msg
    assert "'a0'" in msg and "corrupt" in msg
    assert grown < 50, f"the load grew resident memory by {grown:.0f} MiB"


@pytest.mark.parametrize("manifest_shape", [(10**11,), (4,)])
def test_npy_header_declaring_1e11_values(tmp_path, manifest_shape):
    """A header declaring 10**11 float32 values (400 GB) in a tiny entry: a CheckpointError,
    not a MemoryError, whether or not the manifest tells the same lie."""
    path = _zip(
        tmp_path / "huge.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node(shape=manifest_shape))),
            _member("a0.npy", _npy_header((10**11,)) + bytes(16)),
        ],
    )
    kind, msg, grown = _load_in_subprocess(path)
    assert kind == "CheckpointError", msg
    assert ("100000000000" in msg) and ("'a0'" in msg)
    assert grown < 50


@pytest.mark.parametrize("deflate", [False, True])
def test_directory_declaring_more_than_the_entry_can_hold(tmp_path, deflate):
    """Header, manifest and zip directory all claim 400 GB; the stored bytes cannot hold it."""
    data = _npy_header((10**11,)) + bytes(16)
    path = _zip(
        tmp_path / "huge.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node(shape=(10**11,)))),
            _member("a0.npy", data, chunks=[data], deflate=deflate, file_size=2**32 - 1),
        ],
    )
    kind, msg, grown = _load_in_subprocess(path)
    assert kind == "CheckpointError", msg
    assert "can hold" in msg or "zip bomb" in msg
    assert grown < 50


def test_manifest_bomb(tmp_path):
    """The manifest has no shape to check against; its size is capped (and streamed)."""
    spaces = b" " * MiB
    n = archive.MANIFEST_MAX_BYTES // MiB + 8
    header = _npy_header((n * MiB,), "|u1")
    path = _zip(
        tmp_path / "m.ckpt",
        [_member("__manifest__.npy", chunks=[header] + [spaces] * n, deflate=True)],
    )
    kind, msg, grown = _load_in_subprocess(path)
    assert kind == "CheckpointError", msg
    assert "manifest" in msg and "allowed" in msg
    assert grown < 50


# --- truncated and inconsistent entries ------------------------------------------------------------
def test_entry_shorter_than_its_directory_says(tmp_path):
    data = _npy(np.arange(4, dtype=np.float32))
    path = _zip(
        tmp_path / "t.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node())),
            _member("a0.npy", data[:-8], file_size=len(data), crc=zlib.crc32(data)),
        ],
    )
    with pytest.raises(CheckpointError, match=r"'a0'.*(truncated|corrupt)"):
        ck.load(path)


def test_header_disagreeing_with_entry_size(tmp_path):
    """A header declaring 8 values followed by the bytes of 4."""
    path = _zip(
        tmp_path / "t.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node(shape=(8,)))),
            _member("a0.npy", _npy_header((8,)) + bytes(16)),
        ],
    )
    with pytest.raises(CheckpointError, match=r"'a0'.*\(8,\).*32 bytes.*16 bytes of data"):
        ck.load(path)


def test_trailing_bytes_after_the_array(tmp_path):
    path = _zip(
        tmp_path / "t.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node())),
            _member("a0.npy", _npy(np.ones(4, np.float32)) + b"extra"),
        ],
    )
    with pytest.raises(CheckpointError, match="'a0'"):
        ck.load(path)


def test_object_dtype_is_refused_before_reading(tmp_path):
    root = {"t": "ndarray", "entry": "a0", "dtype": "|O", "shape": [2]}
    path = _zip(
        tmp_path / "o.ckpt",
        [
            _member("__manifest__.npy", _manifest(root)),
            _member("a0.npy", _npy_header((2,), "|O") + bytes(16)),
        ],
    )
    with pytest.raises(CheckpointError, match="pickle"):
        ck.load(path)


def test_unsupported_compression_method(tmp_path):
    m = _member("a0.npy", _npy(np.ones(4, np.float32)))
    m["method"] = 12  # bzip2
    path = _zip(tmp_path / "c.ckpt", [_member("__manifest__.npy", _manifest(_tensor_node())), m])
    with pytest.raises(CheckpointError, match="compression method 12"):
        ck.load(path)


def test_fortran_order_entry_is_read_correctly(tmp_path):
    arr = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    path = _zip(
        tmp_path / "f.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node(shape=(3, 4)))),
            _member("a0.npy", _npy(arr)),
        ],
    )
    np.testing.assert_array_equal(ck.load(path)["w"].to_numpy(), arr)


def test_streamed_entries_larger_than_one_chunk_round_trip(tmp_path):
    w = np.random.default_rng(0).standard_normal(archive.CHUNK // 4 * 3 + 7).astype(np.float32)
    for compress in (False, True):
        ck.save({"w": tl.from_numpy(w)}, tmp_path / "big.ckpt", compress=compress)
        np.testing.assert_array_equal(ck.load(tmp_path / "big.ckpt")["w"].to_numpy(), w)


# --- path traversal --------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["../../../etc/passwd", "/etc/passwd", "a0/../../x"])
def test_entry_names_never_reach_the_filesystem(tmp_path, entry):
    """Entry names are only ever a0, a1, ...: a traversal name is refused even when the archive
    holds a member of that name, and loading writes nothing anywhere."""
    inner = tmp_path / "inner"
    inner.mkdir()
    evil = entry.lstrip("/") + ".npy"
    path = _zip(
        inner / "p.ckpt",
        [
            _member("__manifest__.npy", _manifest(_tensor_node(entry=entry))),
            _member(evil, _npy(np.ones(4, np.float32))),  # a member of that very name exists
        ],
    )
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(CheckpointError, match="bad entry name"):
        ck.load(path)
    assert sorted(p for p in tmp_path.rglob("*")) == before


# --- symbolic links --------------------------------------------------------------------------------
def test_save_through_a_symlink_keeps_the_link(tmp_path):
    target = tmp_path / "real" / "model.ckpt"
    target.parent.mkdir()
    ck.save({"step": 1}, target)
    link = tmp_path / "latest.ckpt"
    link.symlink_to(target)
    ck.save({"step": 2}, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert ck.load(target) == {"step": 2} and ck.load(link) == {"step": 2}
    assert sorted(os.listdir(target.parent)) == ["model.ckpt"]


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "latest.ckpt"
    link.symlink_to(tmp_path / "new.ckpt")
    ck.save({"step": 3}, link)
    assert link.is_symlink() and ck.load(tmp_path / "new.ckpt") == {"step": 3}


def test_symlink_to_a_directory_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "l").symlink_to(tmp_path / "d")
    with pytest.raises(IsADirectoryError):
        ck.save({"a": 1}, tmp_path / "l")


# --- temporary files of killed saves ------------------------------------------------------------
def _killed_save(path):
    """A save SIGKILLed after writing half of its temporary file (no cleanup code can run)."""
    code = textwrap.dedent(f"""
        import io, os, signal
        import torchlight as tl
        from torchlight.nn import checkpoint as ck
        real = ck._write_npz
        def writer(f, arrays, compress):
            buf = io.BytesIO()
            real(buf, arrays, compress)
            f.write(buf.getvalue()[: len(buf.getvalue()) // 2])
            f.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        ck._write_npz = writer
        ck.save({{"w": tl.randn(64, 64)}}, {str(path)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_next_save_removes_the_temp_file_of_a_killed_save(tmp_path):
    path = tmp_path / "model.ckpt"
    ck.save({"step": 1}, path)
    _killed_save(path)
    left = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(left) == 1 and left[0].startswith(".model.ckpt.")
    assert ck.load(path) == {"step": 1}  # the killed save did not touch the checkpoint
    ck.save({"step": 2}, path)
    assert os.listdir(tmp_path) == ["model.ckpt"]
    assert ck.load(path) == {"step": 2}


def test_temp_files_of_live_or_foreign_saves_are_kept(tmp_path):
    host = archive._host()
    live = tmp_path / f".m.ckpt.{host}.{os.getppid()}.abc123.tmp"  # our parent is alive
    foreign = tmp_path / ".m.ckpt.other-host.12345.abc123.tmp"
    foreign_old = tmp_path / ".m.ckpt.other-host.12346.abc123.tmp"
    other_dest = tmp_path / f".n.ckpt.{host}.999999999.abc123.tmp"  # another checkpoint's
    for p in (live, foreign, foreign_old, other_dest):
        p.write_bytes(b"partial")
    old = time.time() - archive.STALE_AFTER_S - 60
    os.utime(foreign_old, (old, old))
    ck.save({"a": 1}, tmp_path / "m.ckpt")
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["m.ckpt", live.name, foreign.name, other_dest.name]
    )


def test_temp_name_records_host_and_pid(tmp_path, monkeypatch):
    seen = []
    real = ck._write_npz

    def spy(f, arrays, compress):
        seen.extend(n for n in os.listdir(tmp_path) if n.endswith(".tmp"))
        real(f, arrays, compress)

    monkeypatch.setattr(ck, "_write_npz", spy)
    ck.save({"a": 1}, tmp_path / "x.ckpt")
    host = archive._host()
    assert seen[0].startswith(f".x.ckpt.{host}.{os.getpid()}.") and seen[0].endswith(".tmp")
    assert host and "." not in host and socket.gethostname()
