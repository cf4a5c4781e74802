"""``torchlight.data.distributed``: the module path of ``torch.utils.data.distributed``.

``DistributedSampler`` lives in torchlight-distributed (it needs the job's rank and size), which
sits above torchlight-data; it is looked up on first access, so importing this module never
imports MPI code. Without torchlight-distributed the access raises an ImportError naming it.

>>> from torchlight.data.distributed import DistributedSampler   # doctest: +SKIP
>>> sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)   # doctest: +SKIP
"""

import importlib

__all__ = ["DistributedSampler"]  # noqa: F822 - provided by __getattr__ below


def __getattr__(name):
    if name == "DistributedSampler":
        try:
            module = importlib.import_module("torchlight.distributed.sampler")
        except ImportError as exc:
            raise ImportError(
                "DistributedSampler is provided by the torchlight-distributed distribution, which could not be "
                f"imported ({exc}); install it with `pip install torchlight-distributed`"
            ) from exc
        globals()[name] = module.DistributedSampler
        return module.DistributedSampler
    raise AttributeError(f"module 'torchlight.data.distributed' has no attribute {name!r}")
