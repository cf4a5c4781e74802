"""The entry point ``numba`` (group ``torchlight.backends``): cheap, never imports numba.

``is_available()`` answers from installed metadata only and never raises; ``load()`` imports
numba and the kernels.
"""

from importlib import metadata, util

from torchlight.tensor.backend.protocol import BackendSpec

__all__ = ["SPEC", "MIN_NUMBA"]

MIN_NUMBA = (0, 61)


def _version_tuple(text):
    parts = []
    for p in text.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _available():
    if util.find_spec("numba") is None:
        return False, "numba is not installed (pip install 'numba>=0.61')"
    try:
        version = metadata.version("numba")
    except metadata.PackageNotFoundError:
        return True, None  # importable without metadata (e.g. a source checkout): let load() decide
    if _version_tuple(version) < MIN_NUMBA:
        return False, f"numba {version} is too old; torchlight-backend-numba needs numba>=0.61"
    return True, None


def _load():
    from .backend import NumbaBackend

    return NumbaBackend()


SPEC = BackendSpec("numba", _load, _available)
