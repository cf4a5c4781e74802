"""The backend contract: the few primitives every backend implements over strided views.

A kernel sees views ``(storage, shape, strides, offset)`` (``TensorData``), with storage owned by
the backend. The core — not the backend — checks shapes, computes the broadcast output shape,
expands inputs to it (stride 0), casts them to a common dtype, allocates ``out`` and chooses the
op; a backend only fills ``out``. Ops are named strings (tables below) so numpy maps them to
ufuncs and compiled backends to kernel tables.

Required primitives::

    empty(n, dtype) -> storage            from_numpy(ndarray) -> storage
    to_numpy(view) -> ndarray             (may share memory; the core copies when it must)
    map(op, a, out)                       unary, op in MAP_OPS; a.shape == out.shape
    zip(op, a, b, out)                    binary, op in ZIP_OPS; a.shape == b.shape == out.shape
    reduce(op, a, dims, out)              op in REDUCE_OPS; out.shape[d] == 1 for d in dims
                                          (argmax/argmin: exactly one dim)
    where(cond, a, b, out)                out = cond ? a : b (cond: bool view; all same shape)
    matmul(a, b, out)                     (..., n, k) @ (..., k, m); batch dims already equal
    take(a, dim, index, out)              out = a.index_select(dim, index) (index: int64 view)
    put_add(out, dim, index, src)         out.index_add_(dim, index, src): repeated indices add up
    gather(a, dim, index, out) / scatter_add(out, dim, index, src)   PyTorch semantics

Optional capabilities (listed in ``capabilities``; the core has composite fallbacks)::

    "softmax":   softmax(a, dim, out, log=False); softmax_backward(y, g, dim, out, log=False)
    "logsumexp": logsumexp(a, dim, out): out = m + log Σ exp(a - m) along dim, out of a's shape with
                 size 1 at dim, m the max along dim or 0 where that max is ±inf (a slice of -inf
                 gives -inf, one holding +inf gives +inf, NaN stays NaN); dim not empty
    "layernorm": layernorm(x, w, b, eps, out, mean, rstd); layernorm_backward(g, x, w, mean, rstd, dx, dw, db)
    "cross_entropy": cross_entropy(x, target, weight, loss, logs); cross_entropy_backward(x, target, weight, logs, g, dx)
                 x (N, C) logits, target (N,) int64 in [0, C), weight (N,) per-row weight (0: row dropped);
                 m = max(x, 1), logs = log Σ_c exp(x - m) (saved for the backward: m + logs rounds
                 to m near the float32 limit), loss = weight·((m - x[i, target]) + logs);
                 dx = g·weight·(exp((x - m) - logs) - onehot) with m recomputed, loss and dx exactly
                 0 on rows of weight 0
    "nll":       nll(x, target, out, divisor): out (0-d) = (Σ_i x[i, target[i]]) / divisor, the
                 forward of an unweighted nll_loss in one call (divisor -N for its mean, -1 for
                 its sum: the picked values are summed, then divided once). x (N, C) any
                 strides, N ≥ 1; target (N,) int64 in [0, C), any strides, bounds-checked by the
                 backend; out a 0-d view of x's dtype. Without it the core gathers, sums and
                 divides as three calls
    "adam":      adam_step(p, g, m, v, *, beta1, beta2, eps, decay, l2, maximize, step_size,
                 bias_correction2_sqrt): one Adam/AdamW update of p, m, v in place (contiguous
                 views of one shape and float dtype; decay = 1 - lr·λ for AdamW else 1, l2 = λ for
                 Adam else 0; formula in functions/updates.py)
    "adagrad":   adagrad_step(p, g, s, *, clr, l2, eps): one Adagrad update of p and the sum of
                 squares s in place (contiguous views of one shape and float dtype; clr the decayed
                 learning rate, l2 = λ; formula in functions/updates.py)
    "sgd":       sgd_step(p, g, buf, *, lr, momentum, dampening, l2, nesterov, maximize, first): one SGD
                 update of p, and of the momentum buffer buf (None when momentum is 0), in place
                 (contiguous views of one shape and float dtype; first: buf is new, set to the
                 gradient, not read; l2 = λ; formula in functions/updates.py)
    "gru_cell":  gru_cell(gi, gh, h, out, ws); gru_cell_backward(g, h, ws, dgi, dgh, dh)
                 gi, gh (N, 3H) gate pre-activations x·W_ihᵀ + b_ih and h·W_hhᵀ + b_hh (gates r, z, n),
                 h (N, H), any strides, one float dtype; out (N, H) = h', ws (N, 4H) = [r, z, n, gh_n];
                 backward: g (N, H) = ∂L/∂h' -> dgi, dgh (N, 3H), dh (N, H) (the direct g·z path only);
                 out, ws, g and the gradients contiguous (formulas in functions/recurrent.py)
    "lstm_cell": lstm_cell(gi, gh, c, out, ws); lstm_cell_backward(g, c, ws, dgates, dc)
                 gi, gh (N, 4H) (gates i, f, g, o), c (N, H), any strides; out (2, N, H) = [h'; c'],
                 ws (N, 5H) = [i, f, g, o, tanh c'] activated; backward: g (2, N, H) = [∂L/∂h'; ∂L/∂c']
                 -> dgates (N, 4H) (= ∂gi = ∂gh), dc (N, H); ws and the gradients contiguous; out and
                 g with contiguous rows but their h and c halves any distance apart (a packed
                 batch's step writes the first N rows of each half of a larger buffer)
    "cell_sequence": cell_sequence(kind, gi, w_hh, b_hh, states, ws, reverse) -> bool;
                 cell_sequence_backward(kind, g, states, w_hh, ws, dgi, dgh, carry, reverse) -> bool
                 every step of a GRU (kind "gru") or LSTM ("lstm") layer in one call, each step
                 gh = h·W_hhᵀ + b_hh then the cell of "gru_cell"/"lstm_cell" (whose workspace
                 layout ws[t] keeps). gi (T, N, G·H) contiguous, w_hh (G·H, H) and b_hh (G·H,) or
                 None any strides; states (T + 1, S, N, H) contiguous (S = 1 GRU, 2 LSTM: h, c)
                 with the initial state in slot 0 (slot T when reverse); step t reads slot t and
                 writes t + 1 (reverse: reads t + 1, writes t: ``sequence_slots`` below); ws (T, N, 4H or 5H) contiguous.
                 Backward: g (T + 1, S, N, H) = ∂L/∂states, contiguous; writes dgi, dgh (T, N,
                 G·H) contiguous (one buffer for an LSTM) and ∂L/∂(initial state) through the
                 steps into carry (S, N, H), zeros on entry (the initial slot's own g not added).
                 False declines, writing nothing, and the core runs the steps one cell call each
                 (a compiled backend declines sizes where a BLAS product per step is faster); the
                 backward declines exactly the sizes the forward declines
    "random":    random_(out, kind, seed, k): fill the contiguous float view ``out`` with independent
                 draws, kind "uniform" ([0, 1)) or "normal" (mean 0, variance 1), by the backend; the
                 numbers are a function of (seed, k, out.size) only — the generator's seed and how
                 many such fills it made since seeding (random.device_stream; random.stream_base
                 mixes the pair into one 64-bit key, for every backend alike). Without it,
                 rand/randn are drawn on the host and uploaded
    "dlpack":    dlpack_source(view) -> an object with __dlpack__/__dlpack_device__ describing the
                 view's memory (no copy); from_dlpack(obj, copy) -> (TensorData, dtype) on a DLPack
                 producer's memory (device memory; host memory is handled by the core)
    "join":      join(srcs, dim, out, new_dim): ``cat``/``stack`` in one call. ``srcs`` a sequence
                 of views of one dtype (any strides); new_dim False: they match ``out`` outside
                 ``dim`` and their sizes along it add up to ``out.shape[dim]`` (concatenate);
                 new_dim True: each has ``out``'s shape without ``dim`` and ``out.shape[dim] ==
                 len(srcs)`` (stack). ``out`` is contiguous. Without it the core copies the
                 inputs one by one into views of ``out``
    "windows":   window_add(g, kernel, stride, dilation, out) -> bool;
                 window_max_backward(g, x, y, kernel, stride, dilation, out) -> bool
                 sliding windows over the last nd = len(kernel) dims (functions/windows.py):
                 window w holds x[..., w·stride + j·dilation] for the kernel offsets j.
                 window_add (col2im): g (..., *outs, *kernel) any strides; out[..., w·stride +
                 j·dilation] += g[..., w, j] for every window w and offset j, offsets in row-major
                 order outermost. window_max_backward: x (..., *sizes) and y (..., *outs) its
                 windows' maxima, g (..., *outs), any strides; out += g[w] at window w's winner,
                 the first offset whose x equals y[w], or where y[w] is NaN the last NaN offset
                 (overlapping windows add up). One float dtype; out contiguous, zeros on entry.
                 False declines, writing nothing, and the core runs its composite (one pass per
                 kernel offset): a backend takes the geometries it has kernels for. Views that
                 disagree with the geometry (a window outside out) raise, writing nothing
    "broadcast": zip(op, a, b, out) takes operands as they are, of any shapes that broadcast to
                 out's (numpy's rules: aligned from the right, sizes equal or 1, missing leading
                 dims); without it the core expands each operand to out's shape (stride 0) first.
                 A view made per broadcast op, with its own handle, costs a small op about a
                 third of its time (a (1, 5) + (5, 5) add in a recurrence: 16 -> 11 us)
    "fill":      fill(out, value): out[...] = value written where the storage lives (no host
                 round trip); out is contiguous or 1-D, value a Python number of out's dtype kind
    "empty_handle": empty_handle(shape, dtype) -> (storage, handle): what empty(prod(shape),
                 dtype) gives, with the backend's own handle on the contiguous view of ``shape``
                 over it, which the core keeps in that view's ``cache`` (numpy: the ndarray of
                 that shape, which the first kernel on a new tensor would otherwise build: 0.4-0.6
                 µs of a small op's 5). Without it the core calls empty and the cache starts empty
    "new_result": map_new(op, a, dtype), zip_new(op, a, b, dtype) -> (storage, handle) |
                 None, for the ops named in the backend's frozenset ``new_result_ops``: what
                 map / zip would write into a new contiguous tensor of the result's shape (never
                 0-d: the core allocates those) and ``dtype``, in storage the backend allocates
                 as part of the op, with its handle as in "empty_handle" (numpy: the ufunc
                 allocates its own result, which saves the separate np.empty, about a tenth of a
                 small a + b). None declines (a dtype it does not give): the core allocates and
                 calls map / zip. The other ops always take that path, without a call
    "compile":   compile_elementwise(chain) -> kernel | None: ``chain`` an ElementwiseChain
                 (torchlight.jit.fusion: ops from FUSABLE_MAP/FUSABLE_ZIP on one float dtype);
                 kernel(input_views, output_views) writes every output of the chain, inputs of
                 the full shape or one element, outputs contiguous of the full shape (allocated
                 by the core); None declines and the chain runs op by op

Optional thread control (listed in ``capabilities``; without it the backend's threads are its own)::

    "threads":   set_num_threads(n): from now on one op uses at most n threads (n >= 1), what
                 ``torchlight.set_num_threads`` asks of every loaded backend and of each one
                 loaded later (numpy: the BLAS library's threads, numba: its thread pool)

Optional device queries (read with ``getattr``; answered for ``torchlight.cuda``)::

    synchronize()                         wait for queued work (absent: nothing is ever queued)
    device_name                           the hardware's name, e.g. "NVIDIA H200"
    empty_cache()                         release memory held for reuse but owned by no tensor

Memory capability (not an op: a promise about where storage lives)::

    "host_memory": storage is a 1-D numpy ndarray in host memory; ``from_numpy(array)`` may return
                 (a flat view of) ``array`` itself and ``to_numpy(view)`` returns an ndarray view
                 sharing the storage. Any two host-memory backends can therefore run kernels on
                 each other's storage: the core combines their tensors without a copy (an op
                 between the built-in ``cpu`` backend and another host-memory backend runs on
                 the other one) and ``from_numpy`` wraps an array zero-copy on a host-memory
                 default device. See ``dispatch.same_backend``. Code above the backend
                 (collectives, DDP's gradient buckets, another backend's compiled kernels) asks
                 :func:`host_memory`, never ``isinstance(storage, np.ndarray)``.

Bounds safety (every backend): ``take``, ``put_add``, ``gather``, ``scatter_add`` and the target
of ``cross_entropy``/``cross_entropy_backward``/``nll`` never read or write outside their buffers, whatever
the index holds. The core validates indices first, but a backend must not rely on it (an index
can be changed behind the core's back, e.g. through a shared ``.numpy()`` view): an index outside
``[0, size)`` raises ``TensorIndexError`` from ``bounds.index_error`` — right away, or, on a device
that runs asynchronously, at the next device→host copy. The helpers are in ``bounds.py``; the
conformance kit feeds every indexing primitive out-of-range indices.

Adding an op: a name here + a conformance-kit entry + a fallback, or an ``API_VERSION`` bump.
"""

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "API_VERSION",
    "MAP_OPS",
    "ZIP_OPS",
    "REDUCE_OPS",
    "HOST_MEMORY",
    "BROADCAST",
    "EMPTY_HANDLE",
    "NEW_RESULT",
    "NLL",
    "FILL",
    "THREADS",
    "WINDOWS",
    "Backend",
    "BackendSpec",
    "host_memory",
    "sequence_slots",
]

