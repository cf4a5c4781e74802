"""The real corpora of the demo projects and the machinery that finds, downloads and verifies them.

* :func:`tiny_shakespeare` — a 1,115,394-character string (character/BPE language modelling);
* :func:`sentiment_sentences` — 3,000 labelled sentences, 1,500 positive (classification);
* :func:`tatoeba_eng_fra` — 167,130 English-French pairs (translation).

Data is never bundled: see :mod:`torchlight.data.datasets.resources` for where files are looked for
(``root=``, ``$TORCHLIGHT_DATA``, ``~/.cache/torchlight``) and how they are downloaded and checked;
:func:`checkout_data_root` adds the ``shared/data`` folder beside a source checkout for programs
inside one (the repository's projects).
"""

from .corpora import (
    RESOURCES,
    SENTIMENT_SOURCES,
    Sentence,
    decode_file,
    sentiment_sentences,
    tatoeba_eng_fra,
    tiny_shakespeare,
)
from .resources import Resource, cache_dir, checkout_data_root, fetch, sha256_file
from .splits import split_text, train_val_split

__all__ = [
    "tiny_shakespeare",
    "sentiment_sentences",
    "tatoeba_eng_fra",
    "Sentence",
    "RESOURCES",
    "SENTIMENT_SOURCES",
    "decode_file",
    "Resource",
    "fetch",
    "cache_dir",
    "checkout_data_root",
    "sha256_file",
    "train_val_split",
    "split_text",
]
