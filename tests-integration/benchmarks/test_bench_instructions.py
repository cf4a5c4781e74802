"""bench_instructions.py: the dumps are read in order and the empty loop is subtracted; under
valgrind (where installed) a case's count is positive and repeats on a second run."""

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torchlight.nn")
sys.path.insert(0, str(Path(__file__).parent))

import bench_instructions as bi  # noqa: E402


def test_counts_read_the_dumps_in_the_order_written(tmp_path):
    for k, total in [(1, 900), (2, 10), (3, 55), (10, 7), (4, 1010)]:
        (tmp_path / f"cg.out.{k}").write_text(f"events: Ir\nsummary: {total}\ntotals: {total}\n")
    (tmp_path / "cg.out").write_text("summary: 5\n")  # after the last marker: not a case
    assert bi.counts(tmp_path) == [900, 10, 55, 1010, 7]


def test_per_call_subtracts_the_empty_loop():
    # startup, empty loop (200 for 100 calls), case A setup, loop, case B setup, loop, exit
    dumps = [10**9, 200, 5_000, 3_200, 7_000, 1_200]
    assert bi.per_call(dumps, 2, 100) == [30.0, 10.0]
    with pytest.raises(RuntimeError, match="expected 5 callgrind dumps"):
        bi.per_call(dumps[:3], 2, 100)


def test_table_gives_the_ratio_and_its_geometric_mean():
    text = bi.table(["a", "b"], [300.0, 100.0], [100.0, 100.0])
    assert "| a | 300 | 100 | 3.00 |" in text and "| b | 100 | 100 | 1.00 |" in text
    assert "geometric mean of the ratios: 1.73" in text
    assert "| a | 300 | — | — |" in bi.table(["a"], [300.0], None)


def test_unknown_case_is_named():
    with pytest.raises(SystemExit, match="unknown cases"):
        bi.main(["--only", "no such case"])


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_count_is_positive_and_repeats():
    args = ["--only", "x.view(-1, 1)", "--number", "20", "--no-torch"]
    first = bi.main(args)["torchlight"][0]
    assert 1_000 < first < 1_000_000  # a Python-level view: thousands of instructions
    # the same on every run to within a percent (allocation addresses can shift a few branches)
    assert bi.main(args)["torchlight"][0] == pytest.approx(first, rel=0.01)