API_VERSION = 1

MAP_OPS = (
    "copy",
    "neg",
    "abs",
    "sign",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "square",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "gelu_tanh",
    "silu",
    "softplus",
    "erf",
    "logical_not",
)
"""Unary ops. Besides the obvious ones: ``gelu`` is x·Φ(x), ``gelu_tanh`` its tanh approximation,
``softplus`` log(1 + eˣ) computed stably, ``copy`` copies (and casts to ``out``'s dtype)."""

ZIP_OPS = (
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "lt",
    "le",
    "gt",
    "ge",
    "eq",
    "ne",
    "logical_and",
    "logical_or",
    "relu_back",
    "sigmoid_back",
    "tanh_back",
    "gelu_back",
    "gelu_tanh_back",
    "silu_back",
    "softplus_back",
)
"""Binary ops. ``<f>_back(x, g)`` = g · f'(x), the local chain-rule step for unary ``f`` (for
``sigmoid_back``/``tanh_back`` the first argument is the forward *output* y)."""

REDUCE_OPS = ("sum", "prod", "max", "min", "argmax", "argmin")

HOST_MEMORY = "host_memory"
"""Capability name: the backend's storage is a host numpy array (see the module docstring)."""

BROADCAST = "broadcast"
"""Capability name: ``zip`` broadcasts its operands itself (see the module docstring)."""

