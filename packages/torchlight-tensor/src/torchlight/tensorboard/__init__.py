"""torchlight.tensorboard: PyTorch's ``SummaryWriter``, writing TensorBoard event files.

PyTorch's ``torch.utils.tensorboard`` (as ``torch.utils.data`` is :mod:`torchlight.data`): under
``python -m torchlight.compat``, ``from torch.utils.tensorboard import SummaryWriter`` gives this
module's class.

Written in pure Python with no dependency: the files are TFRecord streams of ``Event`` protocol
buffer messages, encoded by hand (:mod:`.records` frames them, :mod:`.event_proto` encodes the
messages), which TensorBoard reads like the files PyTorch writes.

>>> import tempfile
>>> from torchlight.tensorboard import SummaryWriter
>>> with SummaryWriter(log_dir=tempfile.mkdtemp()) as writer:
...     writer.add_scalar("Loss/train", 0.25, 1)
"""

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
