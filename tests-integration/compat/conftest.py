"""The compatibility suite's test modules import their helpers from compat_helpers.py, next to this file."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _needs_nn_and_data():
    pytest.importorskip("torchlight.nn")
    pytest.importorskip("torchlight.data")
