"""Resolution order, checksum verification and downloads (against a local HTTP server only)."""

import hashlib
import http.server
import io
import threading
import urllib.error
import zipfile

import pytest

from torchlight.data import ChecksumError, DataNotFoundError
from torchlight.data.datasets import Resource, cache_dir, checkout_data_root, fetch, sha256_file
from torchlight.data.datasets import resources as fetch_module

CONTENT = b"To be, or not to be\n"
SHA = hashlib.sha256(CONTENT).hexdigest()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


class Server:
    """A tiny HTTP server on 127.0.0.1 serving ``routes`` (path -> bytes), counting requests."""

    def __init__(self, routes):
        self.routes = routes
        self.hits: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.hits.append(self.path)
                body = server.routes.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def url(self, path):
        return f"http://127.0.0.1:{self.httpd.server_port}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server({})
    yield s
    s.close()


@pytest.fixture
def online(monkeypatch):
    monkeypatch.delenv("TORCHLIGHT_OFFLINE", raising=False)
    monkeypatch.delenv("TORCHLIGHT_DATA", raising=False)


def put(root, rel, data=CONTENT):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


RES = Resource("poems/hamlet.txt", SHA, urls=("http://127.0.0.1:9/unused",))


def test_root_beats_env_beats_cache(tmp_path, monkeypatch):
    root, env = tmp_path / "root", tmp_path / "env"
    put(cache_dir(), RES.path)
    assert fetch(RES) == cache_dir() / RES.path
    put(env, RES.path)
    monkeypatch.setenv("TORCHLIGHT_DATA", str(env))
    assert fetch(RES) == env / RES.path
    put(root, RES.path)
    assert fetch(RES, root=root) == root / RES.path
    assert fetch(RES, root=tmp_path / "elsewhere") == env / RES.path  # falls through the chain


def test_checkout_data_root_env_then_sibling_shared_data(tmp_path, monkeypatch):
    """$TORCHLIGHT_DATA first (None: fetch reads it), then <checkout>/../shared/data, else None."""
    checkout = tmp_path / "repo"
    script = checkout / "projects" / "demo" / "train.py"
    put(checkout, "projects/demo/train.py", b"")
    (checkout / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    monkeypatch.delenv("TORCHLIGHT_DATA", raising=False)
    assert checkout_data_root(script) is None  # no shared/data beside the checkout
    shared = tmp_path / "shared" / "data"
    put(shared, RES.path)
    assert checkout_data_root(script) == shared
    assert checkout_data_root(script.parent) == shared
    assert fetch(RES, root=checkout_data_root(script)) == shared / RES.path
    monkeypatch.setenv("TORCHLIGHT_DATA", str(tmp_path / "env"))
    assert checkout_data_root(script) is None
    monkeypatch.delenv("TORCHLIGHT_DATA")
    assert checkout_data_root(tmp_path / "not-a-checkout" / "x.py") is None  # no .git above


def test_cache_dir_default_and_override(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHLIGHT_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("TORCHLIGHT_CACHE")
    assert cache_dir().parts[-2:] == (".cache", "torchlight")


def test_bad_checksum_is_reported_not_used(tmp_path):
    path = put(tmp_path, RES.path, b"To be, or not to be?\n")
    with pytest.raises(ChecksumError) as info:
        fetch(RES, root=tmp_path)
    msg = str(info.value)
    assert str(path) in msg and SHA in msg and sha256_file(path) in msg and "verify=False" in msg
    assert isinstance(info.value, ValueError)
    assert fetch(RES, root=tmp_path, verify=False) == path


def test_missing_offline_names_the_file_and_how_to_provide_it(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        fetch(RES, root=tmp_path)
    msg = str(info.value)
    assert "poems/hamlet.txt" in msg and "TORCHLIGHT_DATA" in msg and "TORCHLIGHT_OFFLINE" in msg
    assert "http://127.0.0.1:9/unused" in msg and SHA in msg and str(tmp_path) in msg
    assert isinstance(info.value, FileNotFoundError)


def test_download_false(tmp_path, online):
    with pytest.raises(DataNotFoundError, match="download=False"):
        fetch(RES, download=False)


def test_no_network(online, monkeypatch):
    def refuse(url, timeout=None):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(fetch_module, "urlopen", refuse)
    with pytest.raises(DataNotFoundError) as info:
        fetch(RES, progress=False)
    assert "Temporary failure in name resolution" in str(info.value)
    assert not (cache_dir() / RES.path).exists()


def test_download_into_cache_then_reuse(server, online):
    server.routes["/hamlet.txt"] = CONTENT
    res = Resource(
        "poems/hamlet.txt", SHA, urls=(server.url("/missing"), server.url("/hamlet.txt"))
    )
    path = fetch(res, progress=True)  # first mirror 404s, second works; the bar must not break
    assert path == cache_dir() / res.path and path.read_bytes() == CONTENT
    assert server.hits == ["/missing", "/hamlet.txt"]
    assert fetch(res) == path and len(server.hits) == 2  # cached: no second download
    assert not list(path.parent.glob("*.part"))


def test_download_with_wrong_checksum_saves_nothing(server, online):
    server.routes["/hamlet.txt"] = b"tampered"
    res = Resource("poems/hamlet.txt", SHA, urls=(server.url("/hamlet.txt"),))
    with pytest.raises(ChecksumError, match="nothing was saved"):
        fetch(res, progress=False)
    assert not (cache_dir() / res.path).exists()


def test_download_zip_member_and_sibling_from_the_same_archive(server, online):
    other = b"Get thee to a nunnery\n"
    server.routes["/plays.zip"] = zip_bytes(
        {
            "__MACOSX/plays/._hamlet.txt": b"junk",
            "plays/hamlet.txt": CONTENT,
            "plays/ophelia.txt": other,
        }
    )
    hamlet = Resource(
        "plays/hamlet.txt", SHA, urls=(server.url("/plays.zip"),), member="hamlet.txt"
    )
    ophelia = Resource(
        "plays/ophelia.txt",
        hashlib.sha256(other).hexdigest(),
        urls=(server.url("/plays.zip"),),
        member="ophelia.txt",
    )
    assert fetch(hamlet, progress=False).read_bytes() == CONTENT
    assert fetch(ophelia, progress=False).read_bytes() == other
    assert server.hits == ["/plays.zip"]  # one download serves both members


def test_zip_without_the_member(server, online):
    server.routes["/plays.zip"] = zip_bytes({"plays/other.txt": b"x"})
    res = Resource("plays/hamlet.txt", SHA, urls=(server.url("/plays.zip"),), member="hamlet.txt")
    with pytest.raises(DataNotFoundError, match="no entry named 'hamlet.txt'"):
        fetch(res, progress=False)
    assert not list((cache_dir() / "downloads").glob("*.zip"))  # the useless archive is dropped


def test_truncated_download_is_a_failure(online, monkeypatch):
    class Truncated(io.BytesIO):
        headers = {"Content-Length": str(len(CONTENT))}
        status = 200

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(fetch_module, "urlopen", lambda url, timeout=None: Truncated(CONTENT[:5]))
    with pytest.raises(DataNotFoundError, match="closed after 5 of"):
        fetch(RES, progress=False)
    assert not (cache_dir() / RES.path).exists()


def test_resource_paths_stay_inside_the_root():
    with pytest.raises(ValueError):
        Resource("../escape.txt", SHA)
    with pytest.raises(ValueError):
        Resource("/abs.txt", SHA)
