"""Fixtures shared by the numba backend's tests."""

import pytest

from torchlight.backends.numba import _jit, routing


@pytest.fixture(autouse=True)
def fresh_routes():
    """Forget remembered routing decisions around every test: tests move the table's
    thresholds (``monkeypatch.setattr(routing, "TILE_MIN", ...)``), which a program never does,
    and a decision remembered under other thresholds would hide the one under test."""
    routing.clear_routes()
    yield
    routing.clear_routes()


@pytest.fixture(params=["serial", "parallel"])
def path(request, monkeypatch):
    """Run the test once on each compilation of the kernels (``_jit.Kernel``): with one numba
    thread ``pick()`` never takes the parallel copy, so this forces each."""
    attr = "par" if request.param == "parallel" else "ser"
    monkeypatch.setattr(_jit.Kernel, "pick", lambda self, work, minimum=None: getattr(self, attr))
    return request.param
