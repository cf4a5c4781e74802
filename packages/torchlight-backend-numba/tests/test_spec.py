"""The entry point is cheap (no numba import) and ``is_available()`` never raises."""

import subprocess
import sys

import torchlight as tl
from torchlight.backends.numba import spec as spec_module


def test_entry_point_does_not_import_numba():
    code = (
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "ep = [e for e in entry_points(group='torchlight.backends') if e.name == 'numba'][0]\n"
        "spec = ep.load()\n"
        "assert spec.is_available()\n"
        "import torchlight\n"
        "from torchlight.tensor.backend.registry import available_backends\n"
        "assert 'numba' in available_backends()\n"
        "assert 'numba' not in sys.modules, 'importing the spec imported numba'\n"
        "torchlight.zeros(2, device='numba') + 1\n"
        "assert 'numba' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_is_available_never_raises(monkeypatch):
    def boom(name):
        raise RuntimeError("broken import machinery")

    monkeypatch.setattr(spec_module.util, "find_spec", boom)
    spec = spec_module.SPEC
    assert spec.is_available() is False
    assert "broken import machinery" in spec.why_unavailable()


def test_is_available_reports_old_numba(monkeypatch):
    monkeypatch.setattr(spec_module.metadata, "version", lambda name: "0.58.1")
    assert spec_module.SPEC.is_available() is False
    assert "0.58.1" in spec_module.SPEC.why_unavailable()


def test_device_name_and_roundtrip_shares_numpy_storage():
    x = tl.arange(12, dtype=tl.float32).reshape(3, 4)
    y = x.to("numba")
    assert y.device == "numba"
    assert isinstance(y._td.storage, __import__("numpy").ndarray)
    assert y.to("cpu").tolist() == x.tolist()
