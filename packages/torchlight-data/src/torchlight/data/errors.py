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
    "DecodingError",
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


class DecodingError(DataError, UnicodeDecodeError):
    """A text file holds bytes that are not valid in its encoding.

    Still a ``UnicodeDecodeError`` (``encoding``, ``start``, ``end`` and ``reason`` are those of
    the first bad byte; ``object`` is a window of bytes around it, ``start``/``end`` index that
    window), plus ``path`` and ``offset`` (the byte offset in the file); its message names the
    file, the offset and line, and the ``encoding=``/``errors=`` options that read it anyway.
    """

    def __init__(self, message: str, path, offset: int, exc: UnicodeDecodeError):
        lo = max(0, exc.start - 16)
        UnicodeDecodeError.__init__(
            self,
            exc.encoding,
            exc.object[lo : exc.end + 16],
            exc.start - lo,
            exc.end - lo,
            exc.reason,
        )
        self.message = message
        self.path = path
        self.offset = offset

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # (DataLoader workers send exceptions pickled)
        exc = UnicodeDecodeError(self.encoding, self.object, self.start, self.end, self.reason)
        return (type(self), (self.message, self.path, self.offset, exc))
