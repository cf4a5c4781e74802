"""How tensors print: ``repr(t)`` and ``tl.set_printoptions``.

The digits are numpy's (``numpy.array2string``, shortest round-trip up to ``precision``
decimals), so ``tensor([0.5, 0.25])`` prints as written; PyTorch pads every value to
``precision`` decimals (``tensor([0.5000, 0.2500])``). The options and their defaults are
PyTorch's: a program that calls ``torch.set_printoptions`` runs unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "format_values"]

_PROFILES: dict[str, dict[str, Any]] = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}
_options: dict[str, Any] = {**_PROFILES["default"], "sci_mode": None}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, as ``torch.set_printoptions`` does.

    ``precision`` digits after the decimal point (default 4); tensors of more than ``threshold``
    elements (default 1000) print summarised with ``...``, keeping ``edgeitems`` (default 3) at
    each end of a dimension; lines wrap at ``linewidth`` characters (default 80). ``profile`` —
    ``"default"``, ``"short"`` (2 digits, 2 edge items) or ``"full"`` (never summarise) — is
    applied first, and the other arguments then override it. ``sci_mode`` True forces scientific
    notation, False forbids it, None (the default) lets the values decide; every call sets it,
    as PyTorch's does.

    >>> tl.set_printoptions(precision=2)
    >>> tl.tensor([1.23456, 2.0])
    tensor([1.23, 2.  ])
    >>> tl.set_printoptions(profile="default")
    >>> tl.tensor([1.23456, 2.0])
    tensor([1.2346, 2.    ])
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(
                f"set_printoptions: unknown profile {profile!r}; use one of {sorted(_PROFILES)}"
            )
        _options.update(_PROFILES[profile], sci_mode=None)
    given = dict(precision=precision, threshold=threshold, edgeitems=edgeitems, linewidth=linewidth)
    _options.update({k: v for k, v in given.items() if v is not None})
    _options["sci_mode"] = sci_mode  # as in PyTorch: every call sets it, None included


def get_printoptions() -> dict:
    """The current print options, as a dict of :func:`set_printoptions`'s arguments.

    >>> tl.get_printoptions()["precision"]
    4
    """
    return dict(_options)


def format_values(arr: np.ndarray, prefix: str = "tensor(") -> str:
    """The values part of a tensor's repr: ``arr`` laid out under the current print options, its
    continuation lines indented past ``prefix``.

    >>> from torchlight.tensor.printing import format_values
    >>> format_values(np.array([[1.0, -2.5], [3.25, 4.0]], dtype=np.float32))
    '[[ 1.  , -2.5 ],\\n        [ 3.25,  4.  ]]'
    """
    o = _options
    sci = o["sci_mode"]
    formatter: Any = None
    if sci is not None and arr.dtype.kind == "f":
        p = o["precision"]
        formatter = {"float_kind": (lambda v: f"{v:.{p}e}") if sci else (lambda v: f"{v:.{p}f}")}
    threshold = o["threshold"]
    return np.array2string(
        arr,
        separator=", ",
        prefix=prefix,
        precision=o["precision"],
        threshold=2**63 - 1 if threshold == math.inf else int(threshold),
        edgeitems=o["edgeitems"],
        max_line_width=o["linewidth"],
        formatter=formatter,
    )
