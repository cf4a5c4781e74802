"""``torchlight.data.dataloader``: the module path of ``torch.utils.data.dataloader``.

Programs written for PyTorch import ``DataLoader``, ``default_collate`` and ``get_worker_info``
from here; they are the same objects as in :mod:`torchlight.data`.

>>> from torchlight.data.dataloader import DataLoader, default_collate
>>> default_collate([1, 2, 3]).tolist()
[1, 2, 3]
"""

from .collate import default_collate, default_convert
from .loader import DataLoader
from .worker import get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
