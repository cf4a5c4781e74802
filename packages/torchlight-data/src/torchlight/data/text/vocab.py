"""WordVocab: a word-level vocabulary with PAD/UNK/SOS/EOS specials.

The usual vocabulary of a word-level classifier or a seq2seq translation model: lowercase,
split into words and punctuation with a regex, keep the words seen at least ``min_freq`` times
(at most ``max_size`` of them), map everything else to ``<unk>``.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from ..errors import TokenizerError
from .char import as_id_list
from .serialization import FORMAT_VERSION, read_json, write_json

__all__ = ["WordVocab", "word_tokenize", "PAD", "UNK", "SOS", "EOS", "SPECIALS"]

PAD, UNK, SOS, EOS = "<pad>", "<unk>", "<sos>", "<eos>"
# Fixed positions: PAD is 0 so that zero-filled padding is padding, whatever the corpus.
SPECIALS = (PAD, UNK, SOS, EOS)

# A word is a run of letters/digits, with inner apostrophes kept ("don't", "l'homme"); every other
# non-space character is a token of its own. ``\w`` is Unicode-aware, so French and German work.
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def word_tokenize(text: str, lower: bool = True, normalize: bool = True) -> list[str]:
    """Split ``text`` into words and punctuation marks.

    ``normalize`` applies Unicode NFKC first (so the narrow no-break spaces of French typography
    become plain spaces, and ligatures split), ``lower`` lowercases.

    >>> from torchlight.data.text import word_tokenize
    >>> word_tokenize("Don't stop, Ma\u202fAnn!")
    ["don't", 'stop', ',', 'ma', 'ann', '!']
    """
    if normalize:
        text = unicodedata.normalize("NFKC", text)
    if lower:
        text = text.lower()
    return _WORD_RE.findall(text)


class WordVocab:
    """Token <-> id mapping; ids 0..3 are ``<pad>``, ``<unk>``, ``<sos>``, ``<eos>``.

    Build with :meth:`build`; the remaining ids go to words by decreasing frequency, ties broken
    alphabetically, so the same corpus always yields the same ids.
    """

    TYPE = "word"
    pad_id, unk_id, sos_id, eos_id = 0, 1, 2, 3

    def __init__(self, tokens: Iterable[str], lower: bool = True, normalize: bool = True):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIALS:
            raise TokenizerError(f"WordVocab: the first four tokens must be {SPECIALS}")
        self.itos: list[str] = tokens
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(tokens)}
        if len(self.stoi) != len(tokens):
            raise TokenizerError("WordVocab: duplicate tokens in the vocabulary")
        self.lower = lower
        self.normalize = normalize
        self.counts: dict[str, int] = {}  # corpus frequencies, filled by build() (not saved)

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        min_freq: int = 1,
        max_size: int | None = None,
        lower: bool = True,
        normalize: bool = True,
    ) -> WordVocab:
        """Count the words of ``texts`` and keep the frequent ones.

        ``max_size`` bounds the total vocabulary size, specials included.
        """
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < len(SPECIALS):
            raise ValueError(f"max_size must be at least {len(SPECIALS)} (the specials)")
        if isinstance(texts, str):
            texts = [texts]  # a lone string would otherwise be iterated character by character
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(word_tokenize(text, lower, normalize))
        for special in SPECIALS:
            counts.pop(special, None)
        words = sorted(
            (w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w)
        )
        if max_size is not None:
            words = words[: max_size - len(SPECIALS)]
        vocab = cls(list(SPECIALS) + words, lower=lower, normalize=normalize)
        vocab.counts = {w: counts[w] for w in words}
        return vocab

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def vocab_size(self) -> int:
        """Number of tokens, special tokens included."""
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        """The id of ``token``, or ``unk_id`` for an unknown token."""
        return self.stoi.get(token, self.unk_id)

    def tokenize(self, text: str) -> list[str]:
        """``text`` split into word tokens as this vocabulary was built (lower-cased and normalised if
        it was); what :meth:`encode` looks up.
        """
        return word_tokenize(text, self.lower, self.normalize)

    def encode(self, text: str, add_sos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids of the tokens of ``text``, optionally framed by ``<sos>`` ... ``<eos>``."""
        get, unk = self.stoi.get, self.unk_id
        ids = [get(t, unk) for t in self.tokenize(text)]
        if add_sos:
            ids.insert(0, self.sos_id)
        if add_eos:
            ids.append(self.eos_id)
        return ids

    def lookup_tokens(self, ids) -> list[str]:
        """The token of each id in ``ids`` (a list or a 1-d integer tensor), specials included."""
        n = len(self.itos)
        out = []
        for i in as_id_list(ids):
            if not 0 <= i < n:
                raise TokenizerError(f"WordVocab: id {i} out of range for vocabulary size {n}")
            out.append(self.itos[i])
        return out

    def decode(self, ids, skip_specials: bool = True, stop_at_eos: bool = True) -> str:
        """Tokens joined by spaces; ``<pad>``/``<sos>``/``<eos>`` dropped, ``<unk>`` kept.

        With ``stop_at_eos`` everything after the first ``<eos>`` is ignored (what a greedy
        decoder wants). Word tokenization is lossy, so this is not an exact inverse of encode.
        """
        out = []
        for i, tok in zip(as_id_list(ids), self.lookup_tokens(ids)):
            if i == self.eos_id and stop_at_eos:
                break
            if skip_specials and i in (self.pad_id, self.sos_id, self.eos_id):
                continue
            out.append(tok)
        return " ".join(out)

    def to_dict(self) -> dict:
        """Everything needed to rebuild this vocabulary as plain JSON-able values (with a ``type`` and a
        format ``version``).
        """
        return {
            "type": self.TYPE,
            "version": FORMAT_VERSION,
            "tokens": self.itos,
            "lower": self.lower,
            "normalize": self.normalize,
        }

    @classmethod
    def from_dict(cls, payload: dict) -> WordVocab:
        """Rebuild a vocabulary from :meth:`to_dict`'s output; raises
        :class:`~torchlight.data.TokenizerError` naming a missing field.
        """
        try:
            return cls(payload["tokens"], lower=payload["lower"], normalize=payload["normalize"])
        except KeyError as exc:
            raise TokenizerError(f"WordVocab file lacks the field {exc}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary to ``path`` as JSON (see :meth:`load`)."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> WordVocab:
        """Read a vocabulary written by :meth:`save`; the file's ``type`` must match."""
        return cls.from_dict(read_json(path, cls.TYPE))

    def __eq__(self, other):
        return isinstance(other, WordVocab) and (self.itos, self.lower, self.normalize) == (
            other.itos,
            other.lower,
            other.normalize,
        )

    def __repr__(self):
        return f"WordVocab(size={len(self)})"
