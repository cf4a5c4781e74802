"""Backend discovery through the ``torchlight.backends`` entry-point group, lazy loading, broken
plugins, and device selection (explicit ``device=`` → ``set_default_device`` →
``$TORCHLIGHT_DEVICE`` → ``cpu``).

Tests that register fake plugins use the ``fresh_registry`` fixture (conftest.py), which gives
them an empty registry and restores the real one afterwards.
"""

import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.backend import API_VERSION, Backend, BackendSpec, backend_status
from torchlight.tensor.backend.numpy import SPEC, NumpyBackend


class FakeBackend(NumpyBackend):
    """A numpy backend under another name: a stand-in for a third-party plugin."""

    def __init__(self, name="fake"):
        self.name = name
        self.device = name


class FakeEntryPoint:
    """Duck-typed ``importlib.metadata.EntryPoint`` whose ``load`` runs a given function."""

    def __init__(self, name, load, value="fake_plugin:SPEC"):
        self.name, self._load, self.value, self.group = name, load, value, "torchlight.backends"

    def load(self):
        return self._load()


def _use_entry_points(monkeypatch, registry, extra):
    """Discovery sees the real entry points plus ``extra``."""
    real = list(entry_points(group="torchlight.backends"))
    monkeypatch.setattr(registry, "entry_points", lambda group: real + list(extra))


# --- the numpy backend is a plugin like any other -------------------------------------------------


def test_numpy_backend_is_registered_through_the_entry_point_group():
    eps = {ep.name: ep for ep in entry_points(group="torchlight.backends")}
    assert "numpy" in eps, f"no 'numpy' entry point in group torchlight.backends: {sorted(eps)}"
    assert eps["numpy"].value == "torchlight.tensor.backend.numpy:SPEC"
    spec = eps["numpy"].load()
    assert spec is SPEC and isinstance(spec, BackendSpec)
    assert spec.name == "numpy" and spec.api_version == API_VERSION and spec.is_available()


def test_discovery_loads_numpy_from_the_entry_point(fresh_registry, monkeypatch):
    calls = []
    real = list(entry_points(group="torchlight.backends"))

    def spy(group):
        calls.append(group)
        return real

    monkeypatch.setattr(fresh_registry, "entry_points", spy)
    fresh_registry._loaded.clear()
    backend = tl.get_backend("numpy")
    assert calls == ["torchlight.backends"]
    assert fresh_registry._specs["numpy"] is SPEC
    assert isinstance(backend, NumpyBackend) and backend.name == "numpy"
    assert tl.get_backend("cpu") is backend  # "cpu" is an alias of the numpy backend
    assert "numpy" in tl.available_backends()


def test_numpy_backend_satisfies_the_protocol():
    b = tl.get_backend("cpu")
    assert isinstance(b, Backend)
    assert b.API_VERSION == API_VERSION
    assert {"softmax", "layernorm"} <= set(b.capabilities)
    assert tl.zeros(1).backend is b and tl.zeros(1).device == "cpu"


