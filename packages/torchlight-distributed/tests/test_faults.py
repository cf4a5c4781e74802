"""A failing rank ends the whole job with a non-zero status within seconds (no hang), and the
output names the rank and shows its error."""

import pytest

LIMIT = 10.0  # seconds; the job is killed (and the test fails) at 30


@pytest.mark.parametrize(
    "mode, status, message",
    [
        ("raise", 1, "ValueError: rank one failed on purpose"),
        ("exit", 3, "sys.exit(3) on rank 1"),
        ("abort", 5, "giving up on purpose"),
        ("die", None, ""),
    ],
)
def test_failing_rank_aborts_the_job(mpi, mode, status, message):
    res = mpi("faults.py", mode, timeout=30)
    assert res.returncode != 0, res.output
    if status is not None:
        assert res.returncode == status, res.output
    assert res.seconds < LIMIT, f"took {res.seconds:.1f} s\n{res.output}"
    assert "should not be reached" not in res.stdout
    if mode in ("raise", "exit"):
        assert "[rank 1]" in res.stderr and "aborting the MPI job" in res.stderr, res.output
    assert message in res.stderr, res.output


def test_failing_rank_under_the_launcher(mpi):
    """``python -m torchlight.distributed.run`` passes the failing status through."""
    res = mpi("faults.py", "raise", timeout=30, launcher=True)
    assert res.returncode == 1, res.output
    assert res.seconds < LIMIT
    assert "[rank 1]" in res.stderr and "rank one failed on purpose" in res.stderr
