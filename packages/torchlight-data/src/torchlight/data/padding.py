"""Batching variable-length sequences: padding, lengths and masks.

Token-id sequences of sentences differ in length; a batch needs one rectangle. :func:`pad_sequence`
builds it, :func:`lengths_to_mask` says which cells are real, and :class:`PadCollate` is a
ready-made ``collate_fn`` doing both for ``(sequence, label)``-style samples.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import torchlight as tl

from .collate import default_collate
from .errors import CollateError

__all__ = ["pad_sequence", "lengths_to_mask", "sequence_lengths", "PadCollate"]


def _as_tensor(seq):
    if isinstance(seq, tl.Tensor):
        return seq
    if isinstance(seq, np.ndarray):
        return tl.from_numpy(np.ascontiguousarray(seq))
    arr = np.asarray(seq)
    if arr.size == 0:
        arr = arr.astype(np.int64)  # an empty token list is still a list of token ids
    return tl.tensor(arr)


def _host(t) -> np.ndarray:
    return (t.detach() if hasattr(t, "detach") else t).numpy()


def pad_sequence(
    sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"
):
    """Stack sequences of shapes ``(L_i, *rest)`` into ``(L_max, B, *rest)`` (``(B, L_max, *rest)``
    with ``batch_first``), filling with ``padding_value``; as ``torch.nn.utils.rnn.pad_sequence``.

    Accepts tensors, numpy arrays or lists of numbers; the result takes the promoted dtype of the
    non-empty inputs. ``padding_side="left"`` right-aligns the sequences (for decoder prompts).
    When an input requires grad the result is built from differentiable ``cat``/``stack`` so
    gradients flow back to the unpadded parts; otherwise it is one numpy fill.

    >>> from torchlight.data import pad_sequence
    >>> pad_sequence([tl.tensor([1, 2, 3]), tl.tensor([4])], batch_first=True)
    tensor([[1, 2, 3],
            [4, 0, 0]])
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    seqs = [_as_tensor(s) for s in sequences]
    if not seqs:
        raise ValueError("pad_sequence needs at least one sequence")
    if any(len(s.shape) == 0 for s in seqs):
        raise CollateError("pad_sequence: sequences must have at least one dimension")
    rest = tuple(seqs[0].shape[1:])
    for k, s in enumerate(seqs):
        if tuple(s.shape[1:]) != rest:
            raise CollateError(
                f"pad_sequence: sequence {k} has trailing shape {tuple(s.shape[1:])}, "
                f"sequence 0 has {rest}; only the first dimension may differ"
            )
    lengths = [s.shape[0] for s in seqs]
    max_len = max(lengths)
    nonempty = [s for s in seqs if s.shape[0] > 0] or seqs
    np_dtype = np.result_type(*[_host(s).dtype for s in nonempty])

    if any(getattr(s, "requires_grad", False) for s in seqs):
        dtype = tl.float64 if np_dtype == np.float64 else tl.float32
        rows = []
        for s, n in zip(seqs, lengths):
            fill = tl.zeros((max_len - n, *rest), dtype=dtype) + padding_value
            parts = [s, fill] if padding_side == "right" else [fill, s]
            rows.append(tl.cat(parts, 0))
        return tl.stack(rows, 0 if batch_first else 1)

    out = np.full((len(seqs), max_len, *rest), padding_value, dtype=np_dtype)
    for b, (s, n) in enumerate(zip(seqs, lengths)):
        if n:
            if padding_side == "right":
                out[b, :n] = _host(s)
            else:
                out[b, max_len - n :] = _host(s)
    if not batch_first:
        out = np.ascontiguousarray(out.swapaxes(0, 1))
    return tl.from_numpy(out)


def sequence_lengths(sequences):
    """The lengths of ``sequences`` as an int64 tensor of shape ``(B,)``.

    >>> from torchlight.data import sequence_lengths
    >>> sequence_lengths([tl.tensor([1, 2, 3]), tl.tensor([4])])
    tensor([3, 1])
    """
    return tl.tensor(
        [len(s) if not hasattr(s, "shape") else s.shape[0] for s in sequences], dtype=tl.int64
    )


