"""Function-style spellings of tensor ops (``tl.exp(x)``, ``tl.cat([...])``), as in PyTorch."""

from .functions import linalg
from .functions.activation import layer_norm, log_softmax, softmax
from .functions.closeness import allclose, equal, isclose
from .functions.index import embedding as _embedding
from .functions.index import masked_select, nonzero, scatter
from .functions.linalg import bmm, diag, dot, einsum, mm, norm, outer
from .functions.reorder import cumsum, flip, repeat_interleave, roll, select, unbind
from .functions.rounding import ceil, div, floor, floor_divide, remainder, round, trunc
from .functions.shape import cat, chunk, meshgrid, pad, split, stack, tril, triu
from .functions.sorting import argsort, sort, topk
from .functions.special import erf, exp2, expm1, log1p, log2, log10, std_mean, var_mean
from .tensor import where

__all__ = [
    "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "gelu", "silu",
    "softplus", "clamp", "maximum", "minimum", "sum", "mean", "var", "std", "max", "min", "amax",
    "amin", "argmax", "argmin", "prod", "logsumexp", "softmax", "log_softmax", "layer_norm",
    "matmul", "cat", "stack", "split", "chunk", "tril", "triu", "pad", "where", "gather",
    "scatter_add", "index_select", "masked_fill", "embedding",
    "pow", "mm", "bmm", "dot", "outer", "diag", "einsum", "norm", "flatten", "reshape", "transpose",
    "permute", "squeeze", "unsqueeze", "narrow", "t", "clip", "neg", "square", "sign", "numel",
    "is_tensor", "is_floating_point", "isclose", "allclose", "equal", "cumsum", "flip", "roll",
    "repeat_interleave", "select", "unbind", "sort", "argsort", "topk", "scatter", "nonzero",
    "masked_select", "argwhere", "floor", "ceil", "trunc", "round", "floor_divide", "remainder",
    "div", "meshgrid", "log1p", "expm1", "log2", "log10", "exp2", "erf", "var_mean", "std_mean",
]

def abs(x):
    return x.abs()


def exp(x):
    return x.exp()


def log(x):
    return x.log()


def sqrt(x):
    return x.sqrt()


def rsqrt(x):
    return x.rsqrt()


def sin(x):
    return x.sin()


def cos(x):
    return x.cos()


def tanh(x):
    return x.tanh()


def sigmoid(x):
    return x.sigmoid()


def relu(x):
    return x.relu()


def gelu(x, approximate="none"):
    return x.gelu(approximate)


def silu(x):
    return x.silu()


def softplus(x, beta=1.0, threshold=20.0):
    return x.softplus(beta, threshold)


def clamp(x, min=None, max=None):
    return x.clamp(min, max)


def maximum(a, b):
    return a.maximum(b)


def minimum(a, b):
    return a.minimum(b)


def sum(x, dim=None, keepdim=False, dtype=None):
    return x.sum(dim, keepdim, dtype)


def mean(x, dim=None, keepdim=False):
    return x.mean(dim, keepdim)


def var(x, dim=None, unbiased=True, keepdim=False, correction=None):
    return x.var(dim, unbiased, keepdim, correction)


def std(x, dim=None, unbiased=True, keepdim=False, correction=None):
    return x.std(dim, unbiased, keepdim, correction)


def max(x, dim=None, keepdim=False):
    return x.max(dim, keepdim)


def min(x, dim=None, keepdim=False):
    return x.min(dim, keepdim)


def amax(x, dim=None, keepdim=False):
    return x.amax(dim, keepdim)


def amin(x, dim=None, keepdim=False):
    return x.amin(dim, keepdim)


