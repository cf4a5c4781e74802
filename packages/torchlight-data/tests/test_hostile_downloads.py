"""Hostile downloads: zip bombs, entries whose zip directory lies, traversal names, endless
responses. None may fill the disk or write outside the resource's own path."""

import hashlib
import io
import struct
import zipfile

import pytest

from torchlight.data import ChecksumError, DataError
from torchlight.data.datasets import Resource, cache_dir, fetch
from torchlight.data.datasets import resources as fetch_module

CONTENT = b"To be, or not to be\n"
SHA = hashlib.sha256(CONTENT).hexdigest()
MiB = 1 << 20


class Response(io.BytesIO):
    status = 200

    def __init__(self, data, length=True):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))} if length else {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def serve(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCHLIGHT_OFFLINE", raising=False)
    monkeypatch.delenv("TORCHLIGHT_DATA", raising=False)
    monkeypatch.setenv("TORCHLIGHT_CACHE", str(tmp_path / "cache"))

    def install(data, length=True):
        monkeypatch.setattr(
            fetch_module, "urlopen", lambda url, timeout=None: Response(data, length)
        )

    return install


def _zip(members, compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members.items():
            if isinstance(data, int):  # that many zero bytes, streamed
                with zf.open(name, "w", force_zip64=False) as m:
                    for _ in range(data // MiB):
                        m.write(bytes(MiB))
            else:
                zf.writestr(name, data)
    return buf.getvalue()


def _lie_about_size(archive: bytes, size: int) -> bytes:
    """Patch the (single) entry's uncompressed size in its local header and the central directory."""
    data = bytearray(archive)
    local = data.index(b"PK\x03\x04")
    struct.pack_into("<I", data, local + 22, size)
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, size)
    return bytes(data)


RES = Resource(
    "plays/hamlet.txt",
    SHA,
    urls=("http://mirror.invalid/plays.zip",),
    member="hamlet.txt",
    size=len(CONTENT),
)


def _nothing_installed():
    assert not (cache_dir() / RES.path).exists()
    assert not list(cache_dir().rglob("*.part"))


def test_zip_bomb_member_is_refused_from_its_declared_size(serve):
    archive = _zip({"plays/hamlet.txt": 200 * MiB})
    assert len(archive) < MiB
    serve(archive)
    with pytest.raises(ChecksumError, match=r"declares 209715200 bytes.*zip bomb"):
        fetch(RES, progress=False)
    _nothing_installed()


def test_member_inflating_beyond_its_declared_size(serve):
    """The directory claims the published size; the data inflates further. zipfile stops at the
    declared size and the CRC fails: a failed download, nothing installed."""
    serve(_lie_about_size(_zip({"plays/hamlet.txt": 64 * MiB}), len(CONTENT)))
    with pytest.raises(DataError):
        fetch(RES, progress=False)
    _nothing_installed()


def test_traversal_member_name_is_extracted_to_the_resource_path_only(serve, tmp_path):
    serve(_zip({"../../../../evil/hamlet.txt": CONTENT}))
    path = fetch(RES, progress=False)
    assert path == cache_dir() / RES.path and path.read_bytes() == CONTENT
    assert not list(tmp_path.rglob("evil"))


def test_endless_response_is_cut_at_the_published_size(serve):
    plain = Resource(
        "poems/hamlet.txt", SHA, urls=("http://mirror.invalid/hamlet.txt",), size=len(CONTENT)
    )
    serve(CONTENT * 1000, length=False)
    with pytest.raises(ChecksumError, match="sends more than the 20 bytes"):
        fetch(plain, progress=False)
    assert not (cache_dir() / plain.path).exists()


def test_without_verify_a_different_size_is_allowed(serve):
    other = b"Another release of Hamlet\n"
    serve(_zip({"plays/hamlet.txt": other}))
    assert fetch(RES, progress=False, verify=False).read_bytes() == other
