"""Backend discovery (entry points) and device selection.

Backends are found through the entry-point group ``torchlight.backends``; each entry names a
cheap :class:`BackendSpec`. Nothing heavy is imported until a backend is asked for, and a plugin
that fails to import is recorded and reported only when asked for (and by ``python -m torchlight``),
so one broken plugin never breaks ``import torchlight``.

Selection order for a new tensor: explicit ``device=`` → :func:`set_default_device` →
``$TORCHLIGHT_DEVICE`` → ``cpu``. A backend whose hardware is missing raises; there is never a
silent fallback to another device.

``"cpu"`` names the host: the built-in numpy backend, unless the chosen default device (by
:func:`set_default_device` or ``$TORCHLIGHT_DEVICE``) is another backend that keeps its data in
host memory, such as ``numba`` — then ``"cpu"`` is that one (:func:`cpu_backend`), so a PyTorch
program's ``.to("cpu")`` or ``device="cpu"`` stays on the host backend the user picked.
``"numpy"`` always names the numpy backend.
"""

import os
from importlib.metadata import entry_points

from ..device import active_device, as_device_name, device
from ..errors import BackendError, DeviceUnavailableError
from . import threads
from .allocator import keep_freed_memory
from .numpy import SPEC as NUMPY_SPEC
from .protocol import API_VERSION, BackendSpec, host_memory

__all__ = [
    "register_backend",
    "get_backend",
    "available_backends",
    "backend_status",
    "set_default_device",
    "get_default_device",
    "backend_usable",
    "cpu_backend",
]

GROUP = "torchlight.backends"
ALIASES = {"cpu": "numpy"}

_specs: dict = {}  # name -> BackendSpec
_broken: dict = {}  # name -> "why the entry point could not be read"
_loaded: dict = {}  # name -> backend instance
_discovered = False
_default = None  # set_default_device's choice
_default_backend = None  # cache of the resolved default backend
_cpu = None  # cache of what "cpu" names (cpu_backend)


def _discover():
    global _discovered
    if _discovered:
        return
    _discovered = True
    for ep in entry_points(group=GROUP):
        if ep.name in _specs:
            continue
        try:
            spec = ep.load()
        except Exception as exc:  # a broken plugin is reported when asked for, never at import
            _broken[ep.name] = (
                f"entry point {ep.value!r} failed to import: {type(exc).__name__}: {exc}"
            )
            continue
        _specs[ep.name] = spec
    if "numpy" not in _specs:  # running from a source tree without installed metadata
        _specs["numpy"] = NUMPY_SPEC


def register_backend(name: str, spec) -> None:
    """Register a backend programmatically (a :class:`BackendSpec` or a backend object).

    Installed backends register themselves through the ``torchlight.backends`` entry point
    group; this is for backends defined in a script or a test.

    >>> tl.register_backend("mycpu", tl.get_backend("cpu"))
    >>> tl.get_backend("mycpu") is tl.get_backend("cpu")
    True
    """
    global _default_backend, _cpu
    if not isinstance(spec, BackendSpec):
        backend = spec
        spec = BackendSpec(name, lambda: backend)
    _specs[name] = spec
    _loaded.pop(name, None)
    _broken.pop(name, None)
    _default_backend = _cpu = None


def _describe() -> str:
    _discover()
    parts = []
    for name in sorted(set(_specs) | set(_broken)):
        if name in _broken:
            parts.append(f"{name} (broken)")
        elif _specs[name].is_available():
            parts.append(f"{name} (available)")
        else:
            parts.append(f"{name} (unavailable: {_specs[name].why_unavailable()})")
    return ", ".join(parts)


def get_backend(name=None):
    """The backend object for a device (a name such as ``"cpu"``/``"cuda:0"``, a
    :class:`~torchlight.device`, or ``None`` for the default device).

    >>> tl.get_backend("cpu").name
    'numpy'
    """
    global _default_backend
    if name is None:
        name = active_device()
    if name is None:
        if _default_backend is None:
            _default_backend = get_backend(get_default_device())
        return _default_backend
    if isinstance(name, device):
        name = as_device_name(name)
    elif not isinstance(name, str):  # already a backend object
        if not hasattr(name, "capabilities") or not hasattr(name, "from_numpy"):
            raise BackendError(
                f"expected a device (a name such as 'cpu' or 'cuda:0', or a torchlight.device), "
                f"got {name!r} of type {type(name).__name__}"
            )
        return name
    elif ":" in name:
        name = as_device_name(name)
    if name == "cpu":
        return _cpu or cpu_backend()
    key = ALIASES.get(name, name)
    if key in _loaded:
        return _loaded[key]
    return _load(key, name)


