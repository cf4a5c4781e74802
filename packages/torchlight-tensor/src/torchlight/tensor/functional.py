"""Function-style spellings of tensor ops (``tl.exp(x)``, ``tl.cat([...])``), as in PyTorch."""

from .functions import linalg
from .functions.activation import layer_norm, log_softmax, softmax
from .functions.closeness import allclose, equal, isclose
from .functions.concat import cat, chunk, split, stack
from .functions.gathering import embedding as _embedding
from .functions.gathering import scatter
from .functions.index import masked_select, nonzero
from .functions.linalg import bmm, diag, dot, einsum, mm, norm, outer
from .functions.reorder import cumsum, flip, repeat_interleave, roll, select, unbind
from .functions.rounding import ceil, div, floor, floor_divide, remainder, round, trunc
from .functions.shape import meshgrid, pad, tril, triu
from .functions.sorting import argsort, sort, topk
from .functions.special import erf, exp2, expm1, log1p, log2, log10, std_mean, var_mean
from .tensor import Tensor, where

__all__ = [
    "abs",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "silu",
    "softplus",
    "clamp",
    "maximum",
    "minimum",
    "sum",
    "mean",
    "var",
    "std",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "prod",
    "logsumexp",
    "softmax",
    "log_softmax",
    "layer_norm",
    "matmul",
    "cat",
    "stack",
    "split",
    "chunk",
    "tril",
    "triu",
    "pad",
    "where",
    "gather",
    "scatter_add",
    "index_select",
    "masked_fill",
    "embedding",
    "pow",
    "mm",
    "bmm",
    "dot",
    "outer",
    "diag",
    "einsum",
    "norm",
    "flatten",
    "reshape",
    "transpose",
    "permute",
    "squeeze",
    "unsqueeze",
    "narrow",
    "t",
    "clip",
    "neg",
    "square",
    "sign",
    "numel",
    "is_tensor",
    "is_floating_point",
    "isclose",
    "allclose",
    "equal",
    "cumsum",
    "flip",
    "roll",
    "repeat_interleave",
    "select",
    "unbind",
    "sort",
    "argsort",
    "topk",
    "scatter",
    "nonzero",
    "masked_select",
    "argwhere",
    "floor",
    "ceil",
    "trunc",
    "round",
    "floor_divide",
    "remainder",
    "div",
    "meshgrid",
    "log1p",
    "expm1",
    "log2",
    "log10",
    "exp2",
    "erf",
    "var_mean",
    "std_mean",
]


def abs(x):
    """Elementwise absolute value, :math:`|x|`.

    >>> tl.abs(tl.tensor([-1.0, 0.5]))
    tensor([1. , 0.5])
    """
    return x.abs()


def exp(x):
    """Elementwise exponential, :math:`e^{x}` (its derivative is itself).

    >>> tl.exp(tl.tensor([0.0, 1.0]))
    tensor([1.    , 2.7183])
    """
    return x.exp()


def log(x):
    r"""Elementwise natural logarithm, :math:`\ln x` (``-inf`` at 0, ``nan`` below; the gradient is
    :math:`1/x`).

    >>> tl.log(tl.tensor([1.0, 100.0]))
    tensor([0.    , 4.6052])
    """
    return x.log()


def sqrt(x):
    r"""Elementwise square root, :math:`\sqrt{x}` (gradient :math:`1/(2\sqrt{x})`).

    >>> tl.sqrt(tl.tensor([4.0, 9.0]))
    tensor([2., 3.])
    """
    return x.sqrt()


def rsqrt(x):
    r"""Elementwise reciprocal square root, :math:`1/\sqrt{x}` (as used by normalisation layers).

    >>> tl.rsqrt(tl.tensor([4.0, 0.25]))
    tensor([0.5, 2. ])
    """
    return x.rsqrt()


def sin(x):
    """Elementwise sine of ``x`` in radians.

    >>> tl.sin(tl.tensor([0.0, 3.14159265 / 2]))
    tensor([0., 1.])
    """
    return x.sin()


def cos(x):
    """Elementwise cosine of ``x`` in radians.

    >>> tl.cos(tl.tensor([0.0]))
    tensor([1.])
    """
    return x.cos()


def tanh(x):
    r"""Elementwise hyperbolic tangent :math:`\tanh x = \frac{e^x - e^{-x}}{e^x + e^{-x}}`, in
    :math:`(-1, 1)`; gradient :math:`1 - \tanh^2 x`.

    >>> tl.tanh(tl.tensor([0.0, 1.0]))
    tensor([0.    , 0.7616])
    """
    return x.tanh()


