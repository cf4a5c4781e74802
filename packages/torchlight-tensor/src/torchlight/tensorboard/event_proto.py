"""Hand-encoded protocol buffer messages of TensorBoard event files (``Event``, ``Summary``).

Only the fields a scalar log needs, with the field numbers of TensorFlow's ``event.proto``,
``summary.proto`` and ``tensor.proto``:

* ``Event``: 1 ``wall_time`` (double), 2 ``step`` (int64), 3 ``file_version`` (string),
  5 ``summary`` (Summary), 7 ``session_log`` (SessionLog)
* ``Summary``: 1 ``value`` (repeated Summary.Value)
* ``Summary.Value``: 1 ``tag`` (string), 2 ``simple_value`` (float), 8 ``tensor``
  (TensorProto), 9 ``metadata`` (SummaryMetadata)
* ``SessionLog``: 1 ``status`` (enum, START = 1)
* ``TensorProto``: 1 ``dtype`` (enum, DT_FLOAT = 1, DT_DOUBLE = 2), 2 ``tensor_shape`` (empty:
  a scalar), 5 ``float_val`` / 6 ``double_val`` (packed)
* ``SummaryMetadata``: 1 ``plugin_data`` (PluginData: 1 ``plugin_name``, 2 ``content``)

A field is a key ``(number << 3) | wire_type`` as a varint followed by its value: wire type 0 a
varint, 1 eight little-endian bytes, 2 a varint length and that many bytes, 5 four bytes.
"""

import struct

__all__ = ["event", "scalar_value", "session_start"]

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_SESSION_START = 1
_DT_FLOAT, _DT_DOUBLE = 1, 2
FILE_VERSION = "brain.Event:2"


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values are written as their 64-bit two's complement
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint((number << 3) | wire_type)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _key(number, _BYTES) + _varint(len(payload)) + payload


def scalar_value(tag: str, value: float, new_style: bool = False, double: bool = False) -> bytes:
    """One ``Summary.Value`` holding a scalar: ``simple_value`` (float32), or with ``new_style``
    a scalar ``TensorProto`` (float32, or float64 with ``double``) tagged for the scalars plugin.

    >>> from torchlight.tensorboard.event_proto import scalar_value
    >>> scalar_value("x", 1.0).hex()  # tag "x", then simple_value 1.0 as a float32
    '0a0178150000803f'
    """
    out = _bytes_field(1, tag.encode("utf-8"))
    if not new_style:
        return out + _key(2, _FIXED32) + struct.pack("<f", value)
    if double:
        dtype, values = _DT_DOUBLE, _bytes_field(6, struct.pack("<d", value))
    else:
        dtype, values = _DT_FLOAT, _bytes_field(5, struct.pack("<f", value))
    tensor = _key(1, _VARINT) + _varint(dtype) + _bytes_field(2, b"") + values
    plugin = _bytes_field(1, b"scalars") + _bytes_field(2, b"")
    return out + _bytes_field(8, tensor) + _bytes_field(9, _bytes_field(1, plugin))


def session_start() -> bytes:
    """A ``SessionLog`` with status START (how a writer marks where a restarted run resumes).

    >>> from torchlight.tensorboard.event_proto import session_start
    >>> session_start().hex()
    '0801'
    """
    return _key(1, _VARINT) + _varint(_SESSION_START)


def event(
    wall_time: float,
    step: int = 0,
    *,
    file_version: str | None = None,
    values: tuple = (),
    session_log: bytes | None = None,
) -> bytes:
    """An encoded ``Event``: the time, the step, and one of a file version, a ``Summary`` made of
    the encoded ``values`` (from :func:`scalar_value`), or a ``SessionLog``.

    >>> from torchlight.tensorboard.event_proto import event
    >>> event(0.0, 3).hex()  # wall_time 0.0 as a double, then step 3
    '0900000000000000001003'
    """
    out = _key(1, _FIXED64) + struct.pack("<d", wall_time) + _key(2, _VARINT) + _varint(step)
    if file_version is not None:
        out += _bytes_field(3, file_version.encode("utf-8"))
    if values:
        out += _bytes_field(5, b"".join(_bytes_field(1, v) for v in values))
    if session_log is not None:
        out += _bytes_field(7, session_log)
    return out
