"""``torchlight.nn.utils.rnn``: padding variable-length sequences into one batch tensor.

``pad_sequence`` is the differentiable version (built from ``tl.pad`` and ``tl.stack``, so
gradients reach every sequence); :func:`torchlight.data.pad_sequence` is the data-loading
version with a numpy fast path for collation. Both follow ``torch.nn.utils.rnn.pad_sequence``.
"""

import torchlight as tl

__all__ = ["pad_sequence", "unpad_sequence"]


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
            raise tl.ShapeError(f"pad_sequence: every sequence must be (L_i, *{rest}), got shape {s.shape}")
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
