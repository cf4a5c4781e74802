"""CharTokenizer: one id per character, the vocabulary of a character-level language model."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..errors import TokenizerError
from .serialization import FORMAT_VERSION, read_json, write_json

__all__ = ["CharTokenizer", "as_id_list"]


def as_id_list(ids) -> list[int]:
    """Accept a list of ints, a numpy array or a torchlight Tensor of ids; return a list of ints."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, int):
        return [ids]
    return [int(i) for i in ids]


class CharTokenizer:
    """Maps each character of a fixed alphabet to an id (its position in ``chars``).

    Build it from a corpus with :meth:`from_text` (ids follow sorted code-point order, so the same
    text always gives the same ids). Encoding a character outside the alphabet raises
    :class:`~torchlight.data.TokenizerError` unless ``unk`` names a character of the alphabet to
    use in its place.

    >>> from torchlight.data.text import CharTokenizer
    >>> tok = CharTokenizer.from_text("hello")
    >>> tok.encode("hell"), tok.decode([3, 1])
    ([1, 0, 2, 2], 'oh')
    """

    TYPE = "char"

    def __init__(self, chars: Iterable[str], unk: str | None = None):
        self.itos: list[str] = list(chars)
        if any(not isinstance(c, str) or len(c) != 1 for c in self.itos):
            raise TokenizerError("CharTokenizer: every vocabulary entry must be a single character")
        self.stoi: dict[str, int] = {c: i for i, c in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise TokenizerError("CharTokenizer: the vocabulary contains duplicate characters")
        if unk is not None and unk not in self.stoi:
            raise TokenizerError(f"CharTokenizer: unk={unk!r} is not in the vocabulary")
        self.unk = unk

    @classmethod
    def from_text(cls, text: str, unk: str | None = None) -> CharTokenizer:
        """The alphabet of ``text`` (plus ``unk`` if given), in sorted order."""
        chars = set(text)
        if unk is not None:
            chars.add(unk)
        return cls(sorted(chars), unk=unk)

    @property
    def vocab_size(self) -> int:
        """Number of characters in the alphabet (the size an embedding table needs)."""
        return len(self.itos)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        """The id of each character of ``text``. A character outside the alphabet raises
        :class:`~torchlight.data.TokenizerError`, or becomes ``unk``'s id when ``unk`` was given.

        >>> from torchlight.data.text import CharTokenizer
        >>> CharTokenizer.from_text("abc").encode("cab")
        [2, 0, 1]
        """
        stoi = self.stoi
        try:
            return [stoi[c] for c in text]
        except KeyError:
            if self.unk is None:
                bad = sorted({c for c in text if c not in stoi})
                raise TokenizerError(
                    f"CharTokenizer: {len(bad)} character(s) not in the vocabulary, e.g. "
                    f"{bad[:5]!r}; build the tokenizer from text that contains them or pass unk="
                ) from None
            u = stoi[self.unk]
            return [stoi.get(c, u) for c in text]

    def decode(self, ids) -> str:
        """The text of ``ids`` (a list of ints or a 1-d integer tensor); the inverse of :meth:`encode`.

        >>> from torchlight.data.text import CharTokenizer
        >>> CharTokenizer.from_text("abc").decode(tl.tensor([2, 0]))
        'ca'
        """
        itos, n = self.itos, len(self.itos)
        out = []
        for i in as_id_list(ids):
            if not 0 <= i < n:
                raise TokenizerError(f"CharTokenizer: id {i} out of range for vocabulary size {n}")
            out.append(itos[i])
        return "".join(out)

    def to_dict(self) -> dict:
        """Everything needed to rebuild this tokenizer as plain JSON-able values (with a ``type`` and a
        format ``version``).
        """
        return {"type": self.TYPE, "version": FORMAT_VERSION, "chars": self.itos, "unk": self.unk}

    @classmethod
    def from_dict(cls, payload: dict) -> CharTokenizer:
        """Rebuild a tokenizer from :meth:`to_dict`'s output; raises
        :class:`~torchlight.data.TokenizerError` naming a missing field.
        """
        try:
            return cls(payload["chars"], unk=payload.get("unk"))
        except KeyError as exc:
            raise TokenizerError(f"CharTokenizer file lacks the field {exc}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokenizer to ``path`` as JSON (see :meth:`load`)."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> CharTokenizer:
        """Read a tokenizer written by :meth:`save`; the file's ``type`` must match."""
        return cls.from_dict(read_json(path, cls.TYPE))

    def __eq__(self, other):
        return isinstance(other, CharTokenizer) and (self.itos, self.unk) == (other.itos, other.unk)

    def __repr__(self):
        return f"CharTokenizer(vocab_size={self.vocab_size})"
