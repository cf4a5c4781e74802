"""Fixtures shared by the numba backend's tests."""

import pytest

from torchlight.backends.numba import routing


@pytest.fixture(autouse=True)
def fresh_routes():
    """Forget remembered routing decisions around every test: tests move the table's
    thresholds (``monkeypatch.setattr(routing, "TILE_MIN", ...)``), which a program never does,
    and a decision remembered under other thresholds would hide the one under test."""
    routing.clear_routes()
    yield
    routing.clear_routes()
