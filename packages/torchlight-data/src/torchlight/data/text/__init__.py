"""Text: tokenizers that turn strings into id sequences and back.

* :class:`CharTokenizer` — one id per character (character-level language models).
* :class:`WordVocab` — words and punctuation, with ``<pad>/<unk>/<sos>/<eos>`` (classifiers, seq2seq).
* :class:`BPETokenizer` — byte-level byte-pair encoding; round-trips any string exactly (GPT-style).

All three have ``encode``, ``decode``, ``len()``, ``save(path)`` and ``load(path)`` (one JSON file);
:func:`load_tokenizer` loads whichever kind a file holds. Batching the resulting variable-length
id lists is :func:`torchlight.data.pad_sequence`'s job.
"""

from .bpe import SPLIT_PATTERN, BPETokenizer
from .char import CharTokenizer
from .serialization import load_tokenizer
from .vocab import EOS, PAD, SOS, SPECIALS, UNK, WordVocab, word_tokenize

__all__ = [
    "BPETokenizer",
    "CharTokenizer",
    "WordVocab",
    "load_tokenizer",
    "word_tokenize",
    "SPLIT_PATTERN",
    "PAD",
    "UNK",
    "SOS",
    "EOS",
    "SPECIALS",
]
