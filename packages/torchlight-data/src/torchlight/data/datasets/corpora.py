"""The three real corpora of the demo projects, parsed exactly as published.

Files are located by :func:`torchlight.data.datasets.fetch` (``root=`` -> ``$TORCHLIGHT_DATA`` ->
cache -> verified download) and read as bytes decoded from UTF-8, split on ``"\\n"`` only: never
``str.splitlines()``, which also breaks at U+0085 (two imdb sentences contain it) and friends.

Every loader takes ``encoding=`` (default ``"utf-8"``) and ``errors=`` (default ``"strict"``, as
:meth:`bytes.decode`): a file that is not valid in its encoding raises
:class:`~torchlight.data.DecodingError` naming the file, the byte offset and line of the first bad
byte, and these two options (``errors="replace"`` substitutes U+FFFD, ``"ignore"`` drops the
bytes, ``encoding="latin-1"`` reads any byte sequence).
"""

from __future__ import annotations

import os
import unicodedata
from typing import NamedTuple

from ..errors import DataError, DecodingError
from .resources import Resource, fetch

__all__ = [
    "tiny_shakespeare",
    "sentiment_sentences",
    "tatoeba_eng_fra",
    "Sentence",
    "RESOURCES",
    "SENTIMENT_SOURCES",
    "decode_file",
]

_SHAKESPEARE_URL = (
    "https://raw.githubusercontent.com/karpathy/char-rnn/{}/data/tinyshakespeare/input.txt"
)
_UCI_URLS = (
    "https://archive.ics.uci.edu/static/public/331/sentiment+labelled+sentences.zip",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/00331/sentiment%20labelled%20sentences.zip",
)
# The 2019-04-07 release of manythings' fra-eng.zip (the one d2l.ai uses). manythings.org itself
# now serves a newer, three-column release whose checksum differs: it is tried last, and only
# helps with verify=False.
_FRA_URLS = (
    "http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip",
    "https://raw.githubusercontent.com/modelexlab/data/adddaf33ac35572bcfeb421efec29435e7ea9332/fra-eng.zip",
    "https://www.manythings.org/anki/fra-eng.zip",
)

SENTIMENT_SOURCES = ("amazon", "imdb", "yelp")
_SENTIMENT_FILES = {
    "amazon": "amazon_cells_labelled.txt",
    "imdb": "imdb_labelled.txt",
    "yelp": "yelp_labelled.txt",
}
_SENTIMENT_SHA = {
    "amazon": "47003fc0a0d4840b00e96e715b6189bad09e7443a3da41c4cbe12ffc79f86ae3",
    "imdb": "aef2e49e3da25714d61175e3a6e68eeef74a20a2f914318dc3be9947ea86512d",
    "yelp": "c76468b7b5c6e56a0804d728345c5f84aa2142ddb214420f61cc9cfd4c00d2ea",
}
_SENTIMENT_SIZE = {"amazon": 58_226, "imdb": 85_285, "yelp": 61_320}

#: Every file the loaders read, by key (the sums are those of ``shared/data/README.md``).
RESOURCES: dict[str, Resource] = {
    "tinyshakespeare": Resource(
        "tinyshakespeare/input.txt",
        "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        urls=(
            _SHAKESPEARE_URL.format("master"),
            _SHAKESPEARE_URL.format("6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e"),
        ),
        size=1_115_394,
    ),
    **{
        f"sentiment/{src}": Resource(
            f"sentiment/{name}",
            _SENTIMENT_SHA[src],
            urls=_UCI_URLS,
            member=name,
            size=_SENTIMENT_SIZE[src],
        )
        for src, name in _SENTIMENT_FILES.items()
    },
    "eng-fra": Resource(
        "eng-fra/fra.txt",
        "0bb85dbaa1c896844649094d7eaf2e34bee34e84fe362b26ce7e8f2e12aae104",
        urls=_FRA_URLS,
        member="fra.txt",
        size=11_669_748,
    ),
}


def _read_text(
    resource: Resource,
    root,
    download,
    verify,
    progress,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> str:
    path = fetch(resource, root, download=download, verify=verify, progress=progress)
    # Bytes then decode: no newline translation, no locale-dependent default encoding.
    return decode_file(path.read_bytes(), path, encoding, errors)


def decode_file(data: bytes, path, encoding: str = "utf-8", errors: str = "strict") -> str:
    """``data`` (the bytes of the file ``path``) decoded; a bad byte raises
    :class:`~torchlight.data.DecodingError` naming the file, the offset and what to do.

    >>> from torchlight.data.datasets import decode_file
    >>> decode_file(b"caf\\xc3\\xa9", "menu.txt")
    'café'
    >>> decode_file(b"caf\\xe9", "menu.txt", errors="replace")
    'caf\ufffd'
    """
    try:
        return data.decode(encoding, errors)
    except LookupError as exc:
        raise DataError(
            f"cannot read {path}: {exc} (encoding={encoding!r}, errors={errors!r}; "
            "see the codecs module for the names Python knows)"
        ) from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.end]
        raise DecodingError(
            f"{path}: byte offset {exc.start} (line {line}) is not valid {exc.encoding}: {bad!r} "
            f"({exc.reason}). The file is damaged, or in another encoding. To read it anyway pass "
            f"errors='replace' (bad bytes become U+FFFD) or errors='ignore' (they are dropped), or "
            f"the file's real encoding, e.g. encoding='latin-1'; or replace the file with the "
            f"published one (a checksum mismatch says so when verify=True).",
            path,
            exc.start,
            exc,
        ) from None


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the trailing newline ends the last line; it does not start an empty one
    return lines


