"""Checkpoints without pickle: ``save(obj, path)`` / ``load(path)`` and the module helpers.

What can be saved: nested dicts, lists and tuples of tensors, numpy arrays and scalars, ``int``,
``float``, ``bool``, ``None`` and ``str`` — a model's ``state_dict()``, an optimizer's, a
scheduler's, a step counter, all in one dict. Dict keys may be strings, ints, floats, bools,
``None`` or tuples of those (an optimizer's state is keyed by parameter index).

The file is an ordinary ``.npz`` (a zip of ``.npy`` files): every array is an entry ``a0``,
``a1``, ..., and the entry ``__manifest__`` is a uint8 array holding UTF-8 JSON::

    {"format": "torchlight-checkpoint", "version": 1,
     "root": {"t": "dict", "items": [[{"t": "str", "v": "step"}, {"t": "int", "v": 20}], ...]}}

Tensors are nodes ``{"t": "tensor", "entry": "a0", "dtype": "float32", "shape": [...],
"requires_grad": false, "device": "cpu"}`` and come back as torchlight tensors of that dtype.
Loading never unpickles: each entry is read with ``np.load(..., allow_pickle=False)``, and a
file that is empty, truncated, corrupt, not a checkpoint, or from a newer format raises
:class:`CheckpointError` saying which.

Writes are atomic: the archive goes to a temporary file in the destination's directory, is
flushed and fsync'ed, then ``os.replace``-d over the destination, and the directory is fsync'ed.
A crash or a full disk mid-write leaves the previous checkpoint intact (and no temporary file);
a save killed outright leaves its temporary file, which the next save of that destination
removes (see :mod:`torchlight.nn.archive`). Saving to a symbolic link replaces the file it
points to and keeps the link.

Reading never trusts the file: sizes declared in the zip directory and the ``.npy`` headers are
checked against the manifest before anything is allocated, and entries are streamed, so a zip
bomb or a header declaring 10**11 values is a :class:`CheckpointError`, not a ``MemoryError``.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import tempfile
import zipfile
import zlib

import numpy as np

import torchlight as tl
from torchlight import Tensor, TorchlightError
from torchlight.tensor.dtypes import as_dtype

from .archive import (
    MANIFEST_MAX_BYTES,
    PLAIN_KINDS,
    default_mode,
    fsync_dir,
    read_entry,
    remove_stale_temps,
    temp_prefix,
)

__all__ = ["save", "load", "save_state", "load_state", "CheckpointError", "FORMAT", "VERSION"]

FORMAT = "torchlight-checkpoint"
VERSION = 1
MANIFEST = "__manifest__"

_PLAIN_KINDS = PLAIN_KINDS


class CheckpointError(TorchlightError, RuntimeError):
    """A checkpoint that cannot be written or read, or that does not fit what it is loaded into."""


# --- encoding --------------------------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self._active: set[int] = set()

    def _entry(self, arr: np.ndarray) -> str:
        name = f"a{len(self.arrays)}"
        self.arrays[name] = _c_order(arr)
        return name

    def encode(self, obj, where: str) -> dict:
        if obj is None:
            return {"t": "none"}
        if isinstance(obj, bool):
            return {"t": "bool", "v": obj}
        if isinstance(obj, int):
            return {"t": "int", "v": int(obj)}
        if isinstance(obj, float):
            return {"t": "float", "v": _float_out(obj)}
        if isinstance(obj, str):
            return {"t": "str", "v": obj}
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if isinstance(obj, np.ndarray):
            self._check_array(obj, where)
            return {
                "t": "ndarray",
                "entry": self._entry(obj),
                "dtype": obj.dtype.str,
                "shape": list(obj.shape),
            }
        if isinstance(obj, np.generic):
            arr = np.asarray(obj)
            self._check_array(arr, where)
            return {"t": "npscalar", "entry": self._entry(arr), "dtype": arr.dtype.str}
        if isinstance(obj, (dict, list, tuple)):
            if id(obj) in self._active:
                raise CheckpointError(
                    f"cannot save {where}: the structure contains itself (a cycle)"
                )
            self._active.add(id(obj))
            try:
                if isinstance(obj, dict):
                    items = [
                        [self.key(k, where), self.encode(v, f"{where}[{k!r}]")]
                        for k, v in obj.items()
                    ]
                    return {"t": "dict", "items": items}
                kind = "list" if isinstance(obj, list) else "tuple"
                return {
                    "t": kind,
                    "items": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)],
                }
            finally:
                self._active.discard(id(obj))
        raise CheckpointError(
            f"cannot save {where}: objects of type {type(obj).__name__} are not supported (a "
            "checkpoint holds dicts, lists, tuples, tensors, numpy arrays, int, float, bool, None "
            "and str; save a state_dict() rather than an object)"
        )

    def key(self, k, where: str) -> dict:
        if k is None or isinstance(k, (bool, int, float, str)):
            return self.encode(k, where)
        if isinstance(k, tuple):
            return {"t": "tuple", "items": [self.key(x, where) for x in k]}
        raise CheckpointError(
            f"cannot save {where}: dict key {k!r} of type {type(k).__name__} is not supported "
            "(use str, int, float, bool, None or tuples of those)"
        )

    def _tensor(self, t: Tensor) -> dict:
        node = {
            "t": "tensor",
            "entry": self._entry(t.to_numpy()),
            "dtype": t.dtype.name,
            "shape": list(t.shape),
            "requires_grad": bool(t.requires_grad),
            "device": str(t.device),
        }
        if type(t).__name__ == "Parameter":
            node["parameter"] = True
        return node

    @staticmethod
    def _check_array(arr: np.ndarray, where: str) -> None:
        if arr.dtype.kind not in _PLAIN_KINDS or arr.dtype.fields is not None:
            raise CheckpointError(
                f"cannot save {where}: numpy arrays of dtype {arr.dtype} would need pickle; "
                "only bool, integer, floating, complex and string arrays are supported"
            )


def _c_order(arr: np.ndarray) -> np.ndarray:
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _float_out(x: float):
    if math.isfinite(x):
        return x  # json writes repr(x), which round-trips exactly
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _write_npz(f, arrays: dict, compress: bool) -> None:
    """Write ``arrays`` as an ``.npz`` archive into the open binary file ``f`` (no pickle)."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, mode="w", compression=method, allowZip64=True) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)


