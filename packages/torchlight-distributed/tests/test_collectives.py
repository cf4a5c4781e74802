"""broadcast / all_reduce / all_gather / broadcast_parameters on 2 real ranks."""


def test_collectives_two_ranks(mpi):
    """Values of broadcast (root 0 and last), all_reduce sum/mean/max/min (float, int, strided
    view, a parameter), all_gather (list and stacked), object collectives, broadcast_parameters
    (parameters and buffers) — see mpi_scripts/collectives.py."""
    mpi("collectives.py").assert_ok()


def test_collectives_through_the_launcher(mpi):
    """The same script started by ``python -m torchlight.distributed.run -n 2``."""
    mpi("collectives.py", launcher=True).assert_ok()
