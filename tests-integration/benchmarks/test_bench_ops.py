"""bench_ops.py: every case runs the same on torchlight as on the framework it imitates (checked
against numpy-backed expectations), and the table's summary is the arithmetic on its rows."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torchlight.nn")
sys.path.insert(0, str(Path(__file__).parent))

import bench_ops as bo  # noqa: E402

import torchlight as tl  # noqa: E402


@pytest.mark.parametrize("name", list(bo.CASES))
def test_every_case_runs_on_torchlight(name):
    call = bo.CASES[name](tl)
    call()
    call()  # twice: cases that write in place (setitem) or step an optimizer run again


def test_stacked_and_indexed_values():
    # two cases whose results are easy to state: what the benchmark times is the real op
    assert bo.CASES["stack 16 x (17,)"](tl)().shape == (16, 17)
    np.testing.assert_array_equal(bo.CASES["x[i, j] (0-d int tensors)"](tl)().numpy(), 1.0)


def test_geomean_and_table_on_hand_rows():
    assert bo.geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert bo.geomean([None, 4.0]) == pytest.approx(4.0)
    rows = [
        {"case": "a", "torchlight_us": 4.0, "torch_us": 2.0, "ratio": 2.0},
        {"case": "b", "torchlight_us": 1.0, "torch_us": 2.0, "ratio": 0.5},
    ]
    text = bo.table(rows)
    assert "| a | 4.00 | 2.00 | 2.00 |" in text
    assert "geometric mean of the ratios: 1.00; worst: 2.00 (a)" in text
    lonely = bo.table([{"case": "a", "torchlight_us": 4.0, "torch_us": None, "ratio": None}])
    assert "| a | 4.00 | — | — |" in lonely and "not importable" in lonely


def test_main_times_the_chosen_cases():
    rows = bo.main(["--only", "a + b (16x16, grad)", "--number", "5", "--repeat", "1"])
    assert [r["case"] for r in rows] == ["a + b (16x16, grad)"]
    assert rows[0]["torchlight_us"] > 0 and math.isfinite(rows[0]["torchlight_us"])
    with pytest.raises(SystemExit, match="unknown cases"):
        bo.main(["--only", "nope"])


def test_calls_counts_the_python_calls_of_one_call(capsys):
    def three():  # a Python function that calls two builtins
        len("ab")
        abs(-1)

    assert bo.python_calls(three) == 3
    rows = bo.main(["--only", "a + b (16x16, grad)", "x.view(-1, 1)", "--calls"])
    assert [r["case"] for r in rows] == ["a + b (16x16, grad)", "x.view(-1, 1)"]
    assert all(r["calls"] > 5 for r in rows)
    assert bo.main(["--only", "x.view(-1, 1)", "--calls"])[0]["calls"] == rows[1]["calls"]
    assert "| x.view(-1, 1) |" in capsys.readouterr().out


def test_the_name_classifier_step_trains():
    # the case is a real training step: the same name, step after step, is learned
    step = bo.CASES["name classifier step (RNN, 8 letters, 57-128-18)"](tl)
    losses = [step() for _ in range(40)]
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < losses[0] - 0.5
