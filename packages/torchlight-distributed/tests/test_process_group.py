"""PyTorch's process-group API on 2 real ranks (the checks are in mpi_scripts/process_group.py):
init_process_group / get_rank / get_world_size / is_initialized / destroy_process_group,
all_reduce with every ReduceOp (and async_op handles), broadcast(src), all_gather into a list,
barrier, and nn.parallel.DistributedDataParallel with PyTorch's arguments (gradients equal the
full-batch gradient)."""

import pytest

import torchlight.distributed as dist


def test_process_group_api_two_ranks(mpi):
    mpi("process_group.py").assert_ok()


def test_reduce_op_and_work_without_mpi():
    assert [op.value for op in dist.ReduceOp] == ["sum", "prod", "min", "max", "mean"]
    assert dist.ReduceOp.AVG == "mean"
    w = dist.Work()
    assert w.wait() and w.is_completed() and w.is_success()


def test_init_process_group_rejects_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        dist.init_process_group("carrier-pigeon")
