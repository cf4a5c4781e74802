"""torchlight.utils: utilities outside the tensor API, under PyTorch's ``torch.utils`` names.

``torchlight.utils.tensorboard`` writes TensorBoard event files (``SummaryWriter``). PyTorch's
``torch.utils.data`` is torchlight's :mod:`torchlight.data` (distribution torchlight-data).
"""

__all__ = []
