"""bench_commits.py reads rows of numbers out of any benchmark's output."""

import importlib.util
import math
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


def test_markdown_table_rows_and_ratios_written_with_an_x():
    output = """| case | µs torchlight | µs PyTorch | torchlight / PyTorch |
|---|---:|---:|---:|
| a + b (16x16, grad) | 4.36 | 2.04 | 2.13 |
| MLP step 16-32-27, SGD | 331.66 | 240.99 | 1.38 |
| numba | failed | — |
| bilstm_crf | per --epochs | 1 | 19.01 | — | — | — | 51 | — | — |
lstm-lm    cpu           215.3      176.2     1.22x
lstm-lm    torch                    153.3  (PyTorch CPU, 1 thread)
"""
    found = bench_commits.rows(output)
    # an empty cell ("—", a column bench_compat did not run) is NaN, so the columns stay aligned
    bilstm = found.pop("bilstm_crf | per --epochs")
    assert [None if math.isnan(v) else v for v in bilstm] == [
        1.0,
        19.01,
        None,
        None,
        None,
        51.0,
        None,
        None,
    ]
    assert found == {
        "a + b (16x16, grad)": [4.36, 2.04, 2.13],
        "MLP step 16-32-27, SGD": [331.66, 240.99, 1.38],
        "lstm-lm    cpu": [215.3, 176.2, 1.22],
    }
