"""``torchlight.amp``: PyTorch's automatic-mixed-precision API, for programs that use it.

torchlight computes in float32 and float64 only, so there is no lower precision to mix in:

* :class:`autocast` is an exact no-op when disabled or asked for float32, warns and disables
  itself (as PyTorch does) when its device type has no usable backend here, and otherwise
  raises a :class:`~torchlight.DTypeError` naming the dtype (float16/bfloat16) it cannot honour.
* :class:`GradScaler` exists to keep float16 gradients from underflowing; float32 gradients do
  not, so a scaler is always disabled: ``scale(loss)`` is ``loss``, ``step(opt)`` is
  ``opt.step()``, ``update()`` does nothing. Asked to be enabled, it warns once that it is not
  (as PyTorch's does without CUDA).
"""

from .autocast_mode import autocast, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled"]
