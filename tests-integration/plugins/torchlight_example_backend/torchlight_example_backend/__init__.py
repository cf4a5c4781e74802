"""An example torchlight backend: the backend contract on numpy, through the public API only.

A kernel sees views ``(storage, shape, strides, offset)`` (strides/offset in elements) and fills
``out``; the core has already checked shapes, broadcast (stride 0), cast and allocated.
"""

import math

import numpy as np

from torchlight.tensor.backend.bounds import check_host
from torchlight.tensor.backend.protocol import API_VERSION, BackendSpec
from torchlight.tensor.formulas import INV_SQRT_2PI, SQRT1_2, gelu_tanh_arg, gelu_tanh_slope

__all__ = ["ExampleBackend", "SPEC"]

_erf = np.vectorize(math.erf, otypes=[np.float64])


def view(v):
    """The ndarray that a TensorData describes, sharing its storage."""
    st = v.storage
    if v.size == 0:
        return np.empty(v.shape, st.dtype)
    item = st.itemsize
    return np.ndarray(v.shape, st.dtype, st, v.offset * item, [s * item for s in v.strides])


def _sig(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _gelu_tanh_d(x):
    t = np.tanh(gelu_tanh_arg(x))
    return t, gelu_tanh_slope(x, t)


MAP = {
    "copy": lambda x: x,
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: 1 / x,
    "square": np.square,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": _sig,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: x * 0.5 * (1 + _erf(x * SQRT1_2)),
    "gelu_tanh": lambda x: 0.5 * x * (1 + _gelu_tanh_d(x)[0]),
    "silu": lambda x: x * _sig(x),
    "softplus": lambda x: np.logaddexp(0, x),
    "erf": _erf,
    "logical_not": np.logical_not,
}
ZIP = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "relu_back": lambda x, g: g * (x > 0),
    "sigmoid_back": lambda y, g: g * y * (1 - y),
    "tanh_back": lambda y, g: g * (1 - y * y),
    "gelu_back": lambda x, g: (
        g * (0.5 * (1 + _erf(x * SQRT1_2)) + x * np.exp(-0.5 * x * x) * INV_SQRT_2PI)
    ),
    "gelu_tanh_back": lambda x, g: g * _gelu_tanh_d(x)[1],
    "silu_back": lambda x, g: g * _sig(x) * (1 + x * (1 - _sig(x))),
    "softplus_back": lambda x, g: g * _sig(x),
}
REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


class ExampleBackend:
    name = "example"
    device = "example"
    API_VERSION = API_VERSION
    capabilities = frozenset()  # no fused kernels: the core uses its composite fallbacks

    def empty(self, n, dtype):
        return np.empty(n, dtype=dtype.np)

    def from_numpy(self, array):
        return np.array(array, copy=True).reshape(-1)

    def to_numpy(self, v):
        return view(v)

    def map(self, op, a, out):
        o = view(out)
        with np.errstate(all="ignore"):
            o[...] = MAP[op](
                view(a).astype(np.float64) if o.dtype.kind == "f" and op != "copy" else view(a)
            )

    def zip(self, op, a, b, out):
        x, y = view(a), view(b)
        if x.dtype.kind == "f":  # float32 math in float64, rounded once into out
            x, y = x.astype(np.float64), y.astype(np.float64)
        if x.dtype == np.bool_ and op in ("add", "mul", "maximum", "minimum"):
            op = "logical_or" if op in ("add", "maximum") else "logical_and"
        with np.errstate(all="ignore"):
            view(out)[...] = ZIP[op](x, y)

    def where(self, cond, a, b, out):
        view(out)[...] = np.where(view(cond), view(a), view(b))

    def reduce(self, op, a, dims, out):
        x = view(a)
        if op in ("argmax", "argmin"):
            view(out)[...] = (np.argmax if op == "argmax" else np.argmin)(
                x, axis=dims[0], keepdims=True
            )
        else:
            acc = {"dtype": np.float64} if x.dtype.kind == "f" and op in ("sum", "prod") else {}
            view(out)[...] = REDUCE[op](x, axis=tuple(dims), keepdims=True, **acc)

    def matmul(self, a, b, out):
        view(out)[...] = np.matmul(view(a), view(b))

    # data-dependent indices are checked before numpy sees them (it would wrap negatives):
    # every backend raises the same TensorIndexError for an index outside [0, size)
    def take(self, a, dim, index, out):
        check_host("take", view(index), view(a).shape[dim])
        view(out)[...] = np.take(view(a), view(index), axis=dim)

    def put_add(self, out, dim, index, src):
        check_host("put_add", view(index), view(out).shape[dim])
        np.add.at(view(out), (slice(None),) * dim + (view(index),), view(src))

    def gather(self, a, dim, index, out):
        idx = view(index)
        check_host("gather", idx, view(a).shape[dim])
        x = view(a)[
            tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(idx.shape))
        ]
        view(out)[...] = np.take_along_axis(x, idx, axis=dim)

    def scatter_add(self, out, dim, index, src):
        idx = view(index)
        check_host("scatter_add", idx, view(out).shape[dim])
        grid = list(np.indices(idx.shape, sparse=True))
        grid[dim] = idx
        np.add.at(view(out), tuple(grid), view(src)[tuple(slice(0, n) for n in idx.shape)])


SPEC = BackendSpec("example", ExampleBackend)
