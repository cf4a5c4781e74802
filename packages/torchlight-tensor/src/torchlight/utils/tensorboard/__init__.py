"""torchlight.utils.tensorboard: PyTorch's ``SummaryWriter``, writing TensorBoard event files.

Written in pure Python with no dependency: the files are TFRecord streams of ``Event`` protocol
buffer messages, encoded by hand (:mod:`.records` frames them, :mod:`.event_proto` encodes the
messages), which TensorBoard reads like the files PyTorch writes.

>>> import tempfile
>>> from torchlight.utils.tensorboard import SummaryWriter
>>> with SummaryWriter(log_dir=tempfile.mkdtemp()) as writer:
...     writer.add_scalar("Loss/train", 0.25, 1)
"""

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
