import numpy as np
import pytest

import torchlight as tl
from torchlight.data import DataLoader, LanguageModelDataset


def test_windows_are_shifted_by_one():
    ds = LanguageModelDataset(list(range(10)), block_size=3)
    assert len(ds) == 3  # starts 0, 3, 6 (6 + 3 + 1 <= 10)
    x, y = ds[1]
    assert x.tolist() == [3, 4, 5] and y.tolist() == [4, 5, 6] and x.dtype == tl.int64
    assert ds[-1][1].tolist() == [7, 8, 9]
    with pytest.raises(IndexError):
        ds[3]


def test_stride_and_inputs():
    ds = LanguageModelDataset(tl.arange(6), block_size=2, stride=1)
    assert len(ds) == 4 and ds[3][0].tolist() == [3, 4]
    ds = LanguageModelDataset(np.arange(5), block_size=4)
    assert len(ds) == 1
    with pytest.raises(ValueError):
        LanguageModelDataset([1, 2], block_size=2)
    with pytest.raises(ValueError):
        LanguageModelDataset([1, 2, 3], block_size=0)


def test_in_a_loader():
    ids = list(range(100))
    loader = DataLoader(LanguageModelDataset(ids, block_size=8), batch_size=4, shuffle=True, seed=0)
    xb, yb = next(iter(loader))
    assert xb.shape == yb.shape == (4, 8)
    assert (np.asarray(yb.tolist()) - np.asarray(xb.tolist()) == 1).all()