EMPTY_HANDLE = "empty_handle"
"""Capability name: ``empty_handle`` allocates with the view's handle (see the module docstring)."""

NEW_RESULT = "new_result"
"""Capability name: ``map_new``/``zip_new`` compute into storage they allocate (see the module docstring)."""

NLL = "nll"
"""Capability name: ``nll`` sums a loss's picked log-probabilities in one call (see the module docstring)."""

FILL = "fill"
"""Capability name: ``fill`` writes one value into a view where it lives (see the module docstring)."""

THREADS = "threads"
"""Capability name: ``set_num_threads`` caps the threads of one op (see the module docstring)."""
WINDOWS = "windows"
"""Capability name: col2im and a max pool's gradient in one call each (see the module docstring)."""


View = Any
"""A ``TensorData`` (``torchlight.tensor.storage``): not imported here, so the contract stays a leaf."""


@runtime_checkable
class Backend(Protocol):
    """What the core calls. See the module docstring for shapes and semantics."""

    name: str
    API_VERSION: int
    capabilities: frozenset

    def empty(self, n: int, dtype: Any) -> Any:
        """New storage for ``n`` elements of ``dtype`` (a :class:`~torchlight.tensor.dtypes.DType`), not initialised."""

    def from_numpy(self, array: Any) -> Any:
        """Storage holding the data of a C-contiguous ndarray (the backend may share its memory)."""

    def to_numpy(self, view: View) -> Any:
        """The elements of ``view`` (a ``TensorData``) as an ndarray of its shape; may share memory
        (the core copies when it must)."""

    def map(self, op: str, a: View, out: View) -> None:
        """Unary elementwise ``out = op(a)``: ``op`` is one of ``MAP_OPS``; ``a.shape == out.shape``
        (``copy`` also casts to ``out``'s dtype)."""

    def zip(self, op: str, a: View, b: View, out: View) -> None:
        """Binary elementwise ``out = op(a, b)``: ``op`` is one of ``ZIP_OPS``; ``a``, ``b`` and ``out``
        have one shape (the core broadcast the inputs with stride-0 views)."""

    def reduce(self, op: str, a: View, dims: Sequence[int], out: View) -> None:
        """Reduce ``a`` over the tuple ``dims`` into ``out``, whose size is 1 in those dims; ``op`` is one
        of ``REDUCE_OPS`` (``argmax``/``argmin``: exactly one dim, ``int64`` out)."""

    def where(self, cond: View, a: View, b: View, out: View) -> None:
        """``out = a`` where the bool view ``cond`` is true, else ``b`` (all of one shape)."""

    def matmul(self, a: View, b: View, out: View) -> None:
        """``out = a @ b`` for ``(..., n, k)`` and ``(..., k, m)`` views whose batch dimensions are
        already equal; ``out`` is ``(..., n, m)``."""

    def take(self, a: View, dim: int, index: View, out: View) -> None:
        """``out = a.index_select(dim, index)``: ``index`` is a 1-d ``int64`` view of valid positions."""

    def put_add(self, out: View, dim: int, index: View, src: View) -> None:
        """In place ``out.index_add_(dim, index, src)``: slice ``i`` of ``src`` is added to slice
        ``index[i]`` of ``out``; repeated indices add up."""

    def gather(self, a: View, dim: int, index: View, out: View) -> None:
        """``out = a.gather(dim, index)``: ``out[i][j] = a[i][index[i][j]]`` for ``dim=1``."""

    def scatter_add(self, out: View, dim: int, index: View, src: View) -> None:
        """In place ``out.scatter_add_(dim, index, src)``: ``out[index[i][j]][j] += src[i][j]`` for
        ``dim=0``; repeated indices add up."""


