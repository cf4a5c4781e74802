"""``GradScaler``: loss scaling for float16 training, which torchlight never needs.

Loss scaling multiplies the loss by a large factor so that float16 gradients do not flush to
zero, then divides the gradients back before the step. torchlight's gradients are float32 or
float64, which represent what the scaling protects, so the scaler is always *disabled* and every
method is the exact no-op PyTorch's disabled scaler performs.
"""

import warnings

__all__ = ["GradScaler"]


class GradScaler:
    """PyTorch's ``torch.amp.GradScaler`` API, always disabled (see the module docstring).

    ``GradScaler()`` (``enabled=True``, PyTorch's default) warns once that scaling is disabled,
    as PyTorch's does on a machine without CUDA; ``enabled=False`` is silent.

    >>> import torchlight as tl
    >>> scaler = tl.amp.GradScaler(enabled=False)
    >>> loss = tl.tensor(2.0)
    >>> scaler.scale(loss) is loss, scaler.get_scale(), scaler.state_dict()
    (True, 1.0, {})
    """

    def __init__(
        self,
        device="cuda",
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        self._device = str(device)
        self._enabled = False
        if enabled:
            warnings.warn(
                "GradScaler is enabled, but torchlight computes in float32/float64, where gradients "
                "do not underflow as in float16; loss scaling is disabled (scale() returns the loss, "
                "step() calls optimizer.step())",
                stacklevel=2,
            )

    def is_enabled(self) -> bool:
        """False: torchlight's scaler never scales."""
        return self._enabled

    def scale(self, outputs):
        """The loss (or tensors) unchanged."""
        return outputs

    def unscale_(self, optimizer) -> None:
        """Nothing to undo: gradients were never scaled."""

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` and its return value."""
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """No scale to update."""

    def get_scale(self) -> float:
        """1.0, the scale of a disabled scaler (as in PyTorch)."""
        return 1.0

    def get_growth_factor(self) -> float:
        """PyTorch's default growth factor, 2.0 (reported for compatibility; this scaler never scales)."""
        return 2.0

    def get_backoff_factor(self) -> float:
        """PyTorch's default backoff factor, 0.5 (reported for compatibility; this scaler never scales)."""
        return 0.5

    def get_growth_interval(self) -> int:
        """PyTorch's default growth interval, 2000 steps (reported for compatibility; this scaler
        never scales).
        """
        return 2000

    def state_dict(self) -> dict:
        """``{}``, what a disabled scaler saves (as in PyTorch)."""
        return {}

    def load_state_dict(self, state_dict) -> None:
        """Accepts ``{}`` or a saved PyTorch scaler state (there is nothing to restore)."""
        if not isinstance(state_dict, dict):
            raise TypeError(
                f"GradScaler.load_state_dict expects a dict, got {type(state_dict).__name__}"
            )
