"""Keep numba's on-disk kernel cache honest when any of this backend's sources change.

numba validates a cached function against its *own* source file only (modification time and
size, plus a hash of its bytecode). A kernel in ``_fused.py`` that calls a helper in
``_rowops.py`` carries the helper's machine code inside its own cache entry, so after an edit
of ``_rowops.py`` (or of the shared scalar table in torchlight-tensor) the kernel would still
load the old code — a silently wrong result for anyone who changes a helper to see what happens.

So each cache directory holds a stamp, the SHA-1 of every source the kernels are built from.
The first kernel registered in a process compares it; when it differs, every kernel's cache
index is emptied (numba then recompiles on first use and rewrites it) and the new stamp is
written. Costs one hash of ~20 small files per process.
"""

import hashlib
import os
from pathlib import Path

__all__ = ["sources_digest", "refresh"]

STAMP = "torchlight-numba-sources.sha1"
_HERE = Path(__file__).resolve().parent
_verdicts: dict[str, bool] = {}  # cache directory -> True when stale (decided once per process)


def sources_digest():
    """SHA-1 over this package's modules and the scalar op table (and its formulas) they compile."""
    from torchlight.tensor import formulas
    from torchlight.tensor.backend import scalar_ops

    h = hashlib.sha1()
    shared = [Path(scalar_ops.__file__), Path(formulas.__file__)]
    for path in sorted(_HERE.glob("*.py")) + shared:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _stale(directory):
    if directory not in _verdicts:
        digest = sources_digest()
        stamp = os.path.join(directory, STAMP)
        try:
            with open(stamp) as f:
                old = f.read().strip()
        except OSError:
            old = None
        _verdicts[directory] = old != digest
        if old != digest:
            try:
                os.makedirs(directory, exist_ok=True)
                with open(stamp, "w") as f:
                    f.write(digest)
            except OSError:  # a read-only cache: numba itself will not write there either
                pass
    return _verdicts[directory]


def refresh(dispatcher):
    """Empty ``dispatcher``'s cache index if the sources changed since the cache was written."""
    cache = getattr(dispatcher, "_cache", None)  # absent under NUMBA_DISABLE_JIT
    directory = getattr(cache, "cache_path", None)
    if directory is None or not _stale(directory):
        return
    try:
        cache.flush()
    except OSError:
        pass
