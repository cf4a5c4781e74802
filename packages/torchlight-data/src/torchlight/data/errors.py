"""The errors torchlight.data raises on purpose.

Each class derives from :class:`torchlight.TorchlightError` (so one ``except`` catches every
torchlight failure) *and* from the built-in a Python or PyTorch user would reach for first:
a missing corpus is a ``FileNotFoundError``, a checksum mismatch a ``ValueError``, a worker crash a
``RuntimeError``. Messages name the file, index or type involved and say how to fix it.
"""

from torchlight.autograd.errors import TorchlightError

__all__ = [
    "DataError",
    "DataNotFoundError",
    "ChecksumError",
    "CollateError",
    "DataLoaderError",
    "TokenizerError",
]

# ``TorchlightError`` is defined in the lowest layer (torchlight-autograd) and re-exported as
# ``torchlight.TorchlightError``; importing it from there keeps this module importable on its
# own (no cycle through ``torchlight/__init__``) while still being the very same class.


class DataError(TorchlightError):
    """Base class of every error raised by :mod:`torchlight.data`."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A data file is in none of the searched places and could not be downloaded."""


class ChecksumError(DataError, ValueError):
    """A data file exists but its SHA-256 differs from the published one; it is not used."""


class CollateError(DataError, TypeError):
    """A batch cannot be collated: an unsupported element type, or elements of unequal size."""


class DataLoaderError(DataError, RuntimeError):
    """A DataLoader worker could not be started, died, or timed out."""


class TokenizerError(DataError, ValueError):
    """A tokenizer cannot encode its input, or a saved tokenizer file is malformed."""
