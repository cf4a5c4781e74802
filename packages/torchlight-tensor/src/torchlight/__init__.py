"""torchlight: a readable deep-learning framework written from scratch.

``import torchlight as tl`` gives the tensor API (this distribution, torchlight-tensor). The
other distributions are portions of the same namespace package and appear as attributes when
installed: ``tl.nn``, ``tl.optim`` (torchlight-nn), ``tl.data`` (torchlight-data),
``tl.distributed`` (torchlight-distributed). They are imported lazily, on first use.
"""

import importlib
import pkgutil

# Let other distributions contribute subpackages (torchlight.nn, torchlight.backends.numba, ...)
# whether they are installed as wheels or as editable .pth path entries.
__path__ = pkgutil.extend_path(__path__, __name__)

from torchlight.autograd import (  # noqa: E402
    AutogradError,
    TorchlightError,
    enable_grad,
    gradcheck,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

from . import accelerator, amp, cuda, serialization  # noqa: E402
from .amp import autocast  # noqa: E402
from .compiler import compile  # noqa: E402,A004
from .serialization import load, save  # noqa: E402
from .tensor import dtypes as _dtypes  # noqa: E402
from .tensor.backend import (  # noqa: E402
    available_backends,
    get_backend,
    get_default_device,
    get_num_threads,
    register_backend,
    set_default_device,
    set_num_threads,
)
from .tensor.device import device  # noqa: E402
from .tensor.dtypes import (  # noqa: E402
    get_default_dtype,
    get_float32_matmul_precision,
    set_default_dtype,
    set_float32_matmul_precision,
)
from .tensor.errors import (  # noqa: E402
    BackendError,
    DeviceUnavailableError,
    DTypeError,
    OutOfMemoryError,
    ShapeError,
    TensorIndexError,
)
from .tensor.factories import (  # noqa: E402
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .tensor.functional import (  # noqa: E402
    abs,
    allclose,
    amax,
    amin,
    argmax,
    argmin,
    argsort,
    argwhere,
    bmm,
    cat,
    ceil,
    chunk,
    clamp,
    clip,
    cos,
    cumsum,
    diag,
    div,
    dot,
    einsum,
    embedding,
    equal,
    erf,
    exp,
    exp2,
    expm1,
    flatten,
    flip,
    floor,
    floor_divide,
    gather,
    gelu,
    index_select,
    is_floating_point,
    is_tensor,
    isclose,
    layer_norm,
    log,
    log1p,
    log2,
    log10,
    log_softmax,
    logsumexp,
    masked_fill,
    masked_select,
    matmul,
    max,
    maximum,
    mean,
    meshgrid,
    min,
    minimum,
    mm,
    narrow,
    neg,
    nonzero,
    norm,
    numel,
    outer,
    pad,
    permute,
    pow,
    prod,
    relu,
    remainder,
    repeat_interleave,
    reshape,
    roll,
    round,
    rsqrt,
    scatter,
    scatter_add,
    select,
    sigmoid,
    sign,
    silu,
    sin,
    softmax,
    softplus,
    sort,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    std,
    std_mean,
    sum,
    t,
    tanh,
    topk,
    transpose,
    tril,
    triu,
    trunc,
    unbind,
    unsqueeze,
    var,
    var_mean,
    where,
)
from .tensor.printing import get_printoptions, set_printoptions  # noqa: E402
from .tensor.random import Generator, default_generator, initial_seed, manual_seed, seed  # noqa: E402
from .tensor.sampling import bernoulli, multinomial  # noqa: E402
from .tensor.size import Size  # noqa: E402
from .tensor.tensor import Tensor  # noqa: E402
from .tensor.typed import BoolTensor, DoubleTensor, FloatTensor, IntTensor, LongTensor  # noqa: E402
from .tensor.typeinfo import finfo, iinfo  # noqa: E402

float32 = _dtypes.float32
float64 = _dtypes.float64
int64 = _dtypes.int64
bool = _dtypes.bool_  # noqa: A001 - PyTorch's name
float = _dtypes.float32  # noqa: A001
double = _dtypes.float64
long = _dtypes.int64
# one integer dtype: PyTorch's int32 names select it too (as tl.IntTensor and int32 numpy data do)
int32 = _dtypes.int64
int = _dtypes.int64  # noqa: A001
dtype = _dtypes.DType
float16 = (
    _dtypes.float16
)  # named so programs import; any use raises DTypeError (see UnsupportedDType)
half = _dtypes.float16
bfloat16 = _dtypes.bfloat16

# Lazily imported portions: attribute -> (module, distribution that provides it)
_LAZY = {
    "nn": ("torchlight.nn", "torchlight-nn"),
    "optim": ("torchlight.optim", "torchlight-nn"),
    "data": ("torchlight.data", "torchlight-data"),
    "jit": ("torchlight.jit", "torchlight-tensor"),
    "onnx": ("torchlight.onnx", "torchlight-tensor"),
    "distributed": ("torchlight.distributed", "torchlight-distributed"),
    "testing": ("torchlight.testing", "torchlight-testing"),
    "autograd": ("torchlight.autograd", "torchlight-autograd"),
    "distributions": ("torchlight.distributions", "torchlight-nn"),
}


def __getattr__(name):
    if name == "__version__":
        # one version for every distribution (the repository's VERSION file), read from the
        # installed metadata on first use rather than typed here a second time
        from importlib.metadata import version

        return version("torchlight-tensor")
    if name == "backends":
        # PyTorch imports torch.backends with torch (programs write torch.backends.cudnn.benchmark
        # first thing); torchlight.backends is the namespace the backend plugins fill, so reading
        # it loads their entry points, each of which imports its package into the namespace.
        from .tensor.backend import registry

        registry._discover()
        try:
            mod = importlib.import_module("torchlight.backends")
        except ModuleNotFoundError:
            raise AttributeError(
                "module 'torchlight' has no attribute 'backends': no backend plugin distribution "
                "(torchlight-backend-numba, torchlight-backend-cuda) is installed"
            ) from None
        globals()[name] = mod
        return mod
    if name in _LAZY:
        module, dist = _LAZY[name]
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not module.startswith(exc.name):
                raise
            raise ImportError(
                f"torchlight.{name} is provided by the distribution {dist!r}, which is not "
                f"installed. From a checkout of the torchlight repository: "
                f"`python -m pip install ./packages/{dist}`; from release wheels: "
                f"`python -m pip install --no-index --find-links <wheel-dir> {dist}` "
                f"(see the installation page of the docs)"
            ) from None
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'torchlight' has no attribute {name!r}")


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("importlib", "pkgutil")]
