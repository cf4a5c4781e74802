"""TFRecord framing, the container format of TensorBoard event files.

Each record is ``length`` (uint64, little-endian), ``masked_crc32c(length bytes)`` (uint32),
the ``data`` bytes, then ``masked_crc32c(data)`` (uint32). The checksum is CRC-32C (the
Castagnoli polynomial, reflected form ``0x82F63B78``), masked as TensorFlow does so that a CRC of
data that itself holds CRCs is not trivially zero: ``((crc >> 15) | (crc << 17)) + 0xA282EAD8``
modulo 2**32.
"""

import struct

__all__ = ["crc32c", "masked_crc32c", "encode_record"]

_POLYNOMIAL = 0x82F63B78  # CRC-32C (Castagnoli), bit-reflected
_MASK_DELTA = 0xA282EAD8


def _table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLYNOMIAL if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _table()


def crc32c(data: bytes) -> int:
    """The CRC-32C checksum of ``data`` (initial value and final XOR ``0xFFFFFFFF``).

    >>> from torchlight.tensorboard.records import crc32c
    >>> hex(crc32c(b"123456789"))  # the standard check value
    '0xe3069283'
    """
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TensorFlow's masked CRC-32C of ``data``: the CRC rotated right by 15 bits plus a constant.

    >>> from torchlight.tensorboard.records import masked_crc32c
    >>> hex(masked_crc32c(b""))
    '0xa282ead8'
    """
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def encode_record(data: bytes) -> bytes:
    """``data`` framed as one TFRecord: length, its masked CRC, the data, the data's masked CRC.

    >>> from torchlight.tensorboard.records import encode_record
    >>> record = encode_record(b"abc")
    >>> len(record), record[12:15]
    (19, b'abc')
    """
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )
