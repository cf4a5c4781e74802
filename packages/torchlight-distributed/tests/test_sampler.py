"""DistributedSampler: shards disjoint and complete, PyTorch's padding, epochs via set_epoch."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchlight.distributed import DistributedSampler


def shards(n, replicas, **kw):
    samplers = [
        DistributedSampler(range(n), num_replicas=replicas, rank=r, **kw) for r in range(replicas)
    ]
    return samplers, [list(s) for s in samplers]


@given(
    n=st.integers(0, 60),
    replicas=st.integers(1, 7),
    shuffle=st.booleans(),
    seed=st.integers(0, 2**32),
    epoch=st.integers(0, 5),
)
def test_shards_are_disjoint_and_complete(n, replicas, shuffle, seed, epoch):
    samplers, parts = shards(n, replicas, shuffle=shuffle, seed=seed)
    for s in samplers:
        s.set_epoch(epoch)
    parts = [list(s) for s in samplers]
    flat = [i for p in parts for i in p]
    per_rank = -(-n // replicas)
    assert all(len(p) == per_rank == len(s) for p, s in zip(parts, samplers))
    assert set(flat) == set(range(n))  # complete
    if n % replicas == 0:
        assert len(set(flat)) == len(flat)  # disjoint
    else:  # padded like PyTorch: only the padding repeats, with the beginning of the order
        assert len(flat) - len(set(flat)) == per_rank * replicas - n
        order = samplers[0].global_order()
        assert list(order[n:]) == list(order[: per_rank * replicas - n])


@given(n=st.integers(0, 60), replicas=st.integers(1, 7), seed=st.integers(0, 1000))
def test_drop_last_drops_the_tail(n, replicas, seed):
    samplers, parts = shards(n, replicas, seed=seed, drop_last=True)
    flat = [i for p in parts for i in p]
    assert all(len(p) == n // replicas for p in parts)
    assert len(set(flat)) == len(flat) == replicas * (n // replicas)


def test_epochs_reshuffle_and_are_reproducible():
    s = DistributedSampler(range(100), num_replicas=2, rank=1, seed=7)
    first = list(s)
    assert list(s) == first  # the epoch only moves with set_epoch (as in PyTorch)
    s.set_epoch(1)
    second = list(s)
    assert second != first
    again = DistributedSampler(range(100), num_replicas=2, rank=1, seed=7)
    again.set_epoch(1)
    assert list(again) == second  # a pure function of (seed, epoch): resumable
    other_seed = DistributedSampler(range(100), num_replicas=2, rank=1, seed=8)
    assert list(other_seed) != first


def test_shuffle_false_is_strided():
    _, parts = shards(7, 3, shuffle=False)
    assert parts == [[0, 3, 6], [1, 4, 0], [2, 5, 1]]


@pytest.mark.parametrize(
    "kw, exc",
    [
        ({"num_replicas": 0, "rank": 0}, ValueError),
        ({"num_replicas": 2, "rank": 2}, ValueError),
        ({"num_replicas": 2, "rank": -1}, ValueError),
        ({"num_replicas": 2.0, "rank": 0}, TypeError),
        ({"num_replicas": 2, "rank": 0, "seed": -1}, ValueError),
        ({"num_replicas": 2, "rank": 0, "seed": 1.5}, TypeError),
    ],
)
def test_bad_arguments(kw, exc):
    with pytest.raises(exc):
        DistributedSampler(range(10), **kw)
    s = DistributedSampler(range(10), num_replicas=2, rank=0)
    with pytest.raises(ValueError):
        s.set_epoch(-1)


def test_sampler_on_two_ranks(mpi):
    """Defaults from MPI; with a DataLoader; shards gathered across ranks are disjoint and
    complete for 3 epochs (even, padded and drop_last sizes); set_epoch replays an epoch."""
    mpi("sampler.py").assert_ok()
