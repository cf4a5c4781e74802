"""``torchlight.cuda.amp``: PyTorch's older spelling of :mod:`torchlight.amp` for the cuda device.

``GradScaler()`` and ``autocast()`` here default to ``device="cuda"`` / ``device_type="cuda"``.
"""

import functools

from ..amp.autocast_mode import autocast as _autocast
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast"]


class GradScaler(_GradScaler):
    """:class:`torchlight.amp.GradScaler` for ``device="cuda"``.

    >>> import torchlight as tl
    >>> tl.cuda.amp.GradScaler(enabled=False).is_enabled()
    False
    """

    # mypy cannot type a decorated __init__; wraps only copies the parent's docs and signature
    @functools.wraps(_GradScaler.__init__)  # type: ignore[misc]
    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        super().__init__(
            "cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """:class:`torchlight.amp.autocast` for ``device_type="cuda"``.

    >>> import torchlight as tl
    >>> with tl.cuda.amp.autocast(enabled=False):
    ...     pass
    """

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