def lengths_to_mask(lengths, max_len: int | None = None, padding_side: str = "right"):
    """Bool mask ``(B, max_len)``, True where a position holds a real element.

    ``max_len`` defaults to ``max(lengths)``. With ``padding_side="left"`` the True cells are the
    last ``length`` positions of each row, matching a left-padded batch.

    >>> from torchlight.data import lengths_to_mask
    >>> lengths_to_mask(tl.tensor([3, 1]))
    tensor([[ True,  True,  True],
            [ True, False, False]])
    """
    if hasattr(lengths, "numpy"):
        lengths = _host(lengths)
    lens = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if np.any(lens < 0):
        raise ValueError("lengths must be non-negative")
    if max_len is None:
        max_len = int(lens.max()) if lens.size else 0
    elif lens.size and max_len < lens.max():
        raise ValueError(f"max_len={max_len} is shorter than the longest length {int(lens.max())}")
    pos = np.arange(max_len)[None, :]
    if padding_side == "right":
        mask = pos < lens[:, None]
    elif padding_side == "left":
        mask = pos >= (max_len - lens)[:, None]
    else:
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    return tl.from_numpy(mask)


class PadCollate:
    """A ``collate_fn`` that pads the variable-length fields of each sample.

    Samples are tuples (or a bare sequence, treated as field 0). Each field listed in ``fields``
    becomes a pair ``(padded, lengths)``: ``padded`` of shape ``(B, L_max, ...)`` (with
    ``batch_first``) and ``lengths`` an int64 ``(B,)`` tensor, ready for :func:`lengths_to_mask`;
    the other fields go through :func:`default_collate`. A class rather than a closure so that it
    pickles into DataLoader worker processes::

        loader = DataLoader(pairs, batch_size=32, collate_fn=PadCollate(fields=(0, 1)))
        for (src, src_len), (tgt, tgt_len) in loader: ...

    >>> from torchlight.data import PadCollate
    >>> collate = PadCollate(fields=(0,))
    >>> (tokens, lengths), labels = collate([(tl.tensor([1, 2]), 0), (tl.tensor([3]), 1)])
    >>> tokens, lengths, labels
    (tensor([[1, 2],
            [3, 0]]), tensor([2, 1]), tensor([0, 1]))
    """

    def __init__(
        self,
        fields: Sequence[int] = (0,),
        padding_value: float = 0,
        batch_first: bool = True,
        padding_side: str = "right",
    ):
        self.fields = tuple(fields)
        self.padding_value = padding_value
        self.batch_first = batch_first
        self.padding_side = padding_side

    def _pad(self, column):
        padded = pad_sequence(column, self.batch_first, self.padding_value, self.padding_side)
        return padded, sequence_lengths(column)

    def __call__(self, batch):
        if not batch:
            raise CollateError("PadCollate: cannot collate an empty batch")
        if not isinstance(batch[0], tuple):
            if self.fields != (0,):
                raise CollateError(
                    f"PadCollate(fields={self.fields}) needs tuple samples, got "
                    f"{type(batch[0]).__name__}"
                )
            return self._pad(batch)
        width = len(batch[0])
        bad = [f for f in self.fields if not -width <= f < width]
        if bad:
            raise CollateError(
                f"PadCollate: fields {bad} out of range for samples of {width} fields"
            )
        fields = {f % width for f in self.fields}
        out = []
        for k in range(width):
            column = [sample[k] for sample in batch]
            out.append(self._pad(column) if k in fields else default_collate(column))
        return tuple(out)

    def __repr__(self):
        return (
            f"PadCollate(fields={self.fields}, padding_value={self.padding_value}, "
            f"batch_first={self.batch_first}, padding_side={self.padding_side!r})"
        )
