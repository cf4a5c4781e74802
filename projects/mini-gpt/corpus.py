"""The data pipeline: tiny Shakespeare → tokens → (input, target) batches shifted by one.

* The text comes from :func:`torchlight.data.datasets.tiny_shakespeare` and is cut once, the first
  90% of the characters for training and the last 10% for validation (a contiguous cut, so
  validation measures held-out passages, not shuffled windows of training text).
* ``tokenizer="char"`` (default) maps each of the 65 characters to an id; ``"bpe"`` trains
  torchlight-data's byte-level BPE tokenizer on the *training* split (vocab ~1,000) and caches it.
* A batch is ``B`` windows of ``block_size + 1`` consecutive tokens: the input is the first
  ``block_size`` of them and the target the last ``block_size``, so target ``y[t] = x[t+1]``.
* Losses are reported per token in nats and, to compare tokenizers, in *bits per character*:
  ``bpc = loss_nats_per_token * n_tokens / n_chars / ln 2`` over the validation split.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import torchlight as tl

__all__ = ["Corpus", "load_corpus", "make_batch", "random_starts", "bits_per_char"]


@dataclass
class Corpus:
    tokenizer: object
    kind: str  # "char" or "bpe"
    train_ids: np.ndarray  # int64 token ids of the training split
    val_ids: np.ndarray
    train_chars: int
    val_chars: int

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def val_tokens_per_char(self) -> float:
        return len(self.val_ids) / self.val_chars

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text))

    def decode(self, ids) -> str:
        return self.tokenizer.decode([int(i) for i in ids])


def _load_tokenizer(path: Path):
    from torchlight.data.text.serialization import load_tokenizer

    return load_tokenizer(path)


def load_corpus(
    tokenizer: str = "char",
    bpe_vocab: int = 1000,
    cache_dir: str | os.PathLike | None = None,
    root: str | None = None,
    tokenizer_path: str | os.PathLike | None = None,
) -> Corpus:
    """Load, split 90/10 and tokenize tiny Shakespeare.

    ``tokenizer_path``: reuse a saved tokenizer (a resumed run must keep its vocabulary).
    ``cache_dir``: where a freshly trained BPE tokenizer is saved/reused (``bpe-<vocab>.json``).
    """
    from torchlight.data import BPETokenizer, CharTokenizer
    from torchlight.data.datasets import checkout_data_root, split_text, tiny_shakespeare

    text = tiny_shakespeare(
        root=root if root is not None else checkout_data_root(__file__), progress=False
    )
    train_text, val_text = split_text(text, val_fraction=0.1)
    if tokenizer_path is not None and Path(tokenizer_path).is_file():
        tok = _load_tokenizer(tokenizer_path)
    elif tokenizer == "char":
        tok = CharTokenizer.from_text(text)  # all 65 characters (the split boundary hides none)
    elif tokenizer == "bpe":
        cached = Path(cache_dir) / f"bpe-{bpe_vocab}.json" if cache_dir is not None else None
        if cached is not None and cached.is_file():
            tok = _load_tokenizer(cached)
        else:
            tok = BPETokenizer()
            tok.train(train_text, vocab_size=bpe_vocab)  # trained on the training split only
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tok.save(cached)
    else:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; use 'char' or 'bpe'")
    kind = "bpe" if type(tok).__name__.lower().startswith("bpe") else "char"
    train_ids = np.asarray(tok.encode(train_text), dtype=np.int64)
    val_ids = np.asarray(tok.encode(val_text), dtype=np.int64)
    return Corpus(tok, kind, train_ids, val_ids, len(train_text), len(val_text))


def random_starts(
    n_tokens: int, batch_size: int, block_size: int, rng: np.random.Generator
) -> np.ndarray:
    """``batch_size`` window starts such that ``block_size + 1`` tokens fit after each."""
    return rng.integers(0, n_tokens - block_size - 1, size=batch_size, endpoint=True)


def make_batch(ids: np.ndarray, starts, block_size: int, device=None):
    """Inputs ``x[b] = ids[s : s+T]`` and targets ``y[b] = ids[s+1 : s+T+1]`` (shift by one)."""
    offsets = np.asarray(starts, dtype=np.int64)[:, None] + np.arange(block_size + 1)
    windows = ids[offsets]  # (B, T + 1)
    x = tl.tensor(np.ascontiguousarray(windows[:, :-1]), device=device)
    y = tl.tensor(np.ascontiguousarray(windows[:, 1:]), device=device)
    return x, y


def bits_per_char(loss_nats_per_token: float, tokens_per_char: float) -> float:
    """Convert a per-token loss in nats to bits per character of the underlying text."""
    return loss_nats_per_token * tokens_per_char / math.log(2)
