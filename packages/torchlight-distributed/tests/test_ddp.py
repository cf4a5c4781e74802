"""DistributedDataParallel on 2 real ranks (the checks are in mpi_scripts/ddp.py):

* gradients after ``backward()`` equal the single-process gradients on the concatenated batch
  (float64, one bucket and one bucket per parameter), and each ``.grad`` is a view of its bucket;
* after 10 Adam steps (float32 and float64) the parameters are bit-identical across ranks, and
  in float64 equal to single-process training;
* ``no_sync()`` accumulates locally, and the next synchronised backward averages everything;
* parameters without a gradient: ``find_unused_parameters=True`` (grad None when no rank used
  it), the error naming them otherwise, and ``finish_gradient_synchronization()``.
"""

import pytest

import torchlight.distributed as dist
from torchlight.distributed.ddp import _plan_buckets


def test_ddp_two_ranks(mpi):
    mpi("ddp.py").assert_ok()


def test_bucket_plan_groups_by_dtype_and_caps_size():
    import torchlight as tl

    params = [
        tl.zeros(100),
        tl.zeros(100),
        tl.zeros(100, dtype=tl.float64),
        tl.zeros(1000),
        tl.zeros(10),
    ]
    # 400-byte float32 tensors, cap 900 bytes: two per bucket; the float64 one travels alone
    plan = _plan_buckets(params, [0, 1, 2, 3, 4], 900)
    assert plan == [[0, 1], [2], [3], [4]]
    assert _plan_buckets(params, [4, 3, 2, 1, 0], 1 << 20) == [[4, 3, 1, 0], [2]]


def test_single_process_world_is_a_plain_wrapper():
    """Started without mpiexec the world has one rank: DDP just delegates (no hooks, no copies)."""
    if not dist.is_available():
        pytest.skip("mpi4py with an MPI library is not importable")
    import numpy as np

    import torchlight as tl
    from torchlight import nn

    tl.manual_seed(0)
    model = nn.Linear(3, 2)
    ddp = dist.DistributedDataParallel(model)
    assert ddp.world_size == dist.world_size() == 1 and dist.rank() == 0
    x = tl.randn(4, 3)
    np.testing.assert_array_equal(ddp(x).detach().numpy(), model(x).detach().numpy())
    ddp(x).sum().backward()
    assert model.weight.grad is not None
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    with ddp.no_sync():
        ddp(x).sum().backward()
    ddp.finish_gradient_synchronization()
