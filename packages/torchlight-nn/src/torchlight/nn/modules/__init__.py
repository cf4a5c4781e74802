"""``torchlight.nn.modules``: the import paths of ``torch.nn.modules`` for programs that use them.

Every class here is the one ``torchlight.nn`` exports; the submodules (``module``, ``linear``,
``activation``, ``container``, ``conv``, ``loss``, ``normalization``, ``batchnorm``, ``pooling``,
``rnn``, ``sparse``, ``dropout``, ``flatten``, ``distance``, ``transformer``, ``upsampling``,
``pixelshuffle``, ``padding``, ``fold``, ``instancenorm``) mirror PyTorch's file layout.

>>> from torchlight.nn.modules.linear import Linear
>>> Linear is nn.Linear
True
"""

import types

from . import (
    activation,
    batchnorm,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)

_SUBMODULES = tuple(
    value
    for value in list(globals().values())
    if isinstance(value, types.ModuleType) and value.__name__.startswith(__name__ + ".")
)
# the classes are listed once, in the submodules; the package re-exports what they export
_OWNER = {name: sub for sub in _SUBMODULES for name in sub.__all__}

__all__ = sorted(_OWNER) + [sub.__name__.rsplit(".", 1)[1] for sub in _SUBMODULES]


def __getattr__(name: str):
    """``torchlight.nn.modules.Linear`` and the like: the class its submodule exports."""
    if name in _OWNER:
        return getattr(_OWNER[name], name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
