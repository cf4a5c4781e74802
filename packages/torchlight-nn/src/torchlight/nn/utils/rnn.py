"""``torchlight.nn.utils.rnn``: variable-length sequences as one padded or packed batch.

A *packed* sequence stores only the real steps of a batch of sequences sorted by length
(longest first), time-major: ``data`` holds step 0 of every sequence, then step 1 of those
longer than 1, and so on; ``batch_sizes[t]`` says how many sequences are still running at step
``t``. ``sorted_indices`` / ``unsorted_indices`` map between the caller's batch order and the
sorted one. The recurrent layers accept a :class:`PackedSequence` and never compute past a
sequence's end, so their final states are those of each sequence's last real step.

``pad_sequence`` is the differentiable version (built from ``tl.pad`` and ``tl.stack``, so
gradients reach every sequence); :func:`torchlight.data.pad_sequence` is the data-loading
version with a numpy fast path for collation. Both follow ``torch.nn.utils.rnn.pad_sequence``.
"""

from typing import NamedTuple

import numpy as np

import torchlight as tl

__all__ = [
    "pad_sequence",
    "unpad_sequence",
    "PackedSequence",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pack_sequence",
    "unpack_sequence",
]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes ``(L_i, *rest)`` into ``(L_max, B, *rest)`` (``(B, L_max, *rest)``
    with ``batch_first``), filling with ``padding_value`` on the ``padding_side``.

    >>> from torchlight.nn.utils.rnn import pad_sequence
    >>> pad_sequence([tl.tensor([1, 2, 3]), tl.tensor([4])], batch_first=True).tolist()
    [[1, 2, 3], [4, 0, 0]]
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    seqs = list(sequences)
    if not seqs:
        raise ValueError("pad_sequence needs at least one sequence")
    rest = tuple(seqs[0].shape[1:])
    for s in seqs:
        if s.ndim == 0 or tuple(s.shape[1:]) != rest:
            raise tl.ShapeError(
                f"pad_sequence: every sequence must be (L_i, *{rest}), got shape {s.shape}"
            )
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        missing = longest - s.shape[0]
        # tl.pad lists (left, right) pairs from the last dim backwards; dim 0 is the last pair
        pairs = [0, 0] * len(rest) + ([0, missing] if padding_side == "right" else [missing, 0])
        padded.append(tl.pad(s, pairs, value=padding_value) if missing else s)
    return tl.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of :func:`pad_sequence` (right padding): a list of ``(L_i, *rest)`` tensors.

    >>> from torchlight.nn.utils.rnn import unpad_sequence
    >>> [t.tolist() for t in unpad_sequence(tl.tensor([[1, 2], [3, 0]]), [2, 1], batch_first=True)]
    [[1, 2], [3]]
    """
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lengths = lengths.tolist() if isinstance(lengths, tl.Tensor) else list(lengths)
    return [x[i, : int(n)] for i, n in enumerate(lengths)]


class PackedSequence(NamedTuple):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)``: see the module docstring.
    ``data`` is ``(sum of lengths, *)``; ``batch_sizes`` an int64 tensor with one entry per
    step; the index tensors are ``None`` when the batch was already sorted.

    >>> from torchlight.nn.utils.rnn import pack_sequence
    >>> p = pack_sequence([tl.tensor([1, 2, 3]), tl.tensor([4, 5])])
    >>> p.data.tolist(), p.batch_sizes.tolist()
    ([1, 4, 2, 5, 3], [2, 2, 1])
    """

    data: tl.Tensor
    batch_sizes: tl.Tensor
    sorted_indices: tl.Tensor | None = None
    unsorted_indices: tl.Tensor | None = None

    def to(self, *args, **kwargs):
        """The same packing with ``data`` moved/cast by ``Tensor.to``."""
        return self._replace(data=self.data.to(*args, **kwargs))


def _as_lengths(lengths):
    arr = np.asarray(
        lengths.tolist() if isinstance(lengths, tl.Tensor) else lengths, dtype=np.int64
    ).reshape(-1)
    if arr.size and arr.min() <= 0:
        raise ValueError("pack_padded_sequence: every sequence needs a length >= 1")
    return arr


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose sequence ``b``
    has ``lengths[b]`` real steps. With ``enforce_sorted`` the lengths must be decreasing;
    otherwise the batch is sorted here and the permutation kept in the result.

    >>> from torchlight.nn.utils.rnn import pack_padded_sequence
    >>> x = tl.tensor([[1, 2, 0], [3, 4, 5]])
    >>> pack_padded_sequence(x, [2, 3], batch_first=True, enforce_sorted=False).data.tolist()
    [3, 1, 4, 2, 5]
    """
    lens = _as_lengths(lengths)
    x = input.transpose(0, 1) if batch_first else input
    if len(lens) != x.shape[1]:
        raise tl.ShapeError(
            f"pack_padded_sequence: {len(lens)} lengths for a batch of {x.shape[1]}"
        )
    if lens.max() > x.shape[0]:
        raise tl.ShapeError(
            f"pack_padded_sequence: a length of {lens.max()} exceeds the {x.shape[0]} padded steps"
        )
    sorted_indices = unsorted_indices = None
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise ValueError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                "to sidestep this requirement if you do not need ONNX exportability."
            )
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = tl.tensor(order, device=x.device)
        unsorted_indices = tl.tensor(np.argsort(order, kind="stable"), device=x.device)
        x = x.index_select(1, sorted_indices)
        lens = lens[order]
    batch_sizes = np.array([(lens > t).sum() for t in range(int(lens[0]))], dtype=np.int64)
    data = tl.cat([x[t, : int(bs)] for t, bs in enumerate(batch_sizes)], 0)
    return PackedSequence(data, tl.tensor(batch_sizes), sorted_indices, unsorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)`` in the caller's batch
    order, padded to the longest sequence (or ``total_length``).

    >>> from torchlight.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> padded, lengths = pad_packed_sequence(pack_sequence([tl.tensor([1, 2]), tl.tensor([3])]), batch_first=True)
    >>> padded.tolist(), lengths.tolist()
    ([[1, 2], [3, 0]], [2, 1])
    """
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    steps, batch = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"Expected total_length to be at least the length of the longest sequence ({steps}), "
                f"but got total_length={total_length}"
            )
        steps = total_length
    rows, offset = [], 0
    rest = tuple(data.shape[1:])
    for t in range(steps):
        bs = batch_sizes[t] if t < len(batch_sizes) else 0
        row = data[offset : offset + bs]
        offset += bs
        if bs < batch:
            row = tl.pad(row, [0, 0] * len(rest) + [0, batch - bs], value=padding_value)
        rows.append(row)
    padded = tl.stack(rows, 0)  # (T, B, *) in sorted order
    counts = np.array(batch_sizes)
    lengths = np.array([(counts > b).sum() for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tl.tensor(lengths)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of ``(L_i, *)`` tensors (decreasing lengths unless ``enforce_sorted=False``).

    >>> from torchlight.nn.utils.rnn import pack_sequence
    >>> pack_sequence([tl.tensor([1]), tl.tensor([2, 3])], enforce_sorted=False).batch_sizes.tolist()
    [2, 1]
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of ``(L_i, *)`` tensors a :class:`PackedSequence` holds, in the caller's order.

    >>> from torchlight.nn.utils.rnn import pack_sequence, unpack_sequence
    >>> [t.tolist() for t in unpack_sequence(pack_sequence([tl.tensor([1, 2]), tl.tensor([3])]))]
    [[1, 2], [3]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
