"""Shared fixtures and hypothesis profiles of the torchlight-data tests.

* Every test runs with its own empty cache (``TORCHLIGHT_CACHE``) and with downloads disabled
  (``TORCHLIGHT_OFFLINE=1``), so no test reads or writes ``~/.cache`` or touches the network by
  accident; the download tests switch downloads back on against a local server.
* ``data_root`` is the real shared data: ``$TORCHLIGHT_DATA`` if set (CI: ``../shared/data``,
  relative to the repository root), else ``../shared/data`` next to the repository. Tests that
  need it skip, saying where they looked, only when the directory is absent.
"""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The repository's shared hypothesis profiles (each distribution registers them: conftest files
# only reach their own directory). ``ci`` has no deadline (a loaded 2-core runner makes timings
# meaningless) and prints the blob that replays a failure; ``dev`` is a quicker local loop.
settings.register_profile(
    "ci",
    deadline=None,
    print_blob=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=20,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(
    os.environ.get("TORCHLIGHT_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)

REPO_ROOT = Path(__file__).resolve().parents[3]  # tests -> torchlight-data -> packages -> repo
HELPERS = Path(__file__).resolve().parent / "helpers"


def _shared_data_dir() -> Path:
    env = os.environ.get("TORCHLIGHT_DATA")
    if not env:
        return (REPO_ROOT / ".." / "shared" / "data").resolve()
    path = Path(env).expanduser()
    if not path.is_absolute() and not path.is_dir():
        path = REPO_ROOT / path  # CI gives it relative to the repository root
    return path.resolve()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TORCHLIGHT_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("TORCHLIGHT_OFFLINE", "1")


@pytest.fixture
def data_root(monkeypatch) -> Path:
    path = _shared_data_dir()
    if not path.is_dir():
        pytest.skip(
            f"the shared data directory {path} does not exist; set TORCHLIGHT_DATA to the "
            "folder holding tinyshakespeare/, sentiment/ and eng-fra/"
        )
    monkeypatch.setenv("TORCHLIGHT_DATA", str(path))
    return path


@pytest.fixture
def helpers(monkeypatch):
    """The module of picklable datasets for worker tests (spawned workers import it by name:
    they inherit ``sys.path`` from the parent, so prepending the helpers folder is enough)."""
    monkeypatch.syspath_prepend(str(HELPERS))
    import tldata_helpers

    return tldata_helpers
