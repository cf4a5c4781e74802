"""``DataParallel``: PyTorch's single-process wrapper, running the module on its one device.

In PyTorch, ``nn.DataParallel(model)`` scatters each batch over several GPUs of one process and
gathers the outputs. torchlight runs one device per process (use
:mod:`torchlight.distributed` for several), so the wrapper calls the module directly. Keeping
the wrapper (rather than returning the module) preserves what programs rely on: ``.module`` and
state-dict keys prefixed with ``module.``.
"""

from ..module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: ``forward`` calls
    ``module``; ``device_ids``/``output_device``/``dim`` are recorded and otherwise unused.

    >>> dp = nn.DataParallel(nn.Linear(2, 3))
    >>> sorted(dp.state_dict())
    ['module.bias', 'module.weight']
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel wraps an nn.Module, got {type(module).__name__}")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