def tiny_shakespeare(
    root: str | os.PathLike | None = None,
    *,
    download: bool = True,
    verify: bool = True,
    progress: bool = True,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> str:
    """Tiny Shakespeare (Karpathy's char-rnn): one string of 1,115,394 characters, 65 distinct.

    Split for language modelling with :func:`~torchlight.data.datasets.split_text`, which cuts
    at a fixed fraction (no randomness, so no seed: shuffling would leak context across the
    split)::

        text = tiny_shakespeare()
        train, val = split_text(text, val_fraction=0.1)   # first 90% / last 10%
    """
    return _read_text(
        RESOURCES["tinyshakespeare"], root, download, verify, progress, encoding, errors
    )


class Sentence(NamedTuple):
    """One labelled sentence: ``text``, ``label`` (1 positive, 0 negative), ``source``."""

    text: str
    label: int
    source: str


def sentiment_sentences(
    root: str | os.PathLike | None = None,
    sources: tuple[str, ...] = SENTIMENT_SOURCES,
    *,
    download: bool = True,
    verify: bool = True,
    progress: bool = True,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> list[Sentence]:
    """UCI Sentiment Labelled Sentences: 3,000 :class:`Sentence` (1,000 per source, half positive).

    Sources come in the order given (default amazon, imdb, yelp), lines in file order. Each line
    is ``sentence<TAB>label``, split with ``rsplit("\\t", 1)`` (some imdb sentences hold unbalanced
    quotes, so no CSV parsing); surrounding whitespace of the sentence is stripped (many imdb
    sentences end in spaces), inner characters such as U+0085 are kept.

    Deterministic, seeded split (the same seed always gives the same sentences)::

        train, val = train_val_split(sentiment_sentences(), val_fraction=0.2, seed=0)
    """
    out: list[Sentence] = []
    for src in sources:
        if src not in _SENTIMENT_FILES:
            raise ValueError(f"unknown sentiment source {src!r}; choose from {SENTIMENT_SOURCES}")
        resource = RESOURCES[f"sentiment/{src}"]
        text = _read_text(resource, root, download, verify, progress, encoding, errors)
        for lineno, line in enumerate(_lines(text), 1):
            sentence, sep, label = line.rpartition("\t")
            if not sep or label.strip() not in ("0", "1"):
                raise DataError(
                    f"{resource.path}:{lineno}: expected 'sentence<TAB>0|1', got {line!r}"
                )
            out.append(Sentence(sentence.strip(), int(label), src))
    return out


def _normalize(s: str) -> str:
    return unicodedata.normalize("NFKC", s).lower()


def tatoeba_eng_fra(
    max_words: int | None = None,
    root: str | os.PathLike | None = None,
    *,
    normalize: bool = False,
    download: bool = True,
    verify: bool = True,
    progress: bool = True,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> list[tuple[str, str]]:
    """English-French sentence pairs from Tatoeba (manythings.org, release 2019-04-07).

    Returns ``(english, french)`` tuples in file order (roughly by length, shortest first): all
    167,130 of them, or with ``max_words=k`` only the pairs whose sides both have at most ``k``
    whitespace-separated words after NFKC + lowercase (127,422 pairs for ``k=8``). With
    ``normalize=True`` the returned strings are themselves NFKC-normalized and lowercased (French
    narrow no-break spaces become plain spaces). A third, attribution column (newer releases) is
    ignored; to read such a release, pass ``verify=False``, since its checksum differs.

    The file is sorted by length, so **shuffle before splitting**; this does it, seeded::

        train, val = train_val_split(tatoeba_eng_fra(max_words=8), val_fraction=0.1, seed=0)
    """
    if max_words is not None and max_words < 1:
        raise ValueError(f"max_words must be a positive int or None, got {max_words!r}")
    resource = RESOURCES["eng-fra"]
    pairs: list[tuple[str, str]] = []
    text = _read_text(resource, root, download, verify, progress, encoding, errors)
    for lineno, line in enumerate(_lines(text), 1):
        cols = line.split("\t")
        if len(cols) < 2:
            raise DataError(
                f"{resource.path}:{lineno}: expected 'english<TAB>french', got {line!r}"
            )
        eng, fra = cols[0], cols[1]
        if max_words is not None or normalize:
            n_eng, n_fra = _normalize(eng), _normalize(fra)
            if max_words is not None and (
                len(n_eng.split()) > max_words or len(n_fra.split()) > max_words
            ):
                continue
            if normalize:
                eng, fra = n_eng, n_fra
        pairs.append((eng, fra))
    return pairs