def _load(key, name):
    """Discover, check and load the backend registered as ``key`` (asked for as ``name``)."""
    _discover()
    if key in _broken:
        raise BackendError(f"backend {name!r} is installed but broken: {_broken[key]}")
    spec = _specs.get(key)
    if spec is None:
        raise BackendError(
            f"unknown device/backend {name!r}. Installed: {_describe()}. "
            "Install the backend distribution that provides it, or check "
            "`python -m torchlight`."
        )
    if not spec.is_available():
        raise DeviceUnavailableError(
            f"backend {name!r} is installed but not usable here: {spec.why_unavailable()}. "
            f"Run `python -m torchlight` to see every backend's status. Installed: {_describe()}."
        )
    if spec.api_version != API_VERSION:
        raise BackendError(
            f"backend {name!r} implements backend API version {spec.api_version}, this "
            f"torchlight-tensor expects {API_VERSION}; upgrade one of them"
        )
    try:
        backend = spec.load()
    except Exception as exc:
        _broken[key] = f"load() failed: {type(exc).__name__}: {exc}"
        raise BackendError(f"backend {name!r} failed to load: {type(exc).__name__}: {exc}") from exc
    if host_memory(backend):
        keep_freed_memory()
    threads.configure(backend)  # a set_num_threads made before this backend loaded
    _loaded[key] = backend
    return backend


def cpu_backend():
    """The backend the device name ``"cpu"`` selects: the default device chosen by
    :func:`set_default_device` or ``$TORCHLIGHT_DEVICE`` when that is a backend keeping its data
    in host memory (the ``host_memory`` capability, e.g. ``numba``), else the numpy backend.

    Why: ``TORCHLIGHT_DEVICE=numba`` asks for numba, and PyTorch programs say ``"cpu"`` for the
    host (``model.to("cpu")``, ``--device=cpu``); read as numpy, that would move every tensor off
    the backend the user chose. A default that cannot load leaves ``"cpu"`` as numpy (the error
    belongs where the default device is used).

    >>> from torchlight.tensor.backend.registry import cpu_backend
    >>> tl.get_backend("cpu") is cpu_backend()
    True
    """
    global _cpu
    if _cpu is None:
        chosen = _chosen_device()
        backend = get_backend(ALIASES["cpu"])
        if chosen != "cpu":
            try:
                other = get_backend(chosen)
            except BackendError:
                other = backend
            if host_memory(other):
                backend = other
        _cpu = backend
    return _cpu


def backend_usable(name) -> bool:
    """True when backend ``name`` is installed, not broken, implements this API version and its
    hardware/runtime is present (``get_backend(name)`` would succeed). Never raises and loads
    nothing heavy, so ``torchlight.cuda.is_available()`` is cheap."""
    _discover()
    key = ALIASES.get(name, name)
    if key in _loaded:
        return True
    spec = _specs.get(key)
    if spec is None or key in _broken or spec.api_version != API_VERSION:
        return False
    return spec.is_available()


def available_backends() -> list:
    """Names of installed backends whose hardware/runtime is present.

    >>> "numpy" in tl.available_backends()  # the cpu backend
    True
    """
    _discover()
    return sorted(n for n, s in _specs.items() if s.is_available())


def backend_status() -> list:
    """(name, status, reason) for every installed backend, for ``python -m torchlight``."""
    _discover()
    rows = []
    for name in sorted(set(_specs) | set(_broken)):
        if name in _broken:
            rows.append((name, "broken", _broken[name]))
        elif _specs[name].is_available():
            rows.append((name, "available", ""))
        else:
            rows.append((name, "unavailable", _specs[name].why_unavailable()))
    return rows


def set_default_device(name) -> None:
    """Make ``name`` the device of new tensors (validated now, so mistakes surface here).

    ``None`` restores the default (``$TORCHLIGHT_DEVICE``, else ``"cpu"``).

    >>> tl.set_default_device("cpu")
    >>> tl.zeros(1).device == "cpu"
    True
    """
    global _default, _default_backend, _cpu
    if isinstance(name, device):
        name = str(name)
    if name is not None:
        get_backend(name)
    _default = name
    _default_backend = _cpu = None


def get_default_device() -> str:
    """The device new tensors go to when a factory is given no ``device``: the innermost active
    ``with torchlight.device(...)`` block's, else the one set by :func:`set_default_device`, else
    ``$TORCHLIGHT_DEVICE``, else ``"cpu"``.

    >>> tl.get_default_device()
    'cpu'
    """
    active = active_device()
    return _chosen_device() if active is None else active


def _chosen_device() -> str:
    """The process-wide choice of device: :func:`set_default_device`'s, else
    ``$TORCHLIGHT_DEVICE``, else ``"cpu"`` (a ``with torchlight.device(...)`` block aside)."""
    if _default is not None:
        return _default
    return os.environ.get("TORCHLIGHT_DEVICE") or "cpu"
