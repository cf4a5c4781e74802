"""Hypothesis profiles and shared helpers for torchlight-tensor's tests.

conftest files only reach their own directory and the repo's top level holds none, so each
distribution registers the shared profiles itself. ``ci`` (chosen when ``CI`` is set, or with
``TORCHLIGHT_HYPOTHESIS_PROFILE=ci``) has no deadline, because a loaded 2-core runner makes
timings meaningless, and prints the reproduction blob of a failing example so it can be replayed
locally. ``dev`` runs fewer examples for a quick local loop.
"""

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    print_blob=True,
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=20,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_profile = os.environ.get("TORCHLIGHT_HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI") else "dev"
)
settings.load_profile(_profile)


@pytest.fixture(autouse=True)
def _isolate_global_state(monkeypatch):
    """Each test starts on the default device and dtype with grad mode on, whatever a failing
    test left."""
    import torchlight as tl

    monkeypatch.delenv("TORCHLIGHT_DEVICE", raising=False)
    tl.set_default_device(None)
    tl.set_default_dtype(tl.float32)
    tl.set_grad_enabled(True)
    yield
    tl.set_default_device(None)
    tl.set_default_dtype(tl.float32)
    tl.set_grad_enabled(True)


# the test modules share strategies and oracles from tltensor_helpers.py, next to this file
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def fresh_registry(monkeypatch):
    """A backend registry with nothing discovered yet, restored after the test.

    The already-loaded numpy backend object is kept, so tensors made elsewhere stay compatible.
    Tests register fake plugins here without leaking them into other tests.
    """
    from torchlight.tensor.backend import registry

    numpy_backend = registry.get_backend("numpy")
    monkeypatch.setattr(registry, "_specs", {})
    monkeypatch.setattr(registry, "_broken", {})
    monkeypatch.setattr(registry, "_loaded", {"numpy": numpy_backend})
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setattr(registry, "_default", None)
    monkeypatch.setattr(registry, "_default_backend", None)
    monkeypatch.setattr(registry, "_cpu", None)
    return registry
