"""Run unmodified PyTorch programs on torchlight.

``python -m torchlight.compat script.py args...`` (or the ``torchlight-compat`` command) runs
``script.py`` as ``__main__`` with ``import torch`` answering torchlight: ``torch`` is
``torchlight``, ``torch.nn`` is ``torchlight.nn``, ``torch.utils.data`` is ``torchlight.data``,
and so on (the table is :data:`~torchlight.compat.aliases.ALIASES`). The device is torchlight's
default device, so ``TORCHLIGHT_DEVICE=numba python -m torchlight.compat train.py`` runs on the
numba backend.

Only names are translated. What the script then calls must exist in torchlight; where it does
not, the script fails with the usual ``AttributeError``/``ImportError`` naming what is missing.
In-process, :func:`install` / :func:`uninstall` switch the aliases on and off.
"""

from .aliases import (
    ALIASES,
    NAMESPACES,
    TorchAliasFinder,
    install,
    is_installed,
    resolve,
    uninstall,
)
from .runner import main, run

__all__ = [
    "ALIASES",
    "NAMESPACES",
    "TorchAliasFinder",
    "install",
    "is_installed",
    "main",
    "resolve",
    "run",
    "uninstall",
]
