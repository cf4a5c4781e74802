"""torchlight.data: datasets, samplers, collation, the DataLoader, tokenizers and real corpora.

Loading::

    from torchlight.data import DataLoader, TensorDataset
    loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True, seed=0)
    for epoch in range(10):
        for xb, yb in loader:      # a different, reproducible order every epoch
            ...

Subpackages: :mod:`torchlight.data.text` (CharTokenizer, WordVocab, BPETokenizer),
:mod:`torchlight.data.datasets` (tiny Shakespeare, sentiment sentences, Tatoeba eng-fra) and
:mod:`torchlight.data.synthetic` (2-D toy classification sets).
"""

from . import datasets, synthetic, text
from .collate import default_collate, default_convert
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .errors import (
    ChecksumError,
    CollateError,
    DataError,
    DataLoaderError,
    DataNotFoundError,
    DecodingError,
    TokenizerError,
)
from .lm import LanguageModelDataset
from .loader import DataLoader
from .padding import PadCollate, lengths_to_mask, pad_sequence, sequence_lengths
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .text import BPETokenizer, CharTokenizer, WordVocab
from .worker import WorkerInfo, get_worker_info

__all__ = [
    # datasets
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "random_split",
    "LanguageModelDataset",
    # sampling and loading
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "DataLoader",
    "WorkerInfo",
    "get_worker_info",
    # collation and padding
    "default_collate",
    "default_convert",
    "pad_sequence",
    "lengths_to_mask",
    "sequence_lengths",
    "PadCollate",
    # text
    "CharTokenizer",
    "WordVocab",
    "BPETokenizer",
    # errors
    "DataError",
    "DataNotFoundError",
    "ChecksumError",
    "CollateError",
    "DataLoaderError",
    "TokenizerError",
    "DecodingError",
    # subpackages
    "datasets",
    "synthetic",
    "text",
]


def __getattr__(name):
    # torch.utils.data exports DistributedSampler; here it belongs to torchlight-distributed (a
    # layer above), so it is resolved on first access only (see torchlight.data.distributed).
    if name == "DistributedSampler":
        from . import distributed

        return distributed.DistributedSampler
    raise AttributeError(f"module 'torchlight.data' has no attribute {name!r}")
