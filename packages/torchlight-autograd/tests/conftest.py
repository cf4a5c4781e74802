"""Hypothesis profiles for this distribution's tests.

conftest files only reach their own directory, and the top level of the repo holds no conftest,
so each distribution's tests register the shared profiles here. ``ci`` (chosen by the nox
``tests`` session through ``TORCHLIGHT_HYPOTHESIS_PROFILE=ci`` when ``CI`` is set) has no
deadline, because a loaded 2-core CI runner makes timings meaningless, and prints the
reproduction blob of a failing example so it can be replayed locally.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    print_blob=True,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50)
settings.load_profile(os.environ.get("TORCHLIGHT_HYPOTHESIS_PROFILE", "dev"))
