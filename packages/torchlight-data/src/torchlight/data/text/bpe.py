"""BPETokenizer: byte-level byte-pair encoding, trained from text (the GPT-2 recipe).

Text is UTF-8 encoded, so the 256 byte values are the base vocabulary and *any* string is
encodable; training then repeatedly merges the most frequent adjacent pair of tokens into a new
token. Before counting, the text is pre-split by a regex into chunks (words with their leading
space, numbers, punctuation runs, whitespace) and merges never cross a chunk boundary, which keeps
tokens word-like and lets training work on the *unique* chunks with their counts.

Training is incremental: pair counts and a pair -> chunks index are built once; a merge touches only
the chunks that contain the merged pair and updates the counts by difference; a max-heap with lazy
deletion yields the next best pair. Tiny Shakespeare (1.1 MB) to 1,000 tokens takes a few seconds
on one core (``tests-integration/benchmarks/bench_bpe.py`` measures it) instead of the minutes a
recount-everything loop needs.
"""

from __future__ import annotations

import heapq
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from ..errors import TokenizerError
from .char import as_id_list
from .serialization import FORMAT_VERSION, read_json, write_json

__all__ = ["BPETokenizer", "SPLIT_PATTERN"]

# GPT-2's pre-tokenizer written for the stdlib ``re`` (which lacks \p{L}): contractions, letters
# (``[^\W\d_]`` = word characters minus digits and underscore), digits, any other non-space run
# (underscore included), then whitespace. Together the branches cover every character; chunking
# also keeps any gap between matches, so a custom pattern can never lose text.
SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+"""

_CACHE_LIMIT = 200_000  # chunk -> ids memo entries before the memo is reset (bounds memory)


def _merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every non-overlapping occurrence of ``pair`` in ``ids``, left to right."""
    a, b = pair
    out: list[int] = []
    i, n = 0, len(ids)
    while i < n:
        if ids[i] == a and i + 1 < n and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class BPETokenizer:
    """A byte-level BPE tokenizer.

    >>> from torchlight.data.text import BPETokenizer
    >>> tok = BPETokenizer().train("low lower lowest " * 50, vocab_size=260)
    >>> tok.decode(tok.encode("lowest, née")) == "lowest, née"
    True

    ``len(tok)`` is ``256 + len(merges) + len(special_tokens)``; :meth:`train` makes it equal to
    ``vocab_size`` unless the text runs out of pairs to merge first.
    """

    TYPE = "bpe"

    def __init__(
        self,
        merges: Iterable[tuple[int, int]] = (),
        special_tokens: Iterable[str] = (),
        pattern: str = SPLIT_PATTERN,
    ):
        self.pattern = pattern
        self._compiled = re.compile(pattern)
        self._set_merges(list(merges), list(special_tokens))

    def _set_merges(self, merges: list[tuple[int, int]], special_tokens: list[str]) -> None:
        self.merges: list[tuple[int, int]] = []
        self.ranks: dict[tuple[int, int], int] = {}
        self.vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}
        for rank, pair in enumerate(merges):
            a, b = (int(x) for x in pair)
            new_id = 256 + rank
            if not (0 <= a < new_id and 0 <= b < new_id):
                raise TokenizerError(f"BPE merge {rank} refers to an unknown token: {(a, b)}")
            if (a, b) in self.ranks:
                raise TokenizerError(f"BPE merge {(a, b)} appears twice")
            self.merges.append((a, b))
            self.ranks[(a, b)] = new_id
            self.vocab[new_id] = self.vocab[a] + self.vocab[b]
        base = 256 + len(self.merges)
        if len(set(special_tokens)) != len(special_tokens) or any(not s for s in special_tokens):
            raise TokenizerError("BPE special tokens must be distinct non-empty strings")
        self.special_tokens: dict[str, int] = {s: base + i for i, s in enumerate(special_tokens)}
        self._special_ids = {i: s for s, i in self.special_tokens.items()}
        # Longest first, so that a special token that is a prefix of another never wins.
        alternatives = sorted(self.special_tokens, key=len, reverse=True)
        self._special_re = (
            re.compile("|".join(map(re.escape, alternatives))) if alternatives else None
        )
        self._cache: dict[str, list[int]] = {}

    # ---------------------------------------------------------------- training
    def train(
        self, text: str | Iterable[str], vocab_size: int, special_tokens: Iterable[str] = ()
    ) -> BPETokenizer:
        """Learn ``vocab_size - 256 - len(special_tokens)`` merges from ``text``; returns ``self``.

        ``text`` may be one string or an iterable of documents (chunks never span two of them).
        Ties between equally frequent pairs go to the smallest pair of ids, so training is
        deterministic.
        """
        special_tokens = list(special_tokens)
        n_merges = int(vocab_size) - 256 - len(special_tokens)
        if n_merges < 0:
            raise ValueError(
                f"vocab_size={vocab_size} is below the 256 byte tokens plus "
                f"{len(special_tokens)} special token(s)"
            )
        docs = [text] if isinstance(text, str) else list(text)

        chunk_counts: Counter[str] = Counter()
        for doc in docs:
            chunk_counts.update(self._chunks(doc))
        words = [list(chunk.encode("utf-8", "surrogatepass")) for chunk in chunk_counts]
        freqs = list(chunk_counts.values())

        pair_counts: defaultdict[tuple[int, int], int] = defaultdict(int)
        where: defaultdict[tuple[int, int], set[int]] = defaultdict(set)  # pair -> word indices
        for wi, (w, f) in enumerate(zip(words, freqs)):
            for pair in zip(w, w[1:]):
                pair_counts[pair] += f
                where[pair].add(wi)
        heap = [(-c, pair) for pair, c in pair_counts.items()]
        heapq.heapify(heap)

        merges: list[tuple[int, int]] = []
        while len(merges) < n_merges:
            # Pop until an entry matches the pair's current count: older entries are stale (every
            # change pushes a fresh entry, so the live one is still in the heap).
            while heap:
                negc, pair = heapq.heappop(heap)
                if pair_counts.get(pair, 0) == -negc and negc < 0:
                    break
            else:
                break  # no pair left anywhere: the vocabulary stops short of vocab_size
            new_id = 256 + len(merges)
            merges.append(pair)
            changed: set[tuple[int, int]] = set()
            for wi in where.pop(pair, ()):
                w = words[wi]
                new_w = _merge(w, pair, new_id)
                if len(new_w) == len(w):
                    continue  # a stale index entry: the pair left this word in an earlier merge
                f = freqs[wi]
                for p in zip(w, w[1:]):
                    pair_counts[p] -= f
                    changed.add(p)
                for p in zip(new_w, new_w[1:]):
                    pair_counts[p] += f
                    where[p].add(wi)
                    changed.add(p)
                words[wi] = new_w
            for p in changed:
                c = pair_counts[p]
                if c > 0:
                    heapq.heappush(heap, (-c, p))
                else:
                    del pair_counts[p]
        self._set_merges(merges, special_tokens)
        return self

    # ---------------------------------------------------------------- encoding
    def _chunks(self, text: str) -> list[str]:
        """Pre-split ``text``; any text between regex matches is kept as a chunk of its own."""
        out, pos = [], 0
        for m in self._compiled.finditer(text):
            if m.start() > pos:
                out.append(text[pos : m.start()])
            if m.end() > m.start():
                out.append(m.group())
            pos = m.end()
        if pos < len(text):
            out.append(text[pos:])
        return out

    def _encode_chunk(self, chunk: str) -> list[int]:
        cached = self._cache.get(chunk)
        if cached is not None:
            return cached
        try:
            ids = list(chunk.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise TokenizerError(
                f"BPETokenizer: the text contains a lone surrogate {chunk[exc.start]!r}, which "
                "is not valid Unicode and has no UTF-8 encoding"
            ) from None
        ranks = self.ranks
        while len(ids) > 1:
            # The applicable merge learned earliest goes first, exactly as in training.
            best = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, 1 << 62))
            if best not in ranks:
                break
            ids = _merge(ids, best, ranks[best])
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[chunk] = ids
        return ids

    def encode(self, text: str, allow_special: bool = False) -> list[int]:
        """Token ids of ``text``; ``decode(encode(text)) == text`` for every valid string.

        Special tokens in ``text`` are encoded as their ids only with ``allow_special=True``;
        otherwise they are ordinary text (so untrusted input cannot inject them).
        """
        if allow_special and self._special_re is not None:
            out: list[int] = []
            pos = 0
            for m in self._special_re.finditer(text):
                out.extend(self._encode_plain(text[pos : m.start()]))
                out.append(self.special_tokens[m.group()])
                pos = m.end()
            out.extend(self._encode_plain(text[pos:]))
            return out
        return self._encode_plain(text)

    def _encode_plain(self, text: str) -> list[int]:
        out: list[int] = []
        for chunk in self._chunks(text):
            out.extend(self._encode_chunk(chunk))
        return out

    def decode(self, ids, errors: str = "replace") -> str:
        """The text of ``ids``. A sequence that ends inside a multi-byte character (as a sampled
        model may produce) decodes with U+FFFD in its place unless ``errors="strict"``."""
        parts = []
        vocab, specials = self.vocab, self._special_ids
        for i in as_id_list(ids):
            if i in vocab:
                parts.append(vocab[i])
            elif i in specials:
                parts.append(specials[i].encode("utf-8"))
            else:
                raise TokenizerError(
                    f"BPETokenizer: id {i} out of range for vocabulary size {len(self)}"
                )
        return b"".join(parts).decode("utf-8", errors=errors)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for (inspection and debugging)."""
        if token_id in self._special_ids:
            return self._special_ids[token_id].encode("utf-8")
        return self.vocab[token_id]

    @property
    def vocab_size(self) -> int:
        """256 byte tokens + one per merge + the special tokens: the size an embedding table needs."""
        return 256 + len(self.merges) + len(self.special_tokens)

    def __len__(self) -> int:
        return self.vocab_size

    # ---------------------------------------------------------------- persistence
    def to_dict(self) -> dict:
        """Everything needed to rebuild this tokenizer as plain JSON-able values (with a ``type`` and a
        format ``version``).
        """
        return {
            "type": self.TYPE,
            "version": FORMAT_VERSION,
            "pattern": self.pattern,
            "merges": [list(p) for p in self.merges],
            "special_tokens": list(self.special_tokens),
        }

    @classmethod
    def from_dict(cls, payload: dict) -> BPETokenizer:
        """Rebuild a tokenizer from :meth:`to_dict`'s output; raises
        :class:`~torchlight.data.TokenizerError` naming a missing field.
        """
        try:
            return cls(
                [tuple(p) for p in payload["merges"]],
                payload.get("special_tokens", ()),
                payload["pattern"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TokenizerError(f"malformed BPETokenizer file: {exc!r}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokenizer to ``path`` as JSON (see :meth:`load`)."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> BPETokenizer:
        """Read a tokenizer written by :meth:`save`; the file's ``type`` must match."""
        return cls.from_dict(read_json(path, cls.TYPE))

    def __eq__(self, other):
        return isinstance(other, BPETokenizer) and (
            self.merges,
            self.special_tokens,
            self.pattern,
        ) == (other.merges, other.special_tokens, other.pattern)

    def __repr__(self):
        return f"BPETokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)})"
