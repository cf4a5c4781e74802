"""Checkpoints: round trips, the on-disk format, every error path, and atomic writes."""

import errno
import io
import json
import math
import os
import pickle
import zipfile

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn
from torchlight.nn import checkpoint as ck
from torchlight.nn.checkpoint import CheckpointError


def _eq(a, b):
    """Structural equality that compares tensors/arrays by dtype, shape and bits."""
    if isinstance(a, tl.Tensor):
        assert isinstance(b, tl.Tensor) and a.dtype is b.dtype and a.shape == b.shape
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert type(b) is dict and list(a) == list(b)
        for k in a:
            _eq(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _eq(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b)
    else:
        assert type(a) is type(b) and a == b


def _sample():
    return {
        "model": {
            "fc.weight": tl.randn(3, 4),
            "fc.bias": tl.randn(3, dtype=tl.float64),
            "steps": tl.tensor(7),
            "mask": tl.tensor([True, False, True]),
            "scalar": tl.tensor(2.5),
            "empty": tl.zeros(0, 3),
        },
        "optimizer": {
            "state": {0: {"step": 3, "exp_avg": tl.randn(3, 4)}},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0], "nesterov": False}],
        },
        "scheduler": {
            "best": math.inf,
            "worst": -math.inf,
            "nan": math.nan,
            "last_epoch": 12,
            "milestones": {3: 1, 5: 2},
            "base_lrs": [0.1, 1e-300, 1 / 3],
        },
        "step": 20,
        "huge": 2**80,
        "none": None,
        "text": "héllo ✓",
        "np": np.arange(6, dtype=np.int32).reshape(2, 3),
        "np_scalar": np.float32(1.5),
        "strings": np.array(["a", "bc"]),
        ("tuple", 1): [],
        1.5: (),
        None: {},
    }


def test_round_trip_nested(tmp_path):
    obj = _sample()
    ck.save(obj, tmp_path / "a.ckpt")
    _eq(obj, ck.load(tmp_path / "a.ckpt"))


def test_tensors_keep_dtype_grad_flag_and_come_back_contiguous(tmp_path):
    w = tl.randn(4, 3, dtype=tl.float64, requires_grad=True)
    view = tl.arange(12).reshape(3, 4).T  # non-contiguous view
    ck.save([w, view], tmp_path / "t.ckpt")
    w2, v2 = ck.load(tmp_path / "t.ckpt")
    assert w2.requires_grad and w2.is_leaf and w2.dtype is tl.float64
    assert v2.dtype is tl.int64 and v2.shape == (4, 3) and v2.is_contiguous()
    np.testing.assert_array_equal(v2.to_numpy(), np.arange(12).reshape(3, 4).T)


def test_file_is_a_plain_npz_with_a_manifest(tmp_path):
    path = tmp_path / "model.pt"
    ck.save({"w": tl.ones(2, 2)}, path)
    assert sorted(os.listdir(tmp_path)) == ["model.pt"]  # exact name, nothing else left behind
    with np.load(path, allow_pickle=False) as npz:
        assert set(npz.files) == {"__manifest__", "a0"}
        manifest = json.loads(npz["__manifest__"].tobytes().decode())
        np.testing.assert_array_equal(npz["a0"], np.ones((2, 2), np.float32))
    assert manifest["format"] == "torchlight-checkpoint" and manifest["version"] == ck.VERSION
    assert manifest["root"]["t"] == "dict"


def test_torchlight_save_load_delegate_and_file_objects(tmp_path):
    obj = {"x": tl.randn(3), "n": 1}
    tl.save(obj, tmp_path / "x.ckpt")
    _eq(obj, tl.load(tmp_path / "x.ckpt"))
    buf = io.BytesIO()
    ck.save(obj, buf, compress=True)
    buf.seek(0)
    _eq(obj, ck.load(buf))


def test_unsupported_objects_are_refused_before_writing(tmp_path):
    path = tmp_path / "bad.ckpt"
    for bad, match in [
        ({"f": lambda: 0}, r"obj\['f'\].*function"),
        ({"s": {1, 2}}, "set"),
        ({"o": np.array([object()])}, "pickle"),
        ({(1, object()): 0}, "dict key"),
    ]:
        with pytest.raises(CheckpointError, match=match):
            ck.save(bad, path)
    cyc = []
    cyc.append(cyc)
    with pytest.raises(CheckpointError, match="cycle"):
        ck.save(cyc, path)
    assert os.listdir(tmp_path) == []


