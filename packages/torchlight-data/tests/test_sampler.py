import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import torchlight as tl
from torchlight.data import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_sequential():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and list(s) == [0, 1, 2, 3, 4]
    assert len(s) == 5


def test_random_sampler_permutes_differently_each_epoch_but_reproducibly():
    s = RandomSampler(range(50), seed=0)
    epochs = [list(s) for _ in range(3)]
    for e in epochs:
        assert sorted(e) == list(range(50))
    assert epochs[0] != epochs[1] != epochs[2]
    again = RandomSampler(range(50), seed=0)
    assert [list(again) for _ in range(3)] == epochs
    assert s.epoch == 3
    s.set_epoch(1)
    assert list(s) == epochs[1]


def test_random_sampler_other_seed_differs():
    assert list(RandomSampler(range(50), seed=0)) != list(RandomSampler(range(50), seed=1))


def test_random_sampler_generators():
    a = RandomSampler(range(30), generator=np.random.default_rng(4))
    b = RandomSampler(range(30), generator=np.random.default_rng(4))
    assert [list(a), list(a)] == [list(b), list(b)]
    c = RandomSampler(range(30), generator=tl.Generator().manual_seed(4))
    assert sorted(list(c)) == list(range(30))


def test_random_sampler_global_state():
    tl.manual_seed(9)
    a = list(RandomSampler(range(30)))
    tl.manual_seed(9)
    assert list(RandomSampler(range(30))) == a


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10, seed=0)
    order = list(s)
    assert len(order) == len(s) == 10
    assert Counter(order[:8]) == Counter({0: 2, 1: 2, 2: 2, 3: 2})  # chained permutations
    r = RandomSampler(range(3), replacement=True, num_samples=200, seed=0)
    assert set(r) == {0, 1, 2} and len(list(r)) == 200
    assert list(RandomSampler([], seed=0)) == []
    with pytest.raises(ValueError):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], seed=1)
    a, b = list(s), list(s)
    assert sorted(a) == sorted(b) == [10, 20, 30, 40] and len(s) == 4
    assert [list(SubsetRandomSampler([10, 20, 30, 40], seed=1)) for _ in range(1)][0] == a


def test_weighted_sampler_follows_weights():
    s = WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=4000, seed=0)
    counts = Counter(s)
    assert counts[0] == 0
    assert abs(counts[2] / 4000 - 0.75) < 0.03
    assert len(s) == 4000
    assert list(WeightedRandomSampler(tl.tensor([1.0, 1.0]), 5, seed=3)) == list(
        WeightedRandomSampler([1.0, 1.0], 5, seed=3)
    )


def test_weighted_sampler_without_replacement():
    s = WeightedRandomSampler([1, 0, 1, 1], num_samples=3, replacement=False, seed=0)
    assert sorted(s) == [0, 2, 3]


@pytest.mark.parametrize(
    "weights, n, repl",
    [
        ([], 1, True),
        ([-1.0, 2.0], 1, True),
        ([0.0, 0.0], 1, True),
        ([1.0, float("nan")], 1, True),
        ([1.0, 0.0], 2, False),
        ([1.0], 0, True),
        ([[1.0]], 1, True),
    ],
)
def test_weighted_sampler_rejects(weights, n, repl):
    with pytest.raises(ValueError):
        WeightedRandomSampler(weights, n, replacement=repl)


@given(n=st.integers(0, 60), bs=st.integers(1, 17), drop_last=st.booleans())
def test_batch_sampler_len_matches_iteration(n, bs, drop_last):
    b = BatchSampler(SequentialSampler(range(n)), bs, drop_last)
    batches = list(b)
    assert len(batches) == len(b) == (n // bs if drop_last else math.ceil(n / bs))
    flat = [i for batch in batches for i in batch]
    assert flat == list(range(len(flat)))
    assert all(len(batch) == bs for batch in batches[:-1])
    if drop_last and batches:
        assert len(batches[-1]) == bs


def test_batch_sampler_validates_and_forwards_epoch():
    with pytest.raises(ValueError):
        BatchSampler(range(3), 0, False)
    with pytest.raises(TypeError):
        BatchSampler(range(3), 2, 1)
    inner = RandomSampler(range(10), seed=0)
    b = BatchSampler(inner, 3, False)
    first = list(b)
    b.set_epoch(0)
    assert list(b) == first
