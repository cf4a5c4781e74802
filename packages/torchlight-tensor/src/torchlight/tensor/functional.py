"""Function-style spellings of tensor ops (``tl.exp(x)``, ``tl.cat([...])``), as in PyTorch."""

from .functions import linalg
from .functions.activation import layer_norm, log_softmax, softmax
from .functions.index import embedding as _embedding
from .functions.shape import cat, chunk, pad, split, stack, tril, triu
from .tensor import where

__all__ = [
    "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "gelu", "silu",
    "softplus", "clamp", "maximum", "minimum", "sum", "mean", "var", "std", "max", "min", "amax",
    "amin", "argmax", "argmin", "prod", "logsumexp", "softmax", "log_softmax", "layer_norm",
    "matmul", "cat", "stack", "split", "chunk", "tril", "triu", "pad", "where", "gather",
    "scatter_add", "index_select", "masked_fill", "embedding",
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

