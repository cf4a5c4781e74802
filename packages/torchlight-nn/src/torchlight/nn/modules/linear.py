"""``torchlight.nn.modules.linear``: the import path of ``torch.nn.modules.linear`` (the same classes as
``torchlight.nn``)."""

from ..linear import Bilinear, Identity, Linear

__all__ = ["Bilinear", "Identity", "Linear", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """:class:`Linear` under the name PyTorch gives the output projection of its
    ``MultiheadAttention`` (a marker for PyTorch's quantization tools, which torchlight does not
    have): the same layer, ``y = x W^T + b``, here so that programs naming
    ``torch.nn.modules.linear.NonDynamicallyQuantizableLinear`` (in a ``safe_globals`` list, say)
    find it.

    >>> from torchlight.nn.modules.linear import NonDynamicallyQuantizableLinear
    >>> NonDynamicallyQuantizableLinear(3, 2).weight.shape
    (2, 3)
    """