def host_memory(backend: Any) -> bool:
    """True when ``backend`` lists the :data:`HOST_MEMORY` capability: its storages are flat numpy
    arrays in host memory (a backend that does not say is treated as device memory).

    >>> from torchlight.tensor.backend.numpy import NumpyBackend
    >>> host_memory(NumpyBackend())
    True
    """
    return HOST_MEMORY in getattr(backend, "capabilities", ())


def sequence_slots(steps: int, reverse: bool) -> tuple:
    """The slot layout of ``cell_sequence``'s ``(T + 1, S, N, H)`` states, written once for the
    core and the backends: ``(order, read, write, init)`` — the steps in the order they run,
    the offsets of the slot step ``t`` reads (``t + read``) and writes (``t + write``), and the
    initial state's slot (the final state's is the other end). A backward runs ``order``
    reversed.

    >>> from torchlight.tensor.backend.protocol import sequence_slots
    >>> order, read, write, init = sequence_slots(3, reverse=True)
    >>> list(order), read, write, init
    ([2, 1, 0], 1, 0, 3)
    """
    if reverse:
        return range(steps - 1, -1, -1), 1, 0, steps
    return range(steps), 0, 1, 0


class BackendSpec:
    """What an entry point in group ``torchlight.backends`` names: cheap to import.

    ``is_available()`` never raises (it answers False with a reason in ``why_unavailable()``);
    ``load()`` does the heavy imports and returns the backend object.
    """

    def __init__(
        self,
        name: str,
        loader: Callable[[], Any],
        available: Callable[[], tuple[bool, str | None]] | None = None,
        api_version: int = API_VERSION,
    ) -> None:
        self.name = name
        self.api_version = api_version
        self._loader = loader
        self._available = available
        self._why: str | None = None

    def is_available(self) -> bool:
        """Whether the backend can be loaded here (its libraries and hardware are present); never
        raises."""
        if self._available is None:
            return True
        try:
            ok, self._why = self._available()
        except Exception as exc:  # is_available must never raise
            ok, self._why = False, f"{type(exc).__name__}: {exc}"
        return bool(ok)

    def why_unavailable(self) -> str | None:
        """Why :meth:`is_available` says no (a sentence for the user), or ``None`` when it is
        available."""
        return None if self.is_available() else self._why

    def load(self) -> Any:
        """Import the backend's heavy modules and return the backend object (called once, by
        :func:`torchlight.get_backend`)."""
        return self._loader()
