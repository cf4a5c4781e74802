"""Tatoeba English→French: normalisation, the fixed split, vocabularies and length-bucketed batches.

Normalisation: Unicode NFKC + lowercase (``tatoeba_eng_fra(normalize=True)``), then
:func:`torchlight.data.text.vocab.word_tokenize` (words with inner apostrophes kept, every
punctuation mark a token). **French accents are kept**: "été" and "ete" are different words, the
output is real French, and the references BLEU is computed against keep their accents. NFKC turns
the narrow no-break spaces of French typography ("va !") into plain spaces.

Split: the 127,422 pairs with both sides ≤ 8 words are shuffled with ``numpy.random.default_rng(seed)``
(seed 0 by default), then the first ``n_test`` (2,000) are the test set, the next ``n_val`` (2,000)
the validation set and the rest (123,422) the training set. The test pairs are only read by
``post.py``; every choice (checkpoint, hyper-parameters) uses the validation set.

Vocabularies are built from the training split only, with a min-frequency cut
(``src_min_freq`` / ``tgt_min_freq``); rarer words map to ``<unk>``.

Sequences: the source is ``tokens + <eos>``; the decoder input is ``<sos> + tokens`` and the target
``tokens + <eos>`` (the same length). Batches are bucketed by length: the training order is
shuffled, cut into pools of ``pool`` batches, each pool sorted by (source, target) length and
cut into batches, and the batches shuffled again, so a batch holds sentences of about the same
length and little padding is computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from torchlight.data import pad_sequence
from torchlight.data.datasets import checkout_data_root, tatoeba_eng_fra
from torchlight.data.text import WordVocab
from torchlight.data.text.vocab import word_tokenize

PAD, UNK, SOS, EOS = WordVocab.pad_id, WordVocab.unk_id, WordVocab.sos_id, WordVocab.eos_id


@dataclass
class Splits:
    train: list[tuple[str, str]]
    val: list[tuple[str, str]]
    test: list[tuple[str, str]]


def load_pairs(max_words: int = 8) -> list[tuple[str, str]]:
    """All (english, french) pairs with both sides ≤ ``max_words`` words, NFKC + lowercased."""
    return tatoeba_eng_fra(
        max_words=max_words, root=checkout_data_root(__file__), normalize=True, progress=False
    )


def split_pairs(
    pairs, seed: int = 0, n_val: int = 2000, n_test: int = 2000, max_train: int | None = None
) -> Splits:
    """Shuffle with a fixed seed; test first, then validation, then train (optionally truncated).

    ``max_train`` (``--max-pairs`` for quick runs) only shortens the training split, so the
    validation and test sets of a quick run are the same pairs as a full run's when they fit.
    """
    order = np.random.default_rng(seed).permutation(len(pairs))
    shuffled = [pairs[i] for i in order]
    n_test = min(n_test, len(shuffled) // 5)
    n_val = min(n_val, len(shuffled) // 5)
    test = shuffled[:n_test]
    val = shuffled[n_test : n_test + n_val]
    train = shuffled[n_test + n_val :]
    if max_train is not None:
        train = train[:max_train]
    return Splits(train, val, test)


def build_vocabs(train, src_min_freq: int = 3, tgt_min_freq: int = 5):
    src = WordVocab.build((e for e, _ in train), min_freq=src_min_freq)
    tgt = WordVocab.build((f for _, f in train), min_freq=tgt_min_freq)
    return src, tgt


def reference_text(sentence: str) -> str:
    """A reference as BLEU sees it: the normalised sentence, tokenised, joined by spaces (the
    real words, never ``<unk>``)."""
    return " ".join(word_tokenize(sentence))


@dataclass
class Encoded:
    """Token ids of a split: ``src[i]`` = source + EOS, ``tgt[i]`` = target tokens + EOS."""

    src: list[np.ndarray]
    tgt: list[np.ndarray]

    def __len__(self):
        return len(self.src)


def encode(pairs, src_vocab: WordVocab, tgt_vocab: WordVocab) -> Encoded:
    src = [np.asarray(src_vocab.encode(e, add_eos=True), dtype=np.int64) for e, _ in pairs]
    tgt = [np.asarray(tgt_vocab.encode(f, add_eos=True), dtype=np.int64) for _, f in pairs]
    return Encoded(src, tgt)


@dataclass
class Batch:
    """Time-major ids: ``src (S, N)``, ``dec_in (T, N)`` (SOS + tokens), ``tgt (T, N)`` (tokens + EOS);
    ``index`` are the positions in the split (to find references)."""

    src: np.ndarray
    src_lengths: np.ndarray
    dec_in: np.ndarray
    tgt: np.ndarray
    index: np.ndarray

    @property
    def size(self):
        return self.src.shape[1]

    @property
    def n_tokens(self):
        return int((self.tgt != PAD).sum())


def make_batch(data: Encoded, idx) -> Batch:
    idx = np.asarray(idx, dtype=np.int64)
    srcs = [data.src[i] for i in idx]
    tgts = [data.tgt[i] for i in idx]
    src = pad_sequence(srcs, padding_value=PAD).numpy()  # (S, N), time-major
    tgt = pad_sequence(tgts, padding_value=PAD).numpy()  # (T, N)
    dec_in = np.full_like(tgt, PAD)
    dec_in[0] = SOS
    # decoder input = SOS followed by the target without its last token (the EOS / padding)
    dec_in[1:] = np.where(tgt[:-1] == EOS, PAD, tgt[:-1])
    lengths = np.array([len(s) for s in srcs], dtype=np.int64)
    return Batch(src, lengths, dec_in, tgt, idx)


def bucketed_batches(
    data: Encoded, batch_size: int, rng: np.random.Generator | None, pool: int = 50
) -> list[np.ndarray]:
    """Index arrays of batches of similar lengths (shuffled when ``rng`` is given, else in order
    of length for evaluation)."""
    n = len(data)
    src_len = np.array([len(s) for s in data.src])
    tgt_len = np.array([len(t) for t in data.tgt])
    if rng is None:
        order = np.lexsort((tgt_len, src_len))
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]
    order = rng.permutation(n)
    batches = []
    span = batch_size * pool
    for start in range(0, n, span):
        chunk = order[start : start + span]
        chunk = chunk[np.lexsort((tgt_len[chunk], src_len[chunk]))]
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    perm = rng.permutation(len(batches))
    return [batches[i] for i in perm]
