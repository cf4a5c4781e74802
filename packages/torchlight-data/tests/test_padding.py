import numpy as np
import pytest

import torchlight as tl
from torchlight.data import (
    CollateError,
    DataLoader,
    PadCollate,
    lengths_to_mask,
    pad_sequence,
    sequence_lengths,
)


def test_pad_sequence_time_major_and_batch_first():
    seqs = [tl.tensor([1, 2, 3]), tl.tensor([4]), tl.tensor([5, 6])]
    tm = pad_sequence(seqs)
    assert tm.shape == (3, 3) and tm.dtype == tl.int64
    assert tm.tolist() == [[1, 4, 5], [2, 0, 6], [3, 0, 0]]
    bf = pad_sequence(seqs, batch_first=True, padding_value=-1)
    assert bf.tolist() == [[1, 2, 3], [4, -1, -1], [5, 6, -1]]
    left = pad_sequence(seqs, batch_first=True, padding_side="left")
    assert left.tolist() == [[1, 2, 3], [0, 0, 4], [0, 5, 6]]


def test_pad_sequence_trailing_dims_lists_and_empty():
    seqs = [np.ones((2, 3), np.float32), np.zeros((1, 3), np.float32)]
    out = pad_sequence(seqs, batch_first=True, padding_value=7.0)
    assert out.shape == (2, 2, 3) and out.dtype == tl.float32
    assert out.tolist()[1][1] == [7.0, 7.0, 7.0]
    assert pad_sequence([[1, 2], [], [3]], batch_first=True).tolist() == [[1, 2], [0, 0], [3, 0]]
    with pytest.raises(CollateError, match="trailing shape"):
        pad_sequence([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError):
        pad_sequence([])
    with pytest.raises(ValueError):
        pad_sequence([[1]], padding_side="middle")


def test_pad_sequence_is_differentiable_when_inputs_need_grad():
    a = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tl.tensor([4.0], requires_grad=True)
    out = pad_sequence([a, b], batch_first=True, padding_value=9.0)
    assert out.tolist() == [[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]]
    (out * out).sum().backward()
    assert a.grad.tolist() == [2.0, 4.0, 6.0] and b.grad.tolist() == [8.0]


def test_lengths_and_masks():
    assert sequence_lengths([[1, 2], [3], tl.zeros((4,))]).tolist() == [2, 1, 4]
    m = lengths_to_mask(tl.tensor([2, 0, 3]))
    assert m.dtype == tl.bool and m.tolist() == [[True, True, False], [False] * 3, [True] * 3]
    assert lengths_to_mask([1, 2], max_len=4).shape == (2, 4)
    assert lengths_to_mask([1, 2], padding_side="left").tolist() == [[False, True], [True, True]]
    with pytest.raises(ValueError):
        lengths_to_mask([3], max_len=2)
    with pytest.raises(ValueError):
        lengths_to_mask([-1])


def test_pad_collate_in_a_loader():
    data = [([1, 2, 3], 0), ([4], 1), ([5, 6], 1)]
    (ids, lengths), labels = next(iter(DataLoader(data, batch_size=3, collate_fn=PadCollate())))
    assert ids.tolist() == [[1, 2, 3], [4, 0, 0], [5, 6, 0]]
    assert lengths.tolist() == [3, 1, 2] and labels.tolist() == [0, 1, 1]
    mask = lengths_to_mask(lengths)
    assert mask.tolist()[1] == [True, False, False]


def test_pad_collate_pairs_and_bare_sequences():
    pairs = [([1, 2], [7]), ([3], [8, 9, 10])]
    (src, src_len), (tgt, tgt_len) = PadCollate(fields=(0, 1), padding_value=0)(pairs)
    assert src.tolist() == [[1, 2], [3, 0]] and tgt_len.tolist() == [1, 3]
    padded, lens = PadCollate()([[1], [2, 3]])
    assert padded.tolist() == [[1, 0], [2, 3]] and lens.tolist() == [1, 2]
    with pytest.raises(CollateError):
        PadCollate(fields=(1,))([[1], [2]])
    with pytest.raises(CollateError):
        PadCollate(fields=(5,))([([1], 0)])
    with pytest.raises(CollateError):
        PadCollate()([])
