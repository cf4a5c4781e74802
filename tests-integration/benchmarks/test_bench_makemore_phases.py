"""bench_makemore_phases.py times makemore's own step: at two steps its table has every phase,
each a positive time, and the whole step (the sum of the phases within each step) is never less
than a phase's median."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torchlight.nn")
pytest.importorskip("torchlight.data")
HERE = Path(__file__).parent


def test_two_steps_print_every_phase():
    out = subprocess.run(
        [sys.executable, str(HERE / "bench_makemore_phases.py"), "--type", "bow", "--steps", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    rows = dict(re.findall(r"^\| ([a-zA-Z ]+) \| ([\d.]+) \|", out, re.M))
    phases = ("batch", "forward", "backward", "AdamW step", "whole step")
    assert set(phases) <= set(rows), out
    times = {p: float(rows[p]) for p in phases}
    assert all(t > 0 for t in times.values()), times
    assert all(times["whole step"] >= times[p] for p in phases[:-1]), times
