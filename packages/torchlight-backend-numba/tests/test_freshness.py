"""numba's cache is emptied when any source of the backend changed (``_freshness.py``): numba
itself re-validates a cached kernel against its own file only, not the helpers it inlined."""

import pytest

from torchlight.backends.numba import _freshness


class _FakeCache:
    def __init__(self, path):
        self.cache_path = str(path)
        self.flushes = 0

    def flush(self):
        self.flushes += 1


class _FakeDispatcher:
    def __init__(self, path):
        self._cache = _FakeCache(path)


@pytest.fixture
def fresh_process(monkeypatch):
    """A new process's view: no verdicts yet; the digest under the test's control."""
    monkeypatch.setattr(_freshness, "_verdicts", {})
    digest = {"value": "a"}
    monkeypatch.setattr(_freshness, "sources_digest", lambda: digest["value"])
    return digest


def test_flushes_until_the_stamp_matches_the_sources(tmp_path, fresh_process, monkeypatch):
    d1, d2 = _FakeDispatcher(tmp_path), _FakeDispatcher(tmp_path)
    _freshness.refresh(d1)  # no stamp yet: whatever is cached predates this check
    _freshness.refresh(d2)
    assert (d1._cache.flushes, d2._cache.flushes) == (1, 1)
    assert (tmp_path / _freshness.STAMP).read_text() == "a"

    monkeypatch.setattr(_freshness, "_verdicts", {})  # next process, same sources: keep the cache
    d3 = _FakeDispatcher(tmp_path)
    _freshness.refresh(d3)
    assert d3._cache.flushes == 0

    monkeypatch.setattr(_freshness, "_verdicts", {})  # next process, a helper was edited
    fresh_process["value"] = "b"
    d4 = _FakeDispatcher(tmp_path)
    _freshness.refresh(d4)
    assert d4._cache.flushes == 1 and (tmp_path / _freshness.STAMP).read_text() == "b"


def test_uncached_functions_and_unwritable_dirs_are_left_alone(tmp_path, fresh_process):
    _freshness.refresh(object())  # NUMBA_DISABLE_JIT: plain functions have no cache
    missing = _FakeDispatcher(tmp_path / "file-not-dir" / "sub")
    (tmp_path / "file-not-dir").write_text("x")  # makedirs fails: the stamp cannot be written
    _freshness.refresh(missing)
    assert missing._cache.flushes == 1  # still stale in this process: flushed, no crash


def test_the_digest_covers_every_module_and_the_scalar_table(tmp_path, monkeypatch):
    from torchlight.tensor.backend import scalar_ops

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "_kernels.py").write_text("def k(): pass\n")
    (pkg / "_rowops.py").write_text("def helper(): return 1\n")
    table = tmp_path / "scalar_ops.py"
    table.write_text("def sigmoid(x): pass\n")
    monkeypatch.setattr(_freshness, "_HERE", pkg)
    monkeypatch.setattr(scalar_ops, "__file__", str(table))
    before = _freshness.sources_digest()
    assert len(before) == 40 and before == _freshness.sources_digest()
    (pkg / "_rowops.py").write_text("def helper(): return 2\n")  # a helper module edited
    after_helper = _freshness.sources_digest()
    table.write_text("def sigmoid(x): return x\n")  # the shared scalar table edited
    assert len({before, after_helper, _freshness.sources_digest()}) == 3
