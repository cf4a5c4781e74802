import numpy as np
import pytest

import torchlight as tl
from torchlight.data.seeding import EpochRandomness, check_seed_args, epoch_rng, fresh_seed


def test_seed_gives_a_pure_function_of_seed_and_epoch():
    a, b = EpochRandomness(seed=7), EpochRandomness(seed=7)
    draws_a = [a.next_epoch().integers(1 << 30) for _ in range(3)]
    draws_b = [b.next_epoch().integers(1 << 30) for _ in range(3)]
    assert draws_a == draws_b
    assert len(set(draws_a)) == 3  # a new epoch, a new stream
    b.set_epoch(1)
    assert b.next_epoch().integers(1 << 30) == draws_a[1]


def test_streams_are_independent():
    assert epoch_rng(1, 0, 0).integers(1 << 30) != epoch_rng(1, 0, 1).integers(1 << 30)


def test_generator_is_consumed_once_per_epoch():
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    r1, r2 = EpochRandomness(generator=g1), EpochRandomness(generator=g2)
    assert [r1.next_epoch().random() for _ in range(2)] == [
        r2.next_epoch().random() for _ in range(2)
    ]


def test_torchlight_generator_accepted():
    r = EpochRandomness(generator=tl.Generator().manual_seed(5))
    s = EpochRandomness(generator=tl.Generator().manual_seed(5))
    assert r.next_epoch().random() == s.next_epoch().random()


def test_fresh_seed_follows_manual_seed():
    tl.manual_seed(123)
    a = [fresh_seed(), fresh_seed()]
    tl.manual_seed(123)
    assert [fresh_seed(), fresh_seed()] == a
    assert a[0] != a[1]


@pytest.mark.parametrize(
    "seed, generator, exc",
    [
        (1, np.random.default_rng(), ValueError),
        ("1", None, TypeError),
        (-1, None, ValueError),
        (True, None, TypeError),
        (None, 42, TypeError),
    ],
)
def test_bad_arguments(seed, generator, exc):
    with pytest.raises(exc):
        check_seed_args(seed, generator)


def test_set_epoch_rejects_negative():
    with pytest.raises(ValueError):
        EpochRandomness(seed=0).set_epoch(-1)