def sigmoid(x):
    r"""Elementwise logistic sigmoid :math:`\sigma(x) = 1/(1 + e^{-x})`, in :math:`(0, 1)`; gradient
    :math:`\sigma(x)(1 - \sigma(x))`.

    >>> tl.sigmoid(tl.tensor([0.0, 2.0]))
    tensor([0.5   , 0.8808])
    """
    return x.sigmoid()


def relu(x):
    r"""Elementwise rectified linear unit :math:`\max(x, 0)` (gradient 1 for :math:`x > 0`, else 0).

    >>> tl.relu(tl.tensor([-1.0, 0.0, 2.0]))
    tensor([0., 0., 2.])
    """
    return x.relu()


def gelu(x, approximate="none"):
    r"""Elementwise Gaussian error linear unit :math:`x\,\Phi(x)`, :math:`\Phi` the standard normal
    CDF: :math:`\tfrac{x}{2}(1 + \operatorname{erf}(x/\sqrt2))`. ``approximate="tanh"`` uses
    :math:`\tfrac{x}{2}\bigl(1 + \tanh(\sqrt{2/\pi}(x + 0.044715x^3))\bigr)` (GPT-2's form).

    >>> tl.gelu(tl.tensor([-1.0, 0.0, 1.0]))
    tensor([-0.1587,  0.    ,  0.8413])
    """
    return x.gelu(approximate)


def silu(x):
    r"""Elementwise SiLU (swish), :math:`x\,\sigma(x)`.

    >>> tl.silu(tl.tensor([0.0, 1.0]))
    tensor([0.    , 0.7311])
    """
    return x.silu()


def softplus(x, beta=1.0, threshold=20.0):
    r"""Elementwise :math:`\frac{1}{\beta}\log(1 + e^{\beta x})`, a smooth ReLU; where :math:`\beta x`
    exceeds ``threshold`` the result is ``x`` itself (equal to float precision, and never overflows).

    >>> tl.softplus(tl.tensor([0.0, 30.0]))
    tensor([ 0.6931, 30.    ])
    """
    return x.softplus(beta, threshold)


def clamp(x, min=None, max=None):
    r"""Elementwise :math:`\min(\max(x, \text{min}), \text{max})`; either bound may be ``None`` (not
    both). The gradient is 1 inside the range and 0 where a bound was applied.

    >>> tl.clamp(tl.tensor([-2.0, 0.5, 3.0]), min=0.0, max=1.0)
    tensor([0. , 0.5, 1. ])
    """
    return x.clamp(min, max)


def maximum(a, b):
    """Elementwise maximum of ``a`` and ``b`` (broadcast against each other). Where they are equal
    the gradient is split evenly between them.

    >>> tl.maximum(tl.tensor([1.0, 5.0]), tl.tensor([3.0, 2.0]))
    tensor([3., 5.])
    """
    return a.maximum(b)


def minimum(a, b):
    """Elementwise minimum of ``a`` and ``b`` (broadcast against each other).

    >>> tl.minimum(tl.tensor([1.0, 5.0]), tl.tensor([3.0, 2.0]))
    tensor([1., 2.])
    """
    return a.minimum(b)


def sum(x, dim=None, keepdim=False, dtype=None):
    """Sum of the elements: of all of them (a 0-d tensor), or over ``dim`` (an int or a tuple of
    ints). Reduced dimensions are dropped unless ``keepdim=True``, which keeps them with size 1
    (handy for broadcasting back). ``dtype`` converts first; ``bool`` and integer inputs sum as
    ``int64``.

    Shapes: ``(a, b, c)`` summed over ``dim=1`` gives ``(a, c)``, or ``(a, 1, c)`` with
    ``keepdim=True``.

    >>> x = tl.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> tl.sum(x)
    tensor(21.)
    >>> tl.sum(x, dim=0)
    tensor([5., 7., 9.])
    >>> tl.sum(x, dim=1, keepdim=True)
    tensor([[ 6.],
            [15.]])
    """
    return x.sum(dim, keepdim, dtype)


