"""Fixtures shared by the cross-package tests."""

import importlib
import sys
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

import torchlight as tl


@contextmanager
def _project_modules(folder, names):
    saved = {n: sys.modules.pop(n) for n in names if n in sys.modules}
    sys.path.insert(0, str(folder))
    try:
        yield SimpleNamespace(**{n: importlib.import_module(n) for n in names})
    finally:
        sys.path.remove(str(folder))
        for n in names:
            sys.modules.pop(n, None)
        sys.modules.update(saved)
        tl.set_default_device("cpu")


@pytest.fixture(scope="session")
def project_modules():
    """``with project_modules(folder, ("model", "train")) as ns:`` imports a project's top-level
    modules from its folder and removes them again afterwards: every project has a ``model``
    and a ``train``, and one project's must never be found by another's test. Skips when
    torchlight-nn or torchlight-data (which every project needs) is not installed."""
    pytest.importorskip("torchlight.nn")
    pytest.importorskip("torchlight.data")
    return _project_modules
