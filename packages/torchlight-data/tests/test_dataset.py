import numpy as np
import pytest

import torchlight as tl
from torchlight.data import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Range(Dataset):
    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.offset + i


def test_tensor_dataset_rows():
    x = tl.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))
    y = tl.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6.0, 7.0, 8.0] and yi.tolist() == 0
    assert ds[-1][0].tolist() == [9.0, 10.0, 11.0]
    assert ds.tensors[0] is x


def test_tensor_dataset_sample_is_a_view_not_a_copy():
    arr = np.arange(30, dtype=np.float64).reshape(10, 3)
    ds = TensorDataset(arr)  # numpy accepted, wrapped without copying
    row = ds[4][0]
    assert np.shares_memory(row.numpy(), arr)
    assert row.shape == (3,)


def test_tensor_dataset_errors():
    with pytest.raises(ValueError, match="same first dimension"):
        TensorDataset(tl.zeros((3, 2)), tl.zeros((4,)))
    with pytest.raises(TypeError):
        TensorDataset([1, 2, 3])
    with pytest.raises(ValueError):
        TensorDataset()
    with pytest.raises(ValueError):
        TensorDataset(tl.tensor(1.0))
    ds = TensorDataset(tl.zeros((3, 2)))
    with pytest.raises(IndexError):
        ds[3]
    with pytest.raises(IndexError):
        ds[-4]
    with pytest.raises(TypeError):
        ds[1.0]


def test_tensor_dataset_gather_equals_rows():
    x = tl.from_numpy(np.arange(20, dtype=np.float32).reshape(10, 2))
    y = tl.arange(10)
    ds = TensorDataset(x, y)
    gx, gy = ds.gather([3, 0, -1])
    assert gx.tolist() == [ds[3][0].tolist(), ds[0][0].tolist(), ds[9][0].tolist()]
    assert gy.tolist() == [3, 0, 9] and gy.dtype == tl.int64


def test_a_subset_of_a_tensor_dataset_batches_like_its_rows():
    """``random_split`` pieces (Subsets, nested too) gather their batch in one op: the same
    values, dtypes and list as default collation of the samples, bad indices refused alike."""
    from torchlight.data import DataLoader, default_collate, random_split
    from torchlight.data.dataset import gathers_batches

    x = tl.from_numpy(np.arange(40, dtype=np.float32).reshape(20, 2))
    y = tl.arange(20)
    ds = TensorDataset(x, y)
    part, _ = random_split(ds, [12, 8], generator=tl.Generator().manual_seed(3))
    inner = Subset(part, [5, 0, 11, 2])
    for sub in (part, inner):
        assert gathers_batches(sub)
        picks = [3, 0, -1, 2]
        want = default_collate([sub[i] for i in picks])
        got = list(sub.gather(picks))
        assert [t.tolist() for t in got] == [t.tolist() for t in want]
        assert [t.dtype for t in got] == [t.dtype for t in want]
        with pytest.raises(IndexError):
            sub.gather([len(sub)])
    loader = DataLoader(part, batch_size=5, shuffle=False)
    batches = list(loader)
    assert [b[1].tolist() for b in batches] == [
        [part[i][1].item() for i in range(k, min(k + 5, 12))] for k in (0, 5, 10)
    ]
    assert not gathers_batches(Subset(Range(4), [0]))  # not a TensorDataset underneath

    class Doubled(TensorDataset):  # a subclass may change what a sample is
        def __getitem__(self, i):
            return tuple(2 * t for t in super().__getitem__(i))

    assert not gathers_batches(Subset(Doubled(x, y), [0, 1]))


def test_iteration_protocol_stops_at_index_error():
    assert list(TensorDataset(tl.arange(3)))[2][0].tolist() == 2
    assert list(Range(3)) == [0, 1, 2]


def test_subset():
    s = Subset(Range(10), [9, 2, 4])
    assert len(s) == 3 and [s[i] for i in range(3)] == [9, 2, 4] and s[-1] == 4
    with pytest.raises(IndexError):
        s[3]


def test_concat():
    c = ConcatDataset([Range(3), Range(0), Range(2, offset=100)])
    assert len(c) == 5
    assert [c[i] for i in range(5)] == [0, 1, 2, 100, 101]
    assert c[-1] == 101 and c[-5] == 0
    with pytest.raises(IndexError):
        c[5]
    plus = Range(2) + Range(1, offset=7)
    assert isinstance(plus, ConcatDataset) and list(plus) == [0, 1, 7]
    with pytest.raises(TypeError):
        ConcatDataset([Range(2), IterableDataset()])
    with pytest.raises(ValueError):
        ConcatDataset([])


def test_base_classes_demand_implementation():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())
    with pytest.raises(TypeError):
        IterableDataset() + IterableDataset()


def test_random_split_counts_and_fractions():
    parts = random_split(Range(10), [7, 3], seed=0)
    assert [len(p) for p in parts] == [7, 3]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(Range(10), [7, 3], seed=0)
    assert [p.indices for p in again] == [p.indices for p in parts]
    assert random_split(Range(10), [7, 3], seed=1)[0].indices != parts[0].indices
    frac = random_split(Range(11), [0.5, 0.3, 0.2], seed=0)
    assert [len(p) for p in frac] == [6, 3, 2]  # floors 5,3,2 plus the remainder to the first
    g = random_split(Range(10), [5, 5], generator=np.random.default_rng(0))
    assert sum(len(p) for p in g) == 10


def test_random_split_global_state():
    tl.manual_seed(1)
    a = random_split(Range(10), [5, 5])[0].indices
    tl.manual_seed(1)
    assert random_split(Range(10), [5, 5])[0].indices == a


@pytest.mark.parametrize("lengths", [[3, 3], [11, -1], [0.5, 0.6], [], [1.5, -0.5]])
def test_random_split_rejects(lengths):
    with pytest.raises(ValueError):
        random_split(Range(10), lengths, seed=0)