def mean(x, dim=None, keepdim=False):
    r"""Arithmetic mean :math:`\frac1n\sum_i x_i` over all elements or over ``dim`` (int or tuple);
    ``keepdim`` as in :func:`sum`. Integer inputs are converted to float.

    >>> x = tl.tensor([[1.0, 2.0], [3.0, 5.0]])
    >>> tl.mean(x), tl.mean(x, dim=0)
    (tensor(2.75), tensor([2. , 3.5]))
    """
    return x.mean(dim, keepdim)


def var(x, dim=None, unbiased=True, keepdim=False, correction=None):
    r"""Variance :math:`\frac{1}{n - c}\sum_i (x_i - \bar x)^2` over all elements or over ``dim``.

    The correction :math:`c` is 1 by default (Bessel's, an unbiased estimate), 0 with
    ``unbiased=False``, or any value given as ``correction``.

    >>> x = tl.tensor([1.0, 2.0, 3.0, 4.0])
    >>> tl.var(x), tl.var(x, unbiased=False)
    (tensor(1.6667), tensor(1.25))
    """
    return x.var(dim, unbiased, keepdim, correction)


def std(x, dim=None, unbiased=True, keepdim=False, correction=None):
    r"""Standard deviation, :math:`\sqrt{\operatorname{var}(x)}`, with the same ``dim`` /
    ``unbiased`` / ``correction`` arguments as :func:`var`.

    >>> tl.std(tl.tensor([1.0, 2.0, 3.0, 4.0]), unbiased=False)
    tensor(1.118)
    """
    return x.std(dim, unbiased, keepdim, correction)


def max(x, dim=None, keepdim=False):
    """The largest element (no ``dim``: a 0-d tensor), or, along ``dim``, a named tuple
    ``(values, indices)`` like PyTorch's: the maximum of each slice and where it is (the first one on
    ties). The gradient flows to the winning element.

    >>> x = tl.tensor([[1.0, 5.0], [7.0, 2.0]])
    >>> tl.max(x)
    tensor(7.)
    >>> values, indices = tl.max(x, dim=1)
    >>> values, indices
    (tensor([5., 7.]), tensor([1, 0]))
    """
    return x.max(dim, keepdim)


def min(x, dim=None, keepdim=False):
    """The smallest element, or ``(values, indices)`` along ``dim``; see :func:`max`.

    >>> tl.min(tl.tensor([[1.0, 5.0], [7.0, 2.0]]), dim=0).values
    tensor([1., 2.])
    """
    return x.min(dim, keepdim)


def amax(x, dim=None, keepdim=False):
    """Largest value over ``dim`` (an int, a tuple, or all dimensions when ``None``), values only;
    tied maxima share the gradient equally.

    >>> tl.amax(tl.tensor([[1.0, 5.0], [7.0, 2.0]]), dim=0)
    tensor([7., 5.])
    """
    return x.amax(dim, keepdim)


def amin(x, dim=None, keepdim=False):
    """Smallest value over ``dim`` (an int, a tuple, or all dimensions), values only.

    >>> tl.amin(tl.tensor([[1.0, 5.0], [7.0, 2.0]]), dim=1)
    tensor([1., 2.])
    """
    return x.amin(dim, keepdim)


