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
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)

from .tensor import dtypes as _dtypes  # noqa: E402
from .tensor.backend import (  # noqa: E402
    available_backends,
    get_backend,
    get_default_device,
    register_backend,
    set_default_device,
)
from .tensor.dlpack import from_dlpack  # noqa: E402
from .tensor.errors import (  # noqa: E402
    BackendError,
    DeviceUnavailableError,
    DTypeError,
    ShapeError,
    TensorIndexError,
)
from .tensor.factories import (  # noqa: E402
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from .tensor.functional import (  # noqa: E402
    abs,
    amax,
    amin,
    argmax,
    argmin,
    cat,
    chunk,
    clamp,
    cos,
    embedding,
    exp,
    gather,
    gelu,
    index_select,
    layer_norm,
    log,
    log_softmax,
    logsumexp,
    masked_fill,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    pad,
    prod,
    relu,
    rsqrt,
    scatter_add,
    sigmoid,
    silu,
    sin,
    softmax,
    softplus,
    split,
    sqrt,
    stack,
    std,
    sum,
    tanh,
    tril,
    triu,
    var,
    where,
)
from .tensor.random import Generator, default_generator, initial_seed, manual_seed, seed  # noqa: E402
from .tensor.tensor import Tensor  # noqa: E402

float32 = _dtypes.float32
float64 = _dtypes.float64
int64 = _dtypes.int64
bool = _dtypes.bool_  # noqa: A001 - PyTorch's name
float = _dtypes.float32  # noqa: A001
double = _dtypes.float64
long = _dtypes.int64
dtype = _dtypes.DType

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
}


def __getattr__(name):
    if name == "__version__":
        # one version for every distribution (the repository's VERSION file), read from the
        # installed metadata on first use rather than typed here a second time
        from importlib.metadata import version

        return version("torchlight-tensor")
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


def save(obj, path):
    """Save tensors/state dicts to ``.npz`` (provided by torchlight-nn's checkpoint module).

    ``obj`` is a tensor, or a (nested) dict / list of tensors and plain Python values, such as a
    :meth:`~torchlight.nn.Module.state_dict` or an optimizer's.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> net = nn.Linear(4, 2)
    >>> tl.save(net.state_dict(), path)
    >>> nn.Linear(4, 2).load_state_dict(tl.load(path))
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    """
    return __getattr__("nn").checkpoint.save(obj, path)


def load(path):
    """Load what :func:`save` wrote, without pickle.

    Tensors come back with their saved dtype and device; the file is read as arrays, never
    unpickled, so a checkpoint cannot run code. See :func:`save` for an example.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tensors.npz")
    >>> tl.save({"w": tl.ones(2)}, path)
    >>> tl.load(path)
    {'w': tensor([1., 1.])}
    """
    return __getattr__("nn").checkpoint.load(path)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("importlib", "pkgutil")]