def argmax(x, dim=None, keepdim=False):
    return x.argmax(dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    return x.argmin(dim, keepdim)


def prod(x, dim=None, keepdim=False):
    return x.prod(dim, keepdim)


def logsumexp(x, dim=None, keepdim=False):
    return x.logsumexp(dim, keepdim)


def matmul(a, b):
    return linalg.matmul(a, b)


def gather(x, dim, idx):
    return x.gather(dim, idx)


def scatter_add(x, dim, idx, src):
    return x.scatter_add(dim, idx, src)


def index_select(x, dim, idx):
    return x.index_select(dim, idx)


def masked_fill(x, mask, value):
    return x.masked_fill(mask, value)


def embedding(indices, weight, padding_idx=None):
    return _embedding(indices, weight, padding_idx)



def pow(input, exponent):
    """``input ** exponent`` elementwise (either may be a number; broadcasting applies).

    >>> import torchlight as tl
    >>> tl.pow(tl.tensor([1.0, 2.0]), 2).tolist(), tl.pow(2, tl.tensor([3])).tolist()
    ([1.0, 4.0], [8])
    """
    from .tensor import Tensor

    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input ** exponent


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim .. end_dim`` into one (a view when the layout allows).

    >>> import torchlight as tl
    >>> tl.flatten(tl.ones(2, 3, 4), 1).shape
    (2, 12)
    """
    return input.flatten(start_dim, end_dim)


def reshape(input, shape):
    """``input.reshape(shape)``.

    >>> import torchlight as tl
    >>> tl.reshape(tl.arange(6), (2, 3)).shape
    (2, 3)
    """
    return input.reshape(shape)


def transpose(input, dim0, dim1):
    """Swap two dims (a view).

    >>> import torchlight as tl
    >>> tl.transpose(tl.ones(2, 3), 0, 1).shape
    (3, 2)
    """
    return input.transpose(dim0, dim1)


def permute(input, dims):
    """Reorder the dims (a view): ``permute(x, (2, 0, 1))``.

    >>> import torchlight as tl
    >>> tl.permute(tl.ones(2, 3, 4), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return input.permute(*dims)


def squeeze(input, dim=None):
    """Drop size-1 dims (all, or those in ``dim``).

    >>> import torchlight as tl
    >>> tl.squeeze(tl.ones(1, 3, 1)).shape
    (3,)
    """
    return input.squeeze(dim)


def unsqueeze(input, dim):
    """Insert a size-1 dim at ``dim``.

    >>> import torchlight as tl
    >>> tl.unsqueeze(tl.ones(3), 0).shape
    (1, 3)
    """
    return input.unsqueeze(dim)


def narrow(input, dim, start, length):
    """Elements ``start .. start+length-1`` along ``dim`` (a view).

    >>> import torchlight as tl
    >>> tl.narrow(tl.arange(5), 0, 1, 2).tolist()
    [1, 2]
    """
    return input.narrow(dim, start, length)


def t(input):
    """Transpose of a tensor with at most 2 dims.

    >>> import torchlight as tl
    >>> tl.t(tl.ones(2, 3)).shape
    (3, 2)
    """
    return input.t()


def clip(input, min=None, max=None):
    """Alias of :func:`clamp`.

    >>> import torchlight as tl
    >>> tl.clip(tl.tensor([-2.0, 0.5, 2.0]), -1, 1).tolist()
    [-1.0, 0.5, 1.0]
    """
    return input.clamp(min, max)


def neg(input):
    """``-input``.

    >>> import torchlight as tl
    >>> tl.neg(tl.tensor([1, -2])).tolist()
    [-1, 2]
    """
    return -input


def square(input):
    """``input * input`` elementwise.

    >>> import torchlight as tl
    >>> tl.square(tl.tensor([3.0])).tolist()
    [9.0]
    """
    return input.square()


def sign(input):
    """-1, 0 or 1 by the sign of each element (no gradient).

    >>> import torchlight as tl
    >>> tl.sign(tl.tensor([-2.0, 0.0, 5.0])).tolist()
    [-1.0, 0.0, 1.0]
    """
    return input.sign()


def numel(input):
    """The number of elements of ``input``.

    >>> import torchlight as tl
    >>> tl.numel(tl.ones(2, 3))
    6
    """
    return input.numel()


def is_tensor(obj):
    """True when ``obj`` is a torchlight tensor (parameters included).

    >>> import torchlight as tl
    >>> tl.is_tensor(tl.ones(1)), tl.is_tensor([1.0])
    (True, False)
    """
    from .tensor import Tensor

    return isinstance(obj, Tensor)


def is_floating_point(input):
    """True when ``input`` has a floating dtype.

    >>> import torchlight as tl
    >>> tl.is_floating_point(tl.ones(1)), tl.is_floating_point(tl.arange(2))
    (True, False)
    """
    return input.is_floating_point()


def argwhere(input):
    """The ``(count, ndim)`` int64 indices of the non-zero elements (``nonzero(input)``).

    >>> import torchlight as tl
    >>> tl.argwhere(tl.tensor([0, 7, 7])).tolist()
    [[1], [2]]
    """
    return nonzero(input)