# --- reading what is not a (good) checkpoint ---------------------------------------------------
@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.ckpt"
    ck.save({"w": tl.randn(64, 64), "b": tl.randn(64), "step": 3}, path)
    return path


def test_empty_file(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        ck.load(tmp_path / "e")


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.6, 0.99])
def test_truncated_file(good, fraction):
    data = good.read_bytes()
    good.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        ck.load(good)


def test_corrupted_array_bytes_are_detected(good):
    data = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as zf:
        info = zf.getinfo("a0.npy")
    # flip a byte in the middle of a0's data (after its local header and .npy header)
    pos = info.header_offset + 30 + len(info.filename) + info.file_size // 2
    data[pos] ^= 0xFF
    good.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"a0.*corrupt"):
        ck.load(good)


@pytest.mark.parametrize(
    "content, match",
    [
        (b"just some text, not an archive", "not a zip"),
        (pickle.dumps({"w": 1}), "pickle"),
    ],
)
def test_not_a_checkpoint(tmp_path, content, match):
    (tmp_path / "f").write_bytes(content)
    with pytest.raises(CheckpointError, match=match):
        ck.load(tmp_path / "f")


def test_npy_and_plain_npz_are_not_checkpoints(tmp_path):
    np.save(tmp_path / "a.npy", np.ones(3))
    with pytest.raises(CheckpointError, match="single .npy"):
        ck.load(tmp_path / "a.npy")
    np.savez(tmp_path / "b.npz", x=np.ones(3))
    with pytest.raises(CheckpointError, match="no __manifest__"):
        ck.load(tmp_path / "b.npz")


def _rewrite(path, manifest=None, drop=(), replace=None):
    """Rebuild the archive with an edited manifest / entries."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files if k not in drop}
    if manifest is not None:
        m = json.loads(arrays["__manifest__"].tobytes().decode())
        manifest(m)
        arrays["__manifest__"] = np.frombuffer(json.dumps(m).encode(), dtype=np.uint8)
    arrays.update(replace or {})
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def test_newer_format_version(good):
    _rewrite(good, manifest=lambda m: m.update(version=ck.VERSION + 1))
    with pytest.raises(CheckpointError, match="newer torchlight"):
        ck.load(good)


def test_wrong_format_name(good):
    _rewrite(good, manifest=lambda m: m.update(format="something-else"))
    with pytest.raises(CheckpointError, match="not a torchlight checkpoint.*something-else"):
        ck.load(good)


def test_corrupt_manifest_json(good):
    _rewrite(good, replace={"__manifest__": np.frombuffer(b"{not json", dtype=np.uint8)})
    with pytest.raises(CheckpointError, match="manifest is corrupt"):
        ck.load(good)


def test_missing_entry(good):
    _rewrite(good, drop=("a1",))
    with pytest.raises(CheckpointError, match=r"'a1'.*obj\['b'\].*missing"):
        ck.load(good)


def test_entry_shape_disagrees_with_manifest(good):
    _rewrite(good, replace={"a0": np.zeros((2, 2), np.float32)})
    with pytest.raises(CheckpointError, match=r"obj\['w'\].*shape \(64, 64\).*\(2, 2\)"):
        ck.load(good)


def test_unknown_node_type(good):
    _rewrite(good, manifest=lambda m: m["root"]["items"][2].__setitem__(1, {"t": "quaternion"}))
    with pytest.raises(CheckpointError, match="unknown node type 'quaternion'"):
        ck.load(good)


def test_saved_device_and_map_location(good):
    _rewrite(good, manifest=lambda m: m["root"]["items"][0][1].update(device="no-such-device"))
    with pytest.raises(CheckpointError, match=r"obj\['w'\].*'no-such-device'.*map_location='cpu'"):
        ck.load(good)
    assert ck.load(good, map_location="cpu")["w"].device == "cpu"


def test_parameters_come_back_as_parameters(tmp_path):
    ck.save(
        {"p": nn.Parameter(tl.randn(3)), "frozen": nn.Parameter(tl.randn(2), requires_grad=False)},
        tmp_path / "p",
    )
    out = ck.load(tmp_path / "p")
    assert isinstance(out["p"], nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], nn.Parameter) and not out["frozen"].requires_grad


def test_missing_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        ck.load(tmp_path / "nope.ckpt")


def test_checkpoint_error_is_a_torchlight_error():
    assert issubclass(CheckpointError, tl.TorchlightError)


# --- atomic writes -----------------------------------------------------------------------------
def _partial_then_fail(exc):
    real = ck._write_npz

    def writer(f, arrays, compress):
        buf = io.BytesIO()
        real(buf, arrays, compress)
        f.write(buf.getvalue()[: len(buf.getvalue()) // 2])  # half the archive reaches the disk
        f.flush()
        raise exc

    return writer


@pytest.mark.parametrize(
    "exc", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
def test_failure_mid_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch, exc):
    path = tmp_path / "model.ckpt"
    old = {"w": tl.randn(32, 32), "step": 1}
    ck.save(old, path)
    monkeypatch.setattr(ck, "_write_npz", _partial_then_fail(exc))
    with pytest.raises(type(exc)):
        ck.save({"w": tl.randn(32, 32), "step": 2}, path)
    assert os.listdir(tmp_path) == ["model.ckpt"]  # no temp file left behind
    _eq(old, ck.load(path))


def test_failure_on_rename_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "model.ckpt"
    ck.save({"step": 1}, path)

    def broken_replace(src, dst):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(ck.os, "replace", broken_replace)
    with pytest.raises(OSError, match="I/O error"):
        ck.save({"step": 2}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["model.ckpt"]
    assert ck.load(path) == {"step": 1}


def test_save_fsyncs_file_and_directory(tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def spy(fd):
        synced.append(
            os.path.isdir(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else None
        )
        return real(fd)

    monkeypatch.setattr(ck.os, "fsync", spy)
    ck.save({"a": 1}, tmp_path / "c.ckpt")
    assert len(synced) == 2
    if synced[0] is not None:
        assert synced == [False, True]  # the file, then its directory


def test_overwrite_keeps_file_mode(tmp_path):
    path = tmp_path / "m.ckpt"
    ck.save({"a": 1}, path)
    os.chmod(path, 0o640)
    ck.save({"a": 2}, path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert ck.load(path) == {"a": 2}


def test_save_into_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ck.save({"a": 1}, tmp_path / "no" / "such" / "dir.ckpt")


# --- module helpers ----------------------------------------------------------------------------
class _TinyModule:
    """Just the state-dict protocol of nn.Module (keeps this test independent of the layers)."""

    def __init__(self, seed):
        tl.manual_seed(seed)
        self.weight = tl.randn(3, 2, requires_grad=True)
        self.running_mean = tl.zeros(3)

    def state_dict(self):
        return {"weight": self.weight.detach(), "running_mean": self.running_mean.detach()}

    def load_state_dict(self, state, strict=True):
        with tl.no_grad():
            self.weight.copy_(state["weight"])
            self.running_mean.copy_(state["running_mean"])
        return None


def test_save_state_load_state(tmp_path):
    a, b = _TinyModule(0), _TinyModule(1)
    ck.save_state(a, tmp_path / "m.ckpt")
    ck.load_state(b, tmp_path / "m.ckpt")
    np.testing.assert_array_equal(a.weight.to_numpy(), b.weight.to_numpy())


def test_load_state_names_wrong_keys_and_shapes(tmp_path):
    m = _TinyModule(0)
    ck.save({"weight": tl.zeros(2, 2), "extra": tl.zeros(1)}, tmp_path / "m.ckpt")
    with pytest.raises(CheckpointError) as info:
        ck.load_state(m, tmp_path / "m.ckpt")
    msg = str(info.value)
    assert "missing keys: running_mean" in msg and "unexpected keys: extra" in msg
    assert "shape mismatch for weight: the checkpoint has (2, 2), the module has (3, 2)" in msg
    with pytest.raises(CheckpointError, match="shape mismatch for weight"):
        ck.load_state(m, tmp_path / "m.ckpt", strict=False)
    ck.save([1, 2], tmp_path / "l.ckpt")
    with pytest.raises(CheckpointError, match="not hold a module state dict"):
        ck.load_state(m, tmp_path / "l.ckpt")


def test_with_real_nn_modules(tmp_path):
    tl.manual_seed(0)
    a = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    tl.manual_seed(1)
    b = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    ck.save_state(a, tmp_path / "m.ckpt")
    ck.load_state(b, tmp_path / "m.ckpt")
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        np.testing.assert_array_equal(va.to_numpy(), vb.to_numpy())
    with pytest.raises(CheckpointError, match="shape mismatch"):
        ck.load_state(nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3)), tmp_path / "m.ckpt")
