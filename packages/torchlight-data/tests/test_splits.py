import pytest

from torchlight.data.datasets import split_text, train_val_split


def test_train_val_split_is_seeded_and_partitions():
    items = list(range(100))
    train, val = train_val_split(items, val_fraction=0.2, seed=0)
    assert len(val) == 20 and len(train) == 80
    assert sorted(train + val) == items
    assert train_val_split(items, 0.2, seed=0) == (train, val)
    assert train_val_split(items, 0.2, seed=1)[1] != val
    assert train_val_split(items, 0.0, seed=0)[1] == []
    with pytest.raises(ValueError):
        train_val_split(items, 1.5)


def test_split_text_is_contiguous():
    text = "abcdefghij"
    assert split_text(text, 0.2) == ("abcdefgh", "ij")
    assert split_text(text, 0.0) == (text, "")
