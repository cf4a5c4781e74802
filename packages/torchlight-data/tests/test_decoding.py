"""Corpus files that are not valid UTF-8: a DecodingError naming the file, the byte offset and
the options that read it anyway; ``encoding=`` and ``errors=`` do what :meth:`bytes.decode` does."""

import pickle

import pytest

from torchlight import TorchlightError
from torchlight.data import DataError, DecodingError
from torchlight.data.datasets import (
    RESOURCES,
    decode_file,
    sentiment_sentences,
    tatoeba_eng_fra,
    tiny_shakespeare,
)

BAD = b"First line\nCaf\xe9 au lait\n"  # latin-1 bytes: 0xE9 is not valid UTF-8 here
OFFSET = BAD.index(b"\xe9")


def _write(root, key, data):
    path = root / RESOURCES[key].path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "key, load",
    [
        ("tinyshakespeare", lambda root, **kw: tiny_shakespeare(root=root, verify=False, **kw)),
        ("eng-fra", lambda root, **kw: tatoeba_eng_fra(root=root, verify=False, **kw)),
        (
            "sentiment/amazon",
            lambda root, **kw: sentiment_sentences(
                root=root, sources=("amazon",), verify=False, **kw
            ),
        ),
    ],
)
def test_invalid_utf8_names_file_offset_and_options(tmp_path, key, load):
    data = BAD if key == "tinyshakespeare" else b"ok\t1\nCaf\xe9 au lait\t0\n"
    path = _write(tmp_path, key, data)
    offset = data.index(b"\xe9")
    with pytest.raises(DecodingError) as info:
        load(tmp_path)
    exc = info.value
    msg = str(exc)
    assert str(path) in msg and f"byte offset {offset}" in msg and "line 2" in msg
    assert "errors='replace'" in msg and "encoding='latin-1'" in msg
    assert exc.offset == offset and exc.path == path
    # still what code written for bytes.decode catches
    assert isinstance(exc, UnicodeDecodeError) and isinstance(exc, DataError)
    assert isinstance(exc, TorchlightError) and exc.encoding == "utf-8"
    assert exc.object[exc.start : exc.end] == b"\xe9"


def test_errors_and_encoding_options(tmp_path):
    _write(tmp_path, "tinyshakespeare", BAD)
    assert (
        tiny_shakespeare(root=tmp_path, verify=False, errors="replace")
        == "First line\nCaf\ufffd au lait\n"
    )
    assert (
        tiny_shakespeare(root=tmp_path, verify=False, errors="ignore")
        == "First line\nCaf au lait\n"
    )
    assert (
        tiny_shakespeare(root=tmp_path, verify=False, encoding="latin-1")
        == "First line\nCafé au lait\n"
    )


def test_unknown_encoding_or_handler(tmp_path):
    _write(tmp_path, "tinyshakespeare", BAD)
    with pytest.raises(DataError, match="no-such-codec"):
        tiny_shakespeare(root=tmp_path, verify=False, encoding="no-such-codec")
    with pytest.raises(DataError, match="errors='bogus'"):
        tiny_shakespeare(root=tmp_path, verify=False, errors="bogus")


@pytest.mark.parametrize(
    "data, offset, line",
    [
        (b"\xff", 0, 1),  # invalid start byte
        (b"abc\n\n\xc3", 5, 3),  # truncated multi-byte sequence at the end
        (b"a\xed\xa0\x80z", 1, 1),  # an encoded surrogate
    ],
)
def test_decode_file_positions(data, offset, line):
    with pytest.raises(DecodingError) as info:
        decode_file(data, "corpus.txt")
    assert info.value.offset == offset
    assert f"byte offset {offset} (line {line})" in str(info.value)
    assert data.decode("utf-8", "replace") == decode_file(data, "corpus.txt", errors="replace")


def test_decoding_error_pickles(tmp_path):
    """A DataLoader worker sends its exception to the main process pickled."""
    with pytest.raises(DecodingError) as info:
        decode_file(BAD, tmp_path / "c.txt")
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is DecodingError and str(back) == str(info.value)
    assert back.offset == OFFSET and back.object == info.value.object
