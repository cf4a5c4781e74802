"""torchlight.tensorboard.SummaryWriter: the event files it writes, decoded by a reader
written here (TFRecord framing checked with a bitwise CRC-32C, protocol buffers parsed field by
field), and by TensorBoard's own EventAccumulator when the tensorboard package is installed."""

import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
from torchlight.compat.aliases import resolve
from torchlight.tensorboard import SummaryWriter
from torchlight.tensorboard.records import crc32c, masked_crc32c


def bitwise_crc32c(data: bytes) -> int:
    """CRC-32C one bit at a time (no table), the independent oracle."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """The data of every TFRecord in ``path``, both checksums verified."""
    blob = open(path, "rb").read()
    records, at = [], 0
    while at < len(blob):
        header = blob[at : at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", blob[at + 8 : at + 12])
        assert header_crc == masked(bitwise_crc32c(header))
        data = blob[at + 12 : at + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[at + 12 + length : at + 16 + length])
        assert data_crc == masked(bitwise_crc32c(data))
        records.append(data)
        at += 16 + length
    return records


def varint(buf, at):
    value = shift = 0
    while True:
        byte = buf[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if not byte & 0x80:
            return value, at


def fields(buf):
    """{field number: [raw values]} of one protocol buffer message (wire types 0, 1, 2, 5)."""
    out, at = {}, 0
    while at < len(buf):
        key, at = varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(buf, at)
        elif wire == 1:
            value, at = buf[at : at + 8], at + 8
        elif wire == 2:
            length, at = varint(buf, at)
            value, at = buf[at : at + length], at + length
        elif wire == 5:
            value, at = buf[at : at + 4], at + 4
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def signed64(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def decode_event(data):
    """(wall_time, step, what): what is ('version', str), ('scalars', [(tag, value)]),
    ('tensor', tag, dtype, value) or ('session', status)."""
    f = fields(data)
    wall_time = struct.unpack("<d", f[1][0])[0]
    step = signed64(f.get(2, [0])[0])
    if 3 in f:
        return wall_time, step, ("version", f[3][0].decode())
    if 7 in f:
        return wall_time, step, ("session", fields(f[7][0])[1][0])
    values = [fields(v) for v in fields(f[5][0])[1]]
    if all(2 in v for v in values):
        return (
            wall_time,
            step,
            ("scalars", [(v[1][0].decode(), struct.unpack("<f", v[2][0])[0]) for v in values]),
        )
    (v,) = values
    tensor = fields(v[8][0])
    dtype = tensor[1][0]
    raw = tensor[6][0] if dtype == 2 else tensor[5][0]
    value = struct.unpack("<d" if dtype == 2 else "<f", raw)[0]
    plugin = fields(fields(v[9][0])[1][0])
    assert plugin[1][0] == b"scalars"
    return wall_time, step, ("tensor", v[1][0].decode(), dtype, value)


def events_in(folder):
    (name,) = os.listdir(folder)
    assert name.startswith("events.out.tfevents.")
    return [decode_event(r) for r in read_records(os.path.join(folder, name))]


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283
    assert masked_crc32c(b"123456789") == masked(0xE3069283)


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=64))
def test_crc32c_agrees_with_bitwise(data):
    assert crc32c(data) == bitwise_crc32c(data)
    assert masked_crc32c(data) == masked(bitwise_crc32c(data))


def test_scalars_round_trip(tmp_path):
    values = [2.5, 1.0 / 3.0, -7.25, 1e-8]
    with SummaryWriter(log_dir=tmp_path) as writer:
        for step, value in enumerate(values):
            writer.add_scalar("Loss/train", value, step * 10)
        writer.add_scalar("Loss/test", tl.tensor(0.75), 40, walltime=123.5)
        writer.add_scalar("count", np.int64(3), 41)
    events = events_in(tmp_path)
    assert events[0][2] == ("version", "brain.Event:2")
    for (_, step, what), (i, value) in zip(events[1:5], enumerate(values), strict=True):
        assert step == i * 10
        assert what == ("scalars", [("Loss/train", float(np.float32(value)))])
    assert events[5] == (123.5, 40, ("scalars", [("Loss/test", 0.75)]))
    assert events[6][1:] == (41, ("scalars", [("count", 3.0)]))
    walls = [e[0] for e in events[:5]]
    assert walls == sorted(walls)


def test_new_style_scalars(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("lr", 3e-4, 7, new_style=True, double_precision=True)
        writer.add_scalar("lr32", 3e-4, 8, new_style=True)
    _, double, single = events_in(tmp_path)
    assert double[1:] == (7, ("tensor", "lr", 2, 3e-4))
    assert single[1:] == (8, ("tensor", "lr32", 1, float(np.float32(3e-4))))


def test_default_step_negative_step_and_purge_step(tmp_path):
    with SummaryWriter(tmp_path, purge_step=5) as writer:
        writer.add_scalar("a", 1.0)
        writer.add_scalar("b", 2.0, -1)
    events = events_in(tmp_path)
    assert events[1][1:] == (5, ("session", 1))
    assert events[2][1] == 0 and events[3][1] == -1


def test_events_wait_for_max_queue_or_flush(tmp_path):
    writer = SummaryWriter(tmp_path, max_queue=3, flush_secs=3600, filename_suffix=".x")
    assert writer.file_name.endswith(".x") and writer.get_logdir() == str(tmp_path)
    writer.add_scalar("a", 1.0, 1)
    assert len(events_in(tmp_path)) == 1  # only the file_version event is on disk
    writer.add_scalar("a", 2.0, 2)
    writer.add_scalar("a", 3.0, 3)  # the third pending event fills the queue
    assert len(events_in(tmp_path)) == 4
    writer.add_scalar("a", 4.0, 4)
    writer.flush()
    assert len(events_in(tmp_path)) == 5
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed SummaryWriter"):
        writer.add_scalar("a", 5.0, 5)


def test_default_log_dir_is_under_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as writer:
        writer.add_scalar("x", 1.0, 0)
    (run,) = os.listdir(tmp_path / "runs")
    assert run.endswith("_lr0.1")
    assert len(events_in(tmp_path / "runs" / run)) == 2


def test_torch_utils_tensorboard_is_aliased():
    assert resolve("torch.utils.tensorboard") == "torchlight.tensorboard"


def test_tensorboard_reads_the_file(tmp_path):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with SummaryWriter(tmp_path) as writer:
        for step in range(4):
            writer.add_scalar("Loss/train", 1.0 / (step + 1), step)
    reader = accumulator.EventAccumulator(str(tmp_path))
    reader.Reload()
    assert reader.Tags()["scalars"] == ["Loss/train"]
    got = [(e.step, e.value) for e in reader.Scalars("Loss/train")]
    assert got == [(s, float(np.float32(1.0 / (s + 1)))) for s in range(4)]
