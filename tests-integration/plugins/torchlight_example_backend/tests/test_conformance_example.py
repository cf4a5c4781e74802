"""The example plugin runs the conformance kit (skipped where the plugin is not installed)."""

import pytest

pytest.importorskip("torchlight_example_backend")
from torchlight.testing import BackendConformance  # noqa: E402


class TestExampleConformance(BackendConformance):
    backend_name = "example"
