"""LanguageModelDataset: next-token prediction windows over one long token sequence.

A character- or BPE-level language model trains on ``(x, y)`` pairs where ``y`` is ``x`` shifted
by one token. Rather than materialise every window, this dataset keeps the token array once and
slices windows on demand.
"""

from __future__ import annotations

import numpy as np

import torchlight as tl

from .dataset import Dataset

__all__ = ["LanguageModelDataset"]


class LanguageModelDataset(Dataset):
    """Windows ``x = ids[s : s + block_size]``, ``y = ids[s + 1 : s + block_size + 1]``.

    Window ``k`` starts at ``s = k * stride`` (``stride`` defaults to ``block_size``:
    non-overlapping windows; ``stride=1`` gives every window). Both tensors are int64 of shape
    ``(block_size,)``. ``ids`` may be a list, a numpy array or a 1-D tensor of token ids::

        ids = CharTokenizer.from_text(text).encode(text)
        loader = DataLoader(LanguageModelDataset(ids, block_size=128), batch_size=64, shuffle=True, seed=0)

    >>> from torchlight.data import LanguageModelDataset
    >>> ds = LanguageModelDataset(tl.arange(10), block_size=4)
    >>> len(ds), ds[0]
    (2, (tensor([0, 1, 2, 3]), tensor([1, 2, 3, 4])))
    """

    def __init__(self, ids, block_size: int, stride: int | None = None):
        if hasattr(ids, "numpy"):
            ids = (ids.detach() if hasattr(ids, "detach") else ids).numpy()
        self.ids = np.ascontiguousarray(np.asarray(ids, dtype=np.int64)).reshape(-1)
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive int, got {block_size!r}")
        stride = block_size if stride is None else stride
        if not isinstance(stride, int) or stride < 1:
            raise ValueError(f"stride must be a positive int, got {stride!r}")
        if len(self.ids) < block_size + 1:
            raise ValueError(
                f"a block of {block_size} tokens needs at least {block_size + 1} ids "
                f"(one more for the shifted target), got {len(self.ids)}"
            )
        self.block_size = block_size
        self.stride = stride

    def __len__(self) -> int:
        return (len(self.ids) - self.block_size - 1) // self.stride + 1

    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(
                f"LanguageModelDataset indices must be integers, not {type(index).__name__}"
            )
        k = int(index) + n if index < 0 else int(index)
        if not 0 <= k < n:
            raise IndexError(
                f"LanguageModelDataset index {int(index)} is out of range for length {n}"
            )
        s = k * self.stride
        window = self.ids[s : s + self.block_size + 1]
        # Copies of the window (block_size + 1 ids), so a sample never pins or aliases the corpus.
        return tl.tensor(window[:-1]), tl.tensor(window[1:])
