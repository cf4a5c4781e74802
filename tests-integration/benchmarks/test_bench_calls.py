"""bench_calls.py: a step's Python calls, from real runs of a small program, repeat exactly."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("torchlight.nn")
pytest.importorskip("tqdm")
sys.path.insert(0, str(Path(__file__).parent))

import bench_calls as bcl  # noqa: E402
import bench_compat as bc  # noqa: E402


def test_calls_per_step_are_positive_and_repeat(tmp_path):
    prog = bc.programs()["custom_function"]
    first = bcl.calls_per_step(prog, "cpu", str(tmp_path))
    assert first > 100  # a forward, a backward and an update: hundreds of Python calls
    assert bcl.calls_per_step(prog, "cpu", str(tmp_path)) == first


def test_unknown_program_is_named(capsys):
    with pytest.raises(SystemExit, match="no_such_program"):
        bcl.main(["--only", "no_such_program"])
