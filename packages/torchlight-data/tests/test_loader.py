"""DataLoader in the main process (num_workers=0); worker processes are in test_worker.py."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
from torchlight.data import (
    BatchSampler,
    DataLoader,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    default_collate,
)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class Unsized(IterableDataset):
    def __iter__(self):
        return iter(range(3))


def xy(n):
    x = tl.from_numpy(np.arange(2 * n, dtype=np.float32).reshape(n, 2))
    return TensorDataset(x, tl.arange(n))


def flat_labels(loader):
    return [i for _, yb in loader for i in yb.tolist()]


def test_batches_have_the_right_shapes_and_order():
    loader = DataLoader(xy(10), batch_size=4)
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert batches[1][1].tolist() == [4, 5, 6, 7] and batches[1][1].dtype == tl.int64
    assert batches[0][0].tolist()[1] == [2.0, 3.0]
    assert isinstance(batches[0], list)  # default_collate of tuples, as in PyTorch


@given(n=st.integers(1, 40), bs=st.integers(1, 12), drop_last=st.booleans())
@settings(max_examples=40, deadline=None)
def test_len_is_right_for_every_drop_last(n, bs, drop_last):
    loader = DataLoader(list(range(n)), batch_size=bs, drop_last=drop_last)
    batches = list(loader)
    assert len(loader) == len(batches) == (n // bs if drop_last else math.ceil(n / bs))
    if drop_last:
        assert all(b.shape == (bs,) for b in batches)


def test_shuffle_differs_across_epochs_and_repeats_with_the_seed():
    loader = DataLoader(xy(32), batch_size=5, shuffle=True, seed=11)
    epochs = [flat_labels(loader) for _ in range(3)]
    for e in epochs:
        assert sorted(e) == list(range(32))  # every sample exactly once per epoch
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2]
    same = DataLoader(xy(32), batch_size=5, shuffle=True, seed=11)
    assert [flat_labels(same) for _ in range(3)] == epochs
    other = DataLoader(xy(32), batch_size=5, shuffle=True, seed=12)
    assert flat_labels(other) != epochs[0]


def test_set_epoch_resumes_the_sequence():
    loader = DataLoader(xy(20), batch_size=4, shuffle=True, seed=3)
    epochs = [flat_labels(loader) for _ in range(3)]
    resumed = DataLoader(xy(20), batch_size=4, shuffle=True, seed=3)
    resumed.set_epoch(2)
    assert flat_labels(resumed) == epochs[2]


def test_shuffle_without_seed_follows_manual_seed():
    tl.manual_seed(5)
    a = flat_labels(DataLoader(xy(20), batch_size=4, shuffle=True))
    tl.manual_seed(5)
    b = flat_labels(DataLoader(xy(20), batch_size=4, shuffle=True))
    assert a == b and a != list(range(20))


def test_generator_argument():
    a = DataLoader(xy(20), batch_size=4, shuffle=True, generator=tl.Generator().manual_seed(1))
    b = DataLoader(xy(20), batch_size=4, shuffle=True, generator=np.random.default_rng(1))
    assert sorted(flat_labels(a)) == sorted(flat_labels(b)) == list(range(20))


def test_drop_last_with_shuffle():
    loader = DataLoader(xy(10), batch_size=3, shuffle=True, drop_last=True, seed=0)
    batches = list(loader)
    assert len(loader) == len(batches) == 3 and all(b[0].shape == (3, 2) for b in batches)


def test_tensor_fast_path_equals_generic_collation():
    ds = xy(13)
    fast = DataLoader(ds, batch_size=5, shuffle=True, seed=2)
    slow = DataLoader(
        ds, batch_size=5, shuffle=True, seed=2, collate_fn=lambda b: default_collate(b)
    )
    for (fx, fy), (sx, sy) in zip(fast, slow, strict=True):
        assert fx.tolist() == sx.tolist() and fy.tolist() == sy.tolist()
        assert fx.dtype == sx.dtype and fy.dtype == sy.dtype


def test_nested_samples_and_custom_collate():
    data = [{"x": np.full(2, i, np.float32), "label": i % 3, "text": str(i)} for i in range(5)]
    batch = next(iter(DataLoader(data, batch_size=5)))
    assert batch["x"].shape == (5, 2) and batch["label"].tolist() == [0, 1, 2, 0, 1]
    assert batch["text"] == ["0", "1", "2", "3", "4"]
    sizes = [len(b) for b in DataLoader(data, batch_size=2, collate_fn=list)]
    assert sizes == [2, 2, 1]


def test_batch_size_none_yields_converted_samples():
    loader = DataLoader([np.arange(2), np.arange(2) + 2], batch_size=None)
    out = list(loader)
    assert len(loader) == 2 and isinstance(out[0], tl.Tensor) and out[1].tolist() == [2, 3]


def test_explicit_sampler_and_batch_sampler():
    ds = list(range(10))
    rev = DataLoader(ds, batch_size=4, sampler=list(reversed(range(10))))
    assert [b.tolist() for b in rev] == [[9, 8, 7, 6], [5, 4, 3, 2], [1, 0]]
    bs = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 3, True))
    assert len(bs) == 3 and [b.tolist() for b in bs][-1] == [6, 7, 8]
    assert bs.batch_size is None


def test_iterable_dataset_batches_and_len():
    loader = DataLoader(Stream(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    dl = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]] and len(dl) == 2
    assert list(DataLoader(Stream(2), batch_size=None)) == [0, 1]
    with pytest.raises(TypeError, match="no __len__"):
        len(DataLoader(Unsized()))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(shuffle=True, sampler=[0, 1]),
        dict(batch_sampler=[[0]], batch_size=2),
        dict(batch_sampler=[[0]], drop_last=True),
        dict(batch_size=None, drop_last=True),
        dict(batch_size=0),
        dict(num_workers=-1),
        dict(timeout=-1),
        dict(prefetch_factor=0),
        dict(seed=1, generator=np.random.default_rng()),
    ],
)
def test_argument_conflicts(kwargs):
    with pytest.raises((ValueError, TypeError)):
        DataLoader(list(range(4)), **kwargs)


def test_iterable_rejects_ordering_arguments():
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(3), shuffle=True)


def test_dataset_errors_propagate_unchanged():
    class Bad:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            raise KeyError(f"no sample {i}")

    with pytest.raises(KeyError, match="no sample 0"):
        next(iter(DataLoader(Bad(), batch_size=2)))
