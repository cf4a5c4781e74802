"""bench_packed.py: every op and sum is timed on both backends and the packed kernel, and the
route it reports is the routing table's."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")
sys.path.insert(0, str(Path(__file__).parent))

import bench_packed as bp  # noqa: E402


def test_every_op_and_sum_is_timed(capsys):
    bp.main(["--number", "5", "--repeat", "1", "--sizes", "64", "4096"])
    lines = capsys.readouterr().out.splitlines()
    ops = [line for line in lines if line.startswith("| ") and "`" in line and "(" not in line]
    sums = [line for line in lines if line.startswith("| (")]
    assert len(ops) == 2 * (len(bp.ZIP_OPS) + len(bp.MAP_OPS))
    assert len(sums) == len(bp.SUMS)
    for row in ops + sums:
        times = [float(c) for c in row.strip("|").split("|")[-3:] if "`" not in c and "(" not in c]
        assert times and all(t > 0 for t in times), row


def test_routes_follow_the_table():
    rows = {(op, n): route for op, n, route, *_ in bp.elementwise(1, 1, sizes=(64, 4096))}
    assert rows[("tanh_back", 4096)] == "_packed.zip"  # arithmetic: packed at every size
    assert rows[("silu", 64)] == "_packed.map"
    assert rows[("silu", 4096)] == "numpy"  # above PACKED_MAX
    assert rows[("sigmoid", 4096)] == "numpy"
