"""The root of torchlight's exception tree.

It lives in the lowest layer so every distribution can raise (and users can catch) one family:
``except torchlight.TorchlightError`` catches all of them, while each subclass also derives from
the matching built-in (``ValueError``, ``TypeError``, ``IndexError``, ``RuntimeError``) so code
written against plain Python or PyTorch habits keeps working.
"""

__all__ = ["TorchlightError", "AutogradError"]


class TorchlightError(Exception):
    """Base class of every error torchlight raises on purpose."""


class AutogradError(TorchlightError, RuntimeError):
    """Misuse of the autograd engine: backward through a freed graph, a modified saved value, ..."""
