"""``torch.backends.cudnn``: the cuDNN switches of PyTorch, for a framework without cuDNN.

torchlight's CUDA backend runs its own numba-cuda kernels and never calls cuDNN, so
:func:`is_available` is ``False`` and :func:`version` is ``None``, exactly what PyTorch reports
on a machine without cuDNN. The switches programs set (``benchmark``, ``deterministic``,
``allow_tf32``, ``enabled``) keep PyTorch's defaults and accept assignment; since no cuDNN
algorithm is ever chosen they change no result (torchlight's kernels are deterministic and never
use TF32, which satisfies every setting).

>>> from torchlight.backends import cudnn
>>> cudnn.is_available()
False
>>> cudnn.benchmark = True  # accepted; no algorithm search happens
"""

__all__ = ["is_available", "version", "enabled", "benchmark", "deterministic", "allow_tf32"]

#: Whether cuDNN may be used (PyTorch's default ``True``); nothing here uses it either way.
enabled = True
#: Whether cuDNN may benchmark algorithms per input shape (default ``False``).
benchmark = False
#: Whether cuDNN must choose deterministic algorithms (default ``False``).
deterministic = False
#: Whether cuDNN convolutions may use TF32 (PyTorch's default ``True``).
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used: always ``False`` (torchlight's kernels are its own).

    >>> from torchlight.backends import cudnn
    >>> cudnn.is_available()
    False
    """
    return False


def version():
    """The cuDNN version: ``None``, as PyTorch answers when cuDNN is not available.

    >>> from torchlight.backends import cudnn
    >>> cudnn.version() is None
    True
    """
    return None
