"""The collective timeout: a hung rank is named and the job ends; the timeout's settings."""

import math
import time

import pytest

from torchlight.distributed import deadline
from torchlight.distributed.comm import DistributedError

TIMEOUT = 2.0
# the job must end within: the timeout + the heartbeat grace + process start-up and abort
LIMIT = TIMEOUT + deadline.QUERY_GRACE_S + 20


@pytest.mark.parametrize("mode", ["barrier", "all_reduce", "broadcast_object", "ddp", "leave"])
def test_hung_rank_is_named_and_the_job_ends(mpi, mode):
    res = mpi("hang.py", mode, str(TIMEOUT), timeout=90)
    assert res.returncode != 0, res.output
    assert res.seconds < LIMIT, f"took {res.seconds:.1f} s\n{res.output}"
    assert "should not be reached" not in res.stdout, res.output
    assert "CollectiveTimeoutError" in res.stderr, res.output
    assert f"timed out after {TIMEOUT:g} s" in res.stderr, res.output
    assert "rank(s) 1 did not arrive" in res.stderr, res.output
    assert "TORCHLIGHT_COLLECTIVE_TIMEOUT" in res.stderr, res.output


def test_three_ranks_name_the_hung_one_and_the_waiting_ones(mpi):
    res = mpi("hang.py", "all_reduce", str(TIMEOUT), n=3, timeout=90)
    assert res.returncode != 0, res.output
    assert res.seconds < LIMIT, f"took {res.seconds:.1f} s\n{res.output}"
    assert "rank(s) 2 did not arrive" in res.stderr, res.output
    assert "wait in this one too" in res.stderr, res.output


def test_timeout_from_the_environment(mpi, monkeypatch):
    monkeypatch.setenv(deadline.ENV_VAR, str(TIMEOUT))
    res = mpi("hang.py", "barrier", "env", timeout=90)
    assert res.returncode != 0, res.output
    assert res.seconds < LIMIT, f"took {res.seconds:.1f} s\n{res.output}"
    assert f"timed out after {TIMEOUT:g} s" in res.stderr and "rank(s) 1" in res.stderr, res.output


@pytest.mark.parametrize("what", ["shape", "dtype"])
def test_ddp_refuses_different_models_on_the_ranks(mpi, what):
    mpi("ddp_shapes.py", what, timeout=60).assert_ok(2)


# --- settings (no MPI needed) ------------------------------------------------------------------
@pytest.fixture
def unset(monkeypatch):
    monkeypatch.setattr(deadline, "_TIMEOUT", None)
    monkeypatch.delenv(deadline.ENV_VAR, raising=False)


def test_default_is_generous(unset):
    assert deadline.collective_timeout() == deadline.DEFAULT_TIMEOUT_S == 1800


@pytest.mark.parametrize(
    "value, expected",
    [("600", 600.0), ("2.5", 2.5), ("0", math.inf), ("none", math.inf), ("inf", math.inf)],
)
def test_environment_variable(unset, monkeypatch, value, expected):
    monkeypatch.setenv(deadline.ENV_VAR, value)
    assert deadline.collective_timeout() == expected


@pytest.mark.parametrize("value", ["soon", "-5", "nan"])
def test_bad_environment_variable(unset, monkeypatch, value):
    monkeypatch.setenv(deadline.ENV_VAR, value)
    with pytest.raises(DistributedError, match=deadline.ENV_VAR):
        deadline.collective_timeout()


def test_argument_overrides_environment(unset, monkeypatch):
    monkeypatch.setenv(deadline.ENV_VAR, "600")
    deadline.set_collective_timeout(30)
    assert deadline.collective_timeout() == 30.0
    deadline.set_collective_timeout(None)
    assert deadline.collective_timeout() == math.inf
    with pytest.raises(DistributedError, match="positive"):
        deadline.set_collective_timeout(-1)


def test_error_is_a_timeout_error_and_a_distributed_error():
    assert issubclass(deadline.CollectiveTimeoutError, TimeoutError)
    assert issubclass(deadline.CollectiveTimeoutError, DistributedError)
    assert time.monotonic() > 0
