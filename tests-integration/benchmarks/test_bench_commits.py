"""bench_commits.py reads rows of numbers out of any benchmark's output."""

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "bench_commits", Path(__file__).with_name("bench_commits.py")
)
bench_commits = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_commits)


def test_rows_are_the_lines_that_end_in_numbers():
    output = """1 threads; AdamW fused where the backend has it
backend      forward  backward  optimizer      step  (ms, medians)
cpu            133.8     200.8        6.0     340.7
1024x1024 sum dim 0                           0.428      0.687      1.5e-3
matmul 512x512 -2 .5
just words
42
"""
    assert bench_commits.rows(output) == {
        "cpu": [133.8, 200.8, 6.0, 340.7],
        "1024x1024 sum dim 0": [0.428, 0.687, 1.5e-3],
        "matmul 512x512": [-2.0, 0.5],
    }
