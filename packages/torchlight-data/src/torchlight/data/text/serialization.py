"""The JSON file format shared by the tokenizers.

Every saved tokenizer is one UTF-8 JSON object ``{"type": ..., "version": 1, ...}``; the ``type``
lets :func:`load_tokenizer` pick the class, and a clear error replaces a ``KeyError`` deep inside a
constructor when a file is truncated, hand-edited or of another kind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import TokenizerError

__all__ = ["FORMAT_VERSION", "write_json", "read_json", "load_tokenizer"]

FORMAT_VERSION = 1


def write_json(path: str | os.PathLike, payload: dict) -> Path:
    """Write ``payload`` atomically (a temporary file renamed into place) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    # ensure_ascii=False keeps vocabularies human-readable; the file is always UTF-8.
    tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_json(path: str | os.PathLike, expected_type: str | None = None) -> dict:
    """Read a tokenizer file, checking its ``type`` (when given) and ``version``."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenizerError(f"{path}: not a readable tokenizer JSON file ({exc})") from exc
    if not isinstance(payload, dict) or "type" not in payload:
        raise TokenizerError(f"{path}: not a torchlight tokenizer file (no 'type' field)")
    if expected_type is not None and payload["type"] != expected_type:
        raise TokenizerError(
            f"{path}: holds a {payload['type']!r} tokenizer, not {expected_type!r}; "
            "use torchlight.data.text.load_tokenizer to load any kind"
        )
    if payload.get("version") != FORMAT_VERSION:
        raise TokenizerError(
            f"{path}: format version {payload.get('version')!r} is not supported "
            f"(this torchlight reads version {FORMAT_VERSION})"
        )
    return payload


def load_tokenizer(path: str | os.PathLike):
    """Load any tokenizer saved by ``.save()``: a CharTokenizer, WordVocab or BPETokenizer."""
    from .bpe import BPETokenizer
    from .char import CharTokenizer
    from .vocab import WordVocab

    payload = read_json(path)
    classes = {cls.TYPE: cls for cls in (CharTokenizer, WordVocab, BPETokenizer)}
    if payload["type"] not in classes:
        raise TokenizerError(f"{path}: unknown tokenizer type {payload['type']!r}")
    return classes[payload["type"]].from_dict(payload)
