"""``torchlight.nn.parallel``: the module path of ``torch.nn.parallel``.

* :class:`DataParallel` — PyTorch's single-process multi-device wrapper; here it runs the
  wrapped module on its one device (torchlight does not split a batch across devices in one
  process).
* ``DistributedDataParallel`` — the class of :mod:`torchlight.distributed` (MPI data
  parallelism). It lives in the torchlight-distributed distribution, which sits *above*
  torchlight-nn, so it is looked up on first access rather than imported here; without
  torchlight-distributed installed the access raises an ImportError saying what to install.

>>> from torchlight.nn.parallel import DataParallel
>>> DataParallel(nn.Linear(2, 3))(tl.ones(4, 2)).shape
(4, 3)
"""

import importlib

from .data_parallel import DataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]


def __getattr__(name):
    if name == "DistributedDataParallel":
        try:
            ddp = importlib.import_module("torchlight.distributed.ddp")
        except ImportError as exc:
            raise ImportError(
                "torchlight.nn.parallel.DistributedDataParallel is provided by the torchlight-distributed "
                f"distribution, which could not be imported ({exc}); install it with "
                "`pip install torchlight-distributed` (it needs mpi4py and an MPI library)"
            ) from exc
        globals()[name] = ddp.DistributedDataParallel
        return ddp.DistributedDataParallel
    raise AttributeError(f"module 'torchlight.nn.parallel' has no attribute {name!r}")
