"""The UCI sentences, the fixed train/test split, and the two input encodings the models read.

Split (fixed, so results compare with the reference project): ``RandomState(0).permutation(3000)``,
the first 2,400 indices are the training pool and the last 600 the test set. The validation set
used for model selection is carved out of the 2,400 (``val_fraction`` of them, a second seeded
permutation); the test sentences are never looked at by ``train.py``.

Encodings (everything is fitted on the *training fold* only, never on validation or test text):

* **token ids** (``--model mean`` / ``cnn``): ``WordVocab`` word ids, padded with ``<pad>`` = 0;
  a batch is ``(ids (B, L) int64, lengths (B,))``.
* **n-gram bag** (``--model bag``): each sentence becomes the set of its word n-grams
  (``1..word_ngrams``) and character n-grams (``char_ngrams``, taken inside each space-padded
  word, as scikit-learn's ``char_wb``), each feature weighted by sublinear TF-IDF,
  ``(1 + log tf) · idf``, and the sentence's weights L2-normalised. A batch is
  ``(ids (B, L), weights (B, L))`` with weight 0 on padding, so ``Σ_l w_l E[id_l]`` is exactly a
  sparse ``x · E`` product, done with ``Embedding`` + a weighted sum.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from torchlight.data import WordVocab
from torchlight.data.datasets import checkout_data_root, sentiment_sentences
from torchlight.data.text.vocab import word_tokenize

N_TRAIN_POOL = 2400


@dataclass
class Split:
    train: list  # list of Sentence
    val: list
    test: list
    train_idx: np.ndarray  # indices into the 3,000 sentences
    val_idx: np.ndarray
    test_idx: np.ndarray


def load_split(val_fraction: float = 0.1, val_seed: int = 0) -> Split:
    """The 3,000 sentences split as the reference project did, plus a validation fold."""
    sents = sentiment_sentences(root=checkout_data_root(__file__), progress=False)
    if len(sents) != 3000:
        raise RuntimeError(f"expected 3,000 sentences, got {len(sents)}")
    perm = np.random.RandomState(0).permutation(len(sents))
    pool, test_idx = perm[:N_TRAIN_POOL], perm[N_TRAIN_POOL:]
    n_val = int(round(val_fraction * len(pool)))
    inner = np.random.RandomState(1000 + val_seed).permutation(len(pool))
    val_idx, train_idx = pool[inner[:n_val]], pool[inner[n_val:]]
    pick = lambda idx: [sents[i] for i in idx]  # noqa: E731
    return Split(pick(train_idx), pick(val_idx), pick(test_idx), train_idx, val_idx, test_idx)


# ---- n-gram features ---------------------------------------------------------------------------


def ngram_features(text: str, word_ngrams: int, char_ngrams: tuple[int, int] | None) -> list[str]:
    """The feature strings of one sentence (with repeats: counts become term frequencies)."""
    words = word_tokenize(text)
    feats = []
    for n in range(1, word_ngrams + 1):
        feats += ["w:" + " ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    if char_ngrams:
        lo, hi = char_ngrams
        for w in words:
            padded = f" {w} "
            for n in range(lo, hi + 1):
                feats += ["c:" + padded[i : i + n] for i in range(len(padded) - n + 1)]
    return feats


class NgramFeaturizer:
    """Feature vocabulary + idf, fitted on training texts; id 0 is padding."""

    def __init__(
        self,
        word_ngrams: int = 2,
        char_ngrams: tuple[int, int] | None = (2, 5),
        min_df: int = 1,
        nb: bool = False,
    ):
        self.word_ngrams, self.char_ngrams, self.min_df, self.nb = (
            word_ngrams,
            char_ngrams,
            min_df,
            nb,
        )
        self.itos: list[str] = ["<pad>"]
        self.stoi: dict[str, int] = {}
        self.idf = np.zeros(1, dtype=np.float32)
        self.ratio = np.ones(1, dtype=np.float32)

    def fit(self, texts, labels=None):
        df, df_pos = Counter(), Counter()
        for i, t in enumerate(texts):
            feats = set(ngram_features(t, self.word_ngrams, self.char_ngrams))
            df.update(feats)
            if labels is not None and labels[i] == 1:
                df_pos.update(feats)
        kept = sorted(f for f, c in df.items() if c >= self.min_df)
        self.itos = ["<pad>"] + kept
        self.stoi = {f: i for i, f in enumerate(self.itos)}
        n = len(texts)
        # scikit-learn's smooth idf: log((1 + n) / (1 + df)) + 1
        self.idf = np.array(
            [0.0] + [math.log((1 + n) / (1 + df[f])) + 1.0 for f in kept], dtype=np.float32
        )
        self.ratio = np.ones(len(self.itos), dtype=np.float32)
        if self.nb:
            # NB log-count ratio (Wang & Manning 2012) over binarised features, add-one smoothed:
            # r_f = log((p_f / |p|_1) / (q_f / |q|_1)), p_f = 1 + #positive sentences holding f
            if labels is None:
                raise ValueError("NB weighting needs the training labels")
            p = np.array([1.0 + df_pos[f] for f in kept])
            q = np.array([1.0 + df[f] - df_pos[f] for f in kept])
            self.ratio[1:] = np.log((p / p.sum()) / (q / q.sum()))
        return self

    def __len__(self):
        return len(self.itos)

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        counts = Counter(
            f for f in ngram_features(text, self.word_ngrams, self.char_ngrams) if f in self.stoi
        )
        if not counts:
            return np.zeros(1, np.int64), np.zeros(1, np.float32)
        ids = np.array([self.stoi[f] for f in counts], dtype=np.int64)
        tf = np.array([1.0 + math.log(c) for c in counts.values()], dtype=np.float32)
        w = tf * self.idf[ids]
        # L2-normalised TF-IDF, then (with nb) scaled by each feature's NB ratio
        return ids, (w / np.linalg.norm(w) * self.ratio[ids]).astype(np.float32)

    def to_dict(self) -> dict:
        return {
            "word_ngrams": self.word_ngrams,
            "char_ngrams": list(self.char_ngrams) if self.char_ngrams else None,
            "min_df": self.min_df,
            "nb": self.nb,
            "itos": self.itos,
            "idf": self.idf.tolist(),
            "ratio": self.ratio.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> NgramFeaturizer:
        f = cls(
            d["word_ngrams"],
            tuple(d["char_ngrams"]) if d["char_ngrams"] else None,
            d["min_df"],
            d["nb"],
        )
        f.itos = list(d["itos"])
        f.stoi = {s: i for i, s in enumerate(f.itos) if i > 0}
        f.idf = np.asarray(d["idf"], dtype=np.float32)
        f.ratio = np.asarray(d["ratio"], dtype=np.float32)
        return f


# ---- encoders: text -> padded numpy arrays -------------------------------------------------------


class Encoder:
    """Turns sentences into padded ``(ids, aux)`` numpy arrays for one model family.

    ``kind="tokens"``: ``aux`` is the lengths ``(N,)``; ``kind="bag"``: ``aux`` is the weights ``(N, L)``.
    """

    def __init__(
        self,
        kind: str,
        vocab: WordVocab | None = None,
        featurizer: NgramFeaturizer | None = None,
        max_len: int = 64,
    ):
        self.kind, self.vocab, self.featurizer, self.max_len = kind, vocab, featurizer, max_len

    @classmethod
    def fit(
        cls,
        kind: str,
        texts,
        labels=None,
        *,
        min_freq: int = 1,
        word_ngrams: int = 2,
        char_ngrams: tuple[int, int] | None = (2, 5),
        min_df: int = 1,
        nb: bool = False,
        max_len: int = 64,
    ) -> Encoder:
        if kind == "tokens":
            return cls(kind, vocab=WordVocab.build(texts, min_freq=min_freq), max_len=max_len)
        if kind == "bag":
            return cls(
                kind,
                featurizer=NgramFeaturizer(word_ngrams, char_ngrams, min_df, nb).fit(texts, labels),
            )
        raise ValueError(f"unknown encoder kind {kind!r}")

    @property
    def num_ids(self) -> int:
        return len(self.vocab) if self.kind == "tokens" else len(self.featurizer)

    def encode(self, texts) -> tuple[np.ndarray, np.ndarray]:
        if self.kind == "tokens":
            seqs = [self.vocab.encode(t)[: self.max_len] or [self.vocab.unk_id] for t in texts]
            lengths = np.array([len(s) for s in seqs], dtype=np.int64)
            ids = np.zeros((len(seqs), int(lengths.max())), dtype=np.int64)
            for i, s in enumerate(seqs):
                ids[i, : len(s)] = s
            return ids, lengths
        pairs = [self.featurizer.encode(t) for t in texts]
        width = max(len(p[0]) for p in pairs)
        ids = np.zeros((len(pairs), width), dtype=np.int64)
        weights = np.zeros((len(pairs), width), dtype=np.float32)
        for i, (a, w) in enumerate(pairs):
            ids[i, : len(a)], weights[i, : len(w)] = a, w
        return ids, weights

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "max_len": self.max_len}
        if self.vocab is not None:
            d["vocab"] = self.vocab.to_dict()
        if self.featurizer is not None:
            d["featurizer"] = self.featurizer.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Encoder:
        return cls(
            d["kind"],
            vocab=WordVocab.from_dict(d["vocab"]) if "vocab" in d else None,
            featurizer=NgramFeaturizer.from_dict(d["featurizer"]) if "featurizer" in d else None,
            max_len=d["max_len"],
        )


def batches(n: int, batch_size: int, rng: np.random.Generator | None):
    """Index arrays of the batches of one epoch (shuffled when ``rng`` is given)."""
    order = rng.permutation(n) if rng is not None else np.arange(n)
    for s in range(0, n, batch_size):
        yield order[s : s + batch_size]


def trim(ids: np.ndarray, aux: np.ndarray, idx: np.ndarray, kind: str):
    """Rows ``idx`` of the padded arrays, cut to the longest row of this batch."""
    b_ids, b_aux = ids[idx], aux[idx]
    if kind == "tokens":
        width = int(b_aux.max())
    else:
        nz = (b_ids != 0).any(axis=0)
        width = int(np.nonzero(nz)[0].max()) + 1 if nz.any() else 1
        b_aux = b_aux[:, :width]
    return b_ids[:, :width], b_aux
