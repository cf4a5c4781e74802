"""Size profiles: how big the conformance kit's inputs are.

``small`` is the default (about a thousand elements per operand, 32×32 matmuls): big enough to
cross a kernel's contiguous/strided and parallel code paths, small enough for a JIT backend's
cold run. ``tiny`` is for slow execution models (``NUMBA_DISABLE_JIT=1``, a GPU simulator).
A backend picks one with ``size_profile = "tiny"`` on its subclass, or the environment variable
``TORCHLIGHT_CONFORMANCE_PROFILE`` overrides it for a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["SizeProfile", "PROFILES", "resolve_profile"]


@dataclass(frozen=True)
class SizeProfile:
    name: str
    shape: tuple  # the 3-D operand of elementwise / reduction / indexing tests
    matmul: tuple  # (batch, n, k, m)
    rows: tuple  # (rows, cols) of softmax / layer-norm tests
    examples: int  # hypothesis examples per property test
    mlp: tuple  # (batch, in, hidden, classes) of the autograd smoke tests
    train_steps: int
    gradcheck_batch: int


PROFILES = {
    "tiny": SizeProfile("tiny", (2, 3, 4), (2, 3, 4, 5), (3, 6), 5, (8, 3, 5, 2), 8, 2),
    "small": SizeProfile(
        "small", (6, 10, 16), (3, 32, 32, 32), (24, 40), 20, (32, 4, 16, 3), 25, 4
    ),
}


def resolve_profile(name: str) -> SizeProfile:
    """The :class:`SizeProfile` named ``name``, or the one named by ``$TORCHLIGHT_CONFORMANCE_PROFILE``
    when set (so CI can run every backend's kit at another size); raises ``ValueError`` listing the
    known names.
    """
    name = os.environ.get("TORCHLIGHT_CONFORMANCE_PROFILE") or name
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(
            f"unknown conformance size profile {name!r}; choose one of {sorted(PROFILES)}"
        ) from None