def save(obj, path, *, compress: bool = False) -> None:
    """Write ``obj`` to ``path`` (exactly that name; no suffix is added) atomically.

    ``path`` may also be an open binary file object (then the write is not atomic).
    ``compress=True`` deflates the entries.
    """
    enc = _Encoder()
    root = enc.encode(obj, "obj")
    manifest = json.dumps({"format": FORMAT, "version": VERSION, "root": root}, allow_nan=False)
    arrays = {MANIFEST: np.frombuffer(manifest.encode("utf-8"), dtype=np.uint8)}
    arrays.update(enc.arrays)

    if hasattr(path, "write"):
        _write_npz(path, arrays, compress)
        return
    path = os.fspath(path)
    if os.path.islink(path):  # write the file the link points to; the link stays a link
        path = os.path.realpath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"cannot save checkpoint to {path!r}: directory {directory!r} does not exist"
        )
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot save checkpoint to {path!r}: it is a directory")
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = default_mode()

    base = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(base), suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            _write_npz(f, arrays, compress)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(directory)
    remove_stale_temps(directory, base)


# --- decoding --------------------------------------------------------------------------------------
_CORRUPT = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    ValueError,
    OSError,
    KeyError,
    UnicodeDecodeError,
)


class _Decoder:
    def __init__(self, zf: zipfile.ZipFile, name: str, map_location, size: int):
        self.zf = zf
        self.name = name
        self.map_location = map_location
        self.size = size  # bytes in the archive file

    def fail(self, what: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {self.name}: {what}")

    def array(self, entry, where: str, dtype=None, shape=None, max_bytes=None) -> np.ndarray:
        """Entry ``entry``'s array, checked against the manifest's ``dtype`` and ``shape`` (when
        given) before it is allocated (see :mod:`torchlight.nn.archive`)."""
        if not isinstance(entry, str) or not (entry == MANIFEST or re.fullmatch(r"a[0-9]+", entry)):
            raise self.fail(
                f"corrupt manifest: bad entry name {entry!r} for {where} (save writes a0, a1, ...)"
            )
        try:
            info = self.zf.getinfo(entry + ".npy")
        except KeyError:
            raise self.fail(f"entry {entry!r} (for {where}) is missing from the archive") from None

        def fail(text):
            return self.fail(f"entry {entry!r} (for {where}) {text}")

        try:
            return read_entry(self.zf, info, self.size, fail, dtype, shape, max_bytes)
        except CheckpointError:
            raise
        except _CORRUPT as exc:
            raise fail(f"is corrupt or truncated: {exc}") from None

    def expected(self, node, where: str, scalar: bool = False):
        """The (numpy dtype, shape) the manifest gives an ``ndarray``/``npscalar`` node."""
        try:
            dtype = np.dtype(node["dtype"])
        except TypeError:
            raise self.fail(f"{where}: unknown array dtype {node['dtype']!r}") from None
        if dtype.kind not in _PLAIN_KINDS or dtype.fields is not None:
            raise self.fail(f"{where}: dtype {dtype} would need pickle; refused")
        return dtype, () if scalar else self.shape(node["shape"], where)

    def shape(self, shape, where: str) -> tuple:
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            raise self.fail(f"corrupt manifest at {where}: shape {shape!r}")
        return tuple(shape)

    def decode(self, node, where: str):
        if not isinstance(node, dict) or "t" not in node:
            raise self.fail(f"corrupt manifest at {where}")
        kind = node["t"]
        try:
            if kind == "none":
                return None
            if kind in ("bool", "int", "str"):
                value = node["v"]
                expected = {"bool": bool, "int": int, "str": str}[kind]
                if not isinstance(value, expected) or (kind == "int" and isinstance(value, bool)):
                    raise self.fail(f"corrupt manifest at {where}: {kind} node holds {value!r}")
                return value
            if kind == "float":
                value = node["v"]
                if isinstance(value, str) and value in ("nan", "inf", "-inf"):
                    return float(value)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return float(value)
                raise self.fail(f"corrupt manifest at {where}: float node holds {value!r}")
            if kind == "list":
                return [self.decode(v, f"{where}[{i}]") for i, v in enumerate(node["items"])]
            if kind == "tuple":
                return tuple(self.decode(v, f"{where}[{i}]") for i, v in enumerate(node["items"]))
            if kind == "dict":
                out = {}
                for pair in node["items"]:
                    k = self.decode(pair[0], f"{where} (a key)")
                    out[k] = self.decode(pair[1], f"{where}[{k!r}]")
                return out
            if kind == "tensor":
                return self.tensor(node, where)
            if kind == "ndarray":
                return self.array(node["entry"], where, *self.expected(node, where))
            if kind == "npscalar":
                return self.array(node["entry"], where, *self.expected(node, where, scalar=True))[
                    ()
                ]
        except CheckpointError:
            raise
        except (KeyError, TypeError, IndexError) as exc:
            raise self.fail(f"corrupt manifest at {where}: {type(exc).__name__} {exc}") from None
        raise self.fail(
            f"unknown node type {kind!r} at {where} (corrupt, or written by a newer torchlight)"
        )

    def tensor(self, node, where):
        try:
            dtype = as_dtype(node["dtype"])
        except TorchlightError:
            raise self.fail(f"{where}: unknown tensor dtype {node['dtype']!r}") from None
        arr = self.array(node["entry"], where, dtype.np, self.shape(node["shape"], where))
        t = tl.from_numpy(_c_order(arr))
        device = self.map_location if self.map_location is not None else node.get("device", "cpu")
        if device not in (None, "cpu"):
            try:
                t = t.to(device)
            except TorchlightError as exc:
                raise self.fail(
                    f"{where} was saved on device {device!r}, which is not available here ({exc}); "
                    "pass map_location='cpu'"
                ) from None
        requires_grad = bool(node.get("requires_grad", False)) and dtype.is_floating_point
        if node.get("parameter"):
            try:
                from torchlight.nn.parameter import Parameter
            except ImportError:  # pragma: no cover - nn without Parameter
                Parameter = None
            if Parameter is not None:
                return Parameter(t, requires_grad=requires_grad)
        if requires_grad:
            t.requires_grad_(True)
        return t


def load(path, map_location=None):
    """Read what :func:`save` wrote. Tensors come back with their dtype (and device, unless
    ``map_location`` names another one, e.g. ``"cpu"``)."""
    if hasattr(path, "read"):
        name = repr(getattr(path, "name", "<file object>"))
        if not getattr(path, "seekable", lambda: False)() or path.tell() != 0:
            path = io.BytesIO(path.read())  # zipfile needs the archive to start at offset 0
        return _load_from(path, name, map_location)
    name = repr(os.fspath(path))
    with open(path, "rb") as f:
        return _load_from(f, name, map_location)


def _load_from(f, name: str, map_location):
    """Read a checkpoint from the seekable binary file ``f`` (its data is streamed, never read
    whole)."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    head = f.read(8)
    f.seek(0)
    if size <= 0:
        raise CheckpointError(f"checkpoint {name}: the file is empty (an interrupted write?)")
    if not head.startswith(b"PK"):
        if head.startswith(b"\x93NUMPY"):
            what = "a single .npy array"
        elif head[:1] == b"\x80":
            what = "a pickle (e.g. a torch.save file); torchlight never unpickles"
        else:
            what = "not a zip/.npz archive"
        raise CheckpointError(f"checkpoint {name}: not a torchlight checkpoint ({what})")
    try:
        zf = zipfile.ZipFile(f)
    except _CORRUPT as exc:
        raise CheckpointError(
            f"checkpoint {name}: the archive is truncated or corrupt ({exc})"
        ) from None
    with zf:
        dec = _Decoder(zf, name, map_location, size)
        if MANIFEST + ".npy" not in zf.namelist():
            raise CheckpointError(
                f"checkpoint {name}: not a torchlight checkpoint (no {MANIFEST} entry; a plain .npz?)"
            )
        raw = dec.array(MANIFEST, "the manifest", max_bytes=MANIFEST_MAX_BYTES)
        try:
            if raw.dtype != np.uint8 or raw.ndim != 1:
                raise ValueError(f"manifest entry has dtype {raw.dtype} and shape {raw.shape}")
            manifest = json.loads(raw.tobytes().decode("utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError("manifest is not a JSON object")
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise CheckpointError(f"checkpoint {name}: the manifest is corrupt ({exc})") from None
        if manifest.get("format") != FORMAT:
            raise CheckpointError(
                f"checkpoint {name}: not a torchlight checkpoint (manifest format is "
                f"{manifest.get('format')!r}, expected {FORMAT!r})"
            )
        version = manifest.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise CheckpointError(f"checkpoint {name}: invalid format version {version!r}")
        if version > VERSION:
            raise CheckpointError(
                f"checkpoint {name}: written in format version {version} by a newer torchlight; "
                f"this one reads versions up to {VERSION} — upgrade torchlight-nn"
            )
        if "root" not in manifest:
            raise CheckpointError(f"checkpoint {name}: the manifest is corrupt (no 'root')")
        try:
            return dec.decode(manifest["root"], "obj")
        except RecursionError:
            raise CheckpointError(
                f"checkpoint {name}: the manifest nests too deeply (corrupt?)"
            ) from None


# --- module helpers -----------------------------------------------------------------------------
def save_state(module, path, **kwargs) -> None:
    """``save(module.state_dict(), path)``: parameters and persistent buffers."""
    save(module.state_dict(), path, **kwargs)


def load_state(module, path, strict: bool = True, map_location=None):
    """Load a :func:`save_state` file into ``module``; returns ``load_state_dict``'s result.

    Keys the module lacks or the file lacks (with ``strict``), and shape mismatches, raise
    :class:`CheckpointError` naming every offending key.
    """
    state = load(path, map_location=map_location)
    where = f"checkpoint {os.fspath(path)!r}" if not hasattr(path, "read") else "checkpoint"
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise CheckpointError(f"{where} does not hold a module state dict (a dict keyed by names)")
    bad = [k for k, v in state.items() if not isinstance(v, Tensor)]
    if bad:
        raise CheckpointError(
            f"{where}: entries {bad} are not tensors, so this is not a module state dict"
        )
    own = module.state_dict()
    problems = []
    if strict:
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if missing:
            problems.append(f"missing keys: {', '.join(missing)}")
        if unexpected:
            problems.append(f"unexpected keys: {', '.join(unexpected)}")
    for k, v in state.items():
        if k in own and tuple(own[k].shape) != tuple(v.shape):
            problems.append(
                f"shape mismatch for {k}: the checkpoint has {tuple(v.shape)}, the module has {tuple(own[k].shape)}"
            )
    if problems:
        raise CheckpointError(
            f"{where} does not fit {type(module).__name__}:\n\t" + "\n\t".join(problems)
        )
    try:
        return module.load_state_dict(state, strict=strict)
    except CheckpointError:
        raise
    except (TorchlightError, KeyError, ValueError, RuntimeError) as exc:
        raise CheckpointError(
            f"{where} could not be loaded into {type(module).__name__}: {exc}"
        ) from exc