def test_importing_torchlight_loads_no_backend():
    code = (
        "import sys, torchlight\n"
        "from torchlight.tensor.backend import registry\n"
        "assert not registry._loaded, registry._loaded\n"
        "assert 'numba' not in sys.modules, 'a heavy backend was imported by import torchlight'\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


# --- plugins: found, lazy, broken ---------------------------------------------------------------


def test_a_plugin_entry_point_is_discovered_and_loaded_lazily(fresh_registry, monkeypatch):
    loads = []

    def load_backend():
        loads.append(1)
        return FakeBackend("plug")

    spec = BackendSpec("plug", load_backend)
    _use_entry_points(monkeypatch, fresh_registry, [FakeEntryPoint("plug", lambda: spec)])
    assert "plug" in tl.available_backends()
    assert loads == []  # discovering is cheap: load() has not run
    x = tl.ones(3, device="plug")
    assert loads == [1] and x.device == "plug"
    tl.ones(2, device="plug")
    assert loads == [1]  # loaded once
    assert ("plug", "available", "") in backend_status()


def test_a_broken_entry_point_only_errors_when_asked_for(fresh_registry, monkeypatch):
    real_broken = EntryPoint(
        name="brokenplug", value="torchlight_no_such_module_xyz:SPEC", group="torchlight.backends"
    )

    def boom():
        raise RuntimeError("plugin exploded at import")

    _use_entry_points(monkeypatch, fresh_registry, [real_broken, FakeEntryPoint("boomplug", boom)])
    # everything else keeps working
    assert tl.ones(2).device == "cpu"
    avail = tl.available_backends()
    assert "numpy" in avail and "brokenplug" not in avail and "boomplug" not in avail
    status = {name: (state, why) for name, state, why in backend_status()}
    assert (
        status["brokenplug"][0] == "broken"
        and "torchlight_no_such_module_xyz" in status["brokenplug"][1]
    )
    assert status["boomplug"][0] == "broken" and "exploded" in status["boomplug"][1]
    with pytest.raises(tl.BackendError, match="ModuleNotFoundError"):
        tl.zeros(1, device="brokenplug")
    with pytest.raises(tl.BackendError, match="exploded"):
        tl.get_backend("boomplug")
    # the error for an unknown name lists the broken ones too
    with pytest.raises(tl.BackendError, match=r"brokenplug \(broken\)"):
        tl.get_backend("nope")


def test_a_spec_whose_load_raises_is_reported_when_asked_for(fresh_registry):
    def bad_load():
        raise ImportError("libfoo.so: cannot open shared object file")

    tl.register_backend("badload", BackendSpec("badload", bad_load))
    assert tl.ones(1).device == "cpu"
    with pytest.raises(tl.BackendError, match="libfoo"):
        tl.ones(1, device="badload")
    # recorded: later requests and the status report say why
    with pytest.raises(tl.BackendError, match="libfoo"):
        tl.get_backend("badload")
    assert any(n == "badload" and s == "broken" and "libfoo" in w for n, s, w in backend_status())


def test_an_unavailable_backend_raises_device_unavailable_with_the_reason(fresh_registry):
    tl.register_backend(
        "gpuish",
        BackendSpec(
            "gpuish",
            lambda: FakeBackend("gpuish"),
            available=lambda: (False, "no CUDA driver found"),
        ),
    )
    assert "gpuish" not in tl.available_backends()
    with pytest.raises(tl.DeviceUnavailableError, match="no CUDA driver found") as info:
        tl.zeros(1, device="gpuish")
    assert "numpy (available)" in str(info.value)
    with pytest.raises(tl.DeviceUnavailableError):
        tl.set_default_device("gpuish")  # validated immediately, never a silent fallback
    assert tl.zeros(1).device == "cpu"


def test_is_available_never_raises():
    def explode():
        raise OSError("driver probe crashed")

    spec = BackendSpec("x", lambda: None, available=explode)
    assert spec.is_available() is False
    assert "driver probe crashed" in spec.why_unavailable()


def test_api_version_mismatch_is_refused(fresh_registry):
    tl.register_backend(
        "old", BackendSpec("old", lambda: FakeBackend("old"), api_version=API_VERSION + 1)
    )
    with pytest.raises(tl.BackendError, match="API version"):
        tl.get_backend("old")


# --- register_backend / set_default_device -----------------------------------------------------


def test_register_backend_with_an_object_or_a_spec(fresh_registry):
    obj = FakeBackend("objbk")
    tl.register_backend("objbk", obj)
    assert tl.get_backend("objbk") is obj
    tl.register_backend("specbk", BackendSpec("specbk", lambda: FakeBackend("specbk")))
    assert tl.get_backend("specbk").name == "specbk"
    assert {"objbk", "specbk"} <= set(tl.available_backends())
    # re-registering replaces the loaded instance
    obj2 = FakeBackend("objbk")
    tl.register_backend("objbk", obj2)
    assert tl.get_backend("objbk") is obj2


def test_set_default_device_and_precedence(fresh_registry, monkeypatch):
    tl.register_backend("fake", FakeBackend("fake"))
    tl.register_backend("envdev", FakeBackend("envdev"))
    assert tl.get_default_device() == "cpu"
    monkeypatch.setenv("TORCHLIGHT_DEVICE", "envdev")
    tl.set_default_device(None)
    assert tl.get_default_device() == "envdev"
    assert tl.zeros(1).device == "envdev"  # $TORCHLIGHT_DEVICE beats the cpu default
    tl.set_default_device("fake")
    assert tl.get_default_device() == "fake"
    for t in (
        tl.zeros(2),
        tl.ones(2),
        tl.tensor([1.0]),
        tl.arange(3),
        tl.rand(2),
        tl.randn(2),
        tl.full((2,), 1.0),
        tl.eye(2),
        tl.linspace(0, 1, 3),
        tl.empty(2),
        tl.randint(0, 3, (2,)),
    ):
        assert t.device == "fake"  # set_default_device beats the environment
    assert tl.zeros(1, device="numpy").device == "cpu"  # an explicit device beats both
    assert tl.zeros_like(tl.zeros(1, device="numpy")).device == "cpu"  # *_like follows its input
    tl.set_default_device("cpu")
    assert tl.zeros(1).device == "cpu"
    tl.set_default_device(None)
    assert tl.zeros(1).device == "envdev"


class DeviceMemoryBackend(FakeBackend):
    """A fake plugin whose storage is not host memory (as a GPU's is not)."""

    capabilities = FakeBackend.capabilities - {"host_memory"}


def test_cpu_names_the_chosen_host_backend(fresh_registry, monkeypatch):
    """ "cpu" is the default device when that keeps its data in host memory (TORCHLIGHT_DEVICE=
    numba: a PyTorch program's .to("cpu") stays on numba), else numpy; "numpy" is always numpy."""
    numpy_backend = tl.get_backend("numpy")
    host, device_only = FakeBackend("hostbk"), DeviceMemoryBackend("gpubk")
    tl.register_backend("hostbk", host)
    tl.register_backend("gpubk", device_only)
    assert tl.get_backend("cpu") is numpy_backend
    tl.set_default_device("hostbk")
    assert tl.get_backend("cpu") is host and tl.get_backend(tl.device("cpu")) is host
    assert tl.zeros(2, device="cpu").device == "hostbk"
    assert tl.ones(2, device="numpy").to("cpu").device == "hostbk"
    assert tl.get_backend("numpy") is numpy_backend
    tl.set_default_device("gpubk")
    assert tl.get_backend("cpu") is numpy_backend  # device memory is not the host
    tl.set_default_device(None)
    monkeypatch.setenv("TORCHLIGHT_DEVICE", "hostbk")
    tl.set_default_device(None)  # forgets what "cpu" named
    assert tl.get_backend("cpu") is host
    monkeypatch.setenv("TORCHLIGHT_DEVICE", "nosuchbk")
    tl.set_default_device(None)
    assert tl.get_backend("cpu") is numpy_backend  # the bad default raises where it is used
    with pytest.raises(tl.BackendError, match="nosuchbk"):
        tl.zeros(1)


def test_to_moves_data_between_backends_and_gradients_move_back(fresh_registry):
    tl.register_backend("fake", FakeBackend("fake"))
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.T.to("fake")  # a non-contiguous source
    assert y.device == "fake" and y.requires_grad
    assert y._td.storage is not x._td.storage
    np.testing.assert_array_equal(y.detach().numpy(), [[1.0, 3.0], [2.0, 4.0]])
    (y * tl.tensor([[1.0, 2.0], [3.0, 4.0]], device="fake")).sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 3.0], [2.0, 4.0]])
    assert x.to("cpu") is x


def test_to_another_backend_keeps_a_0d_shape(fresh_registry):
    tl.register_backend("fake", FakeBackend("fake"))
    assert tl.tensor(5.0).to("fake").shape == ()