def argmax(x, dim=None, keepdim=False):
    """Index (``int64``) of the largest element: in the flattened tensor when ``dim`` is ``None``,
    else along ``dim``. The first index wins on ties; there is no gradient.

    >>> x = tl.tensor([[1.0, 5.0], [7.0, 2.0]])
    >>> tl.argmax(x), tl.argmax(x, dim=1)
    (tensor(2), tensor([1, 0]))
    """
    return x.argmax(dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    """Index (``int64``) of the smallest element, flattened or along ``dim``; see :func:`argmax`.

    >>> tl.argmin(tl.tensor([3.0, 1.0, 2.0]))
    tensor(1)
    """
    return x.argmin(dim, keepdim)


def prod(x, dim=None, keepdim=False):
    r"""Product :math:`\prod_i x_i` of all elements or over ``dim``. The gradient
    :math:`\partial/\partial x_i = \prod_{j\ne i} x_j` is computed without dividing, so zeros are fine.

    >>> tl.prod(tl.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=1)
    tensor([ 2., 12.])
    """
    return x.prod(dim, keepdim)


def logsumexp(x, dim=None, keepdim=False):
    r""":math:`\log\sum_i e^{x_i}` over ``dim``, computed as :math:`m + \log\sum_i e^{x_i - m}` with
    :math:`m = \max_i x_i`, so it never overflows. Its gradient is the softmax.

    >>> tl.logsumexp(tl.tensor([100.0, 100.0]), dim=0)
    tensor(100.6931)
    """
    return x.logsumexp(dim, keepdim)


def matmul(a, b):
    r"""Matrix product with PyTorch's broadcasting rules.

    * ``(n, k) @ (k, m) -> (n, m)``: :math:`C_{ij} = \sum_l A_{il} B_{lj}`;
    * a 1-d operand is a vector: ``(k,) @ (k, m) -> (m,)``, ``(n, k) @ (k,) -> (n,)``,
      ``(k,) @ (k,)`` is the dot product (0-d);
    * more than two dimensions: the leading ones are batch dimensions and broadcast,
      ``(b, n, k) @ (k, m) -> (b, n, m)``, ``(b, 1, n, k) @ (h, k, m) -> (b, h, n, m)``.

    Gradients: :math:`\partial L/\partial A = G B^\top`, :math:`\partial L/\partial B = A^\top G`
    (summed over broadcast batch dimensions).

    >>> a = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> tl.matmul(a, tl.tensor([[1.0], [1.0]]))
    tensor([[3.],
            [7.]])
    >>> tl.matmul(tl.ones(8, 2, 3), tl.ones(3, 5)).shape
    (8, 2, 5)
    """
    return linalg.matmul(a, b)


def gather(x, dim, idx):
    """Pick elements along ``dim`` by index: for ``dim=1``, ``out[i][j] = x[i][idx[i][j]]``
    (similarly for other dims). ``idx`` is ``int64`` with the same number of dimensions as ``x``; the
    result has ``idx``'s shape. The backward pass scatter-adds the gradient.

    >>> x = tl.tensor([[10.0, 11.0, 12.0], [20.0, 21.0, 22.0]])
    >>> tl.gather(x, 1, tl.tensor([[2], [0]]))
    tensor([[12.],
            [20.]])
    """
    return x.gather(dim, idx)


def scatter_add(x, dim, idx, src):
    """A copy of ``x`` with ``src`` added at the positions ``idx`` along ``dim``: for ``dim=0``,
    ``out[idx[i][j]][j] += src[i][j]``. Repeated indices accumulate (the transpose of :func:`gather`).

    >>> tl.scatter_add(tl.zeros(3), 0, tl.tensor([0, 2, 0]), tl.tensor([1.0, 2.0, 3.0]))
    tensor([4., 0., 2.])
    """
    return x.scatter_add(dim, idx, src)


def index_select(x, dim, idx):
    """The slices of ``x`` at positions ``idx`` (a 1-d ``int64`` tensor) along ``dim``, in that order
    (repeats allowed): dimension ``dim`` of the result has size ``len(idx)``.

    >>> x = tl.tensor([[1, 2], [3, 4], [5, 6]])
    >>> tl.index_select(x, 0, tl.tensor([2, 0]))
    tensor([[5, 6],
            [1, 2]])
    """
    return x.index_select(dim, idx)


def masked_fill(x, mask, value):
    """A copy of ``x`` holding ``value`` where ``mask`` (a ``bool`` tensor broadcastable to ``x``) is
    ``True``; the gradient is zero there. The usual way to build a causal attention mask.

    >>> scores = tl.zeros(2, 2)
    >>> tl.masked_fill(scores, tl.triu(tl.ones(2, 2), 1).bool(), float("-inf"))
    tensor([[  0., -inf],
            [  0.,   0.]])
    """
    return x.masked_fill(mask, value)


def embedding(indices, weight, padding_idx=None):
    """Rows of ``weight`` (``(num_embeddings, dim)``) picked by the integer ``indices`` (any shape
    ``S``): the result has shape ``S + (dim,)``. Rows at ``padding_idx`` get no gradient. The function
    behind :class:`torchlight.nn.Embedding`.

    >>> w = tl.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    >>> tl.embedding(tl.tensor([[2, 1]]), w)
    tensor([[[2., 2.],
             [1., 1.]]])
    """
    return _embedding(indices, weight, padding_idx)


def pow(input, exponent):
    """``input ** exponent`` elementwise (either may be a number; broadcasting applies).

    >>> import torchlight as tl
    >>> tl.pow(tl.tensor([1.0, 2.0]), 2).tolist(), tl.pow(2, tl.tensor([3])).tolist()
    ([1.0, 4.0], [8])
    """
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input**exponent


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
