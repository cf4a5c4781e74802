"""bench_call_costs.py: its two log-softmax forms compute the log-softmax, and it times every call."""

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")
sys.path.insert(0, str(Path(__file__).parent))

import bench_call_costs as bcc  # noqa: E402


def test_both_log_softmax_forms_match_float64_numpy():
    x = np.linspace(-30, 50, 18, dtype=np.float32)
    x64 = x.astype(np.float64)
    want = x64 - (np.log(np.exp(x64 - x64.max()).sum()) + x64.max())
    for form in (bcc.log_softmax_row, bcc.numpy_log_softmax):
        out = np.full_like(x, np.nan)
        form(x, out)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-5)


def test_every_call_is_timed(capsys):
    bcc.main(["--number", "50", "--repeat", "2"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 5
    for row in rows:
        assert float(row.rsplit("|", 2)[1]) > 0, row
