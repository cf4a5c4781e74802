"""Fused elementwise kernels: the ``"compile"`` capability of the numba backend.

The core (``torchlight.jit.fusion``) groups a tape's elementwise ops into an
:class:`~torchlight.jit.ElementwiseChain` and hands it to ``NumbaBackend.compile_elementwise``;
this module generates Python source for **one** ``@numba.njit`` loop over flat contiguous arrays
that reads each input once and writes only the values that leave the chain
(:func:`numba_source` shows it), compiles it per chain signature and dtype, and returns the
kernel the contract asks for: ``kernel(input_views, output_views)``. A ``parallel=True`` variant
(``prange``) is compiled for big arrays. Any host-memory backend's tensors can use these kernels
(``tape.replay(x, fuse="numba")`` on the ``cpu`` backend): they only read flat numpy storage.
"""

import math

import numpy as np

from torchlight.tensor.formulas import GELU_TANH_C, GELU_TANH_K, SQRT1_2

__all__ = [
    "ZIP_EXPR",
    "MAP_EXPR",
    "numba_source",
    "NumbaCompiler",
    "COMPILER",
    "compile_elementwise",
]

ZIP_EXPR = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": "({0} / {1})",
    "pow": "_pow({0}, {1})",
    "maximum": "_max({0}, {1})",
    "minimum": "_min({0}, {1})",
}
MAP_EXPR = {
    "copy": "{0}",
    "neg": "(-{0})",
    "abs": "abs({0})",
    "exp": "math.exp({0})",
    "log": "math.log({0})",
    "sqrt": "math.sqrt({0})",
    "rsqrt": "(ONE / math.sqrt({0}))",
    "reciprocal": "(ONE / {0})",
    "square": "({0} * {0})",
    "sin": "math.sin({0})",
    "cos": "math.cos({0})",
    "tanh": "_tanh({0})",
    "sigmoid": "(ONE / (ONE + math.exp(-{0})))",
    "relu": "_relu({0})",
    "gelu": "_gelu({0})",
    "gelu_tanh": "(HALF * {0} * (ONE + _tanh(TANH_C * ({0} + GELU_K * {0} * {0} * {0}))))",
    "silu": "({0} / (ONE + math.exp(-{0})))",
    "softplus": "(math.log1p(math.exp(-abs({0}))) + _relu({0}))",
    "erf": "_erf({0})",
}


def numba_source(chain, name="_fused"):
    """Python source of one ``@njit(parallel=True)`` kernel ``name(n, in0.., out0..)`` for ``chain``.

    Inputs are flat contiguous arrays (one element for scalar inputs, read once before the loop),
    outputs flat contiguous arrays of ``n`` elements.
    """
    ins = [f"i{k}" for k in range(chain.n_inputs)]
    outs = [f"o{j}" for j in range(len(chain.outputs))]
    lines = [
        f"def {name}(n, {', '.join(ins + outs)}):",
        "    ONE = T(1.0)",
        "    HALF = T(0.5)",
        "    ZERO = T(0.0)",
        f"    SQRT1_2 = T({SQRT1_2!r})",
        f"    TANH_C = T({GELU_TANH_C!r})",
        f"    GELU_K = T({GELU_TANH_K!r})",
    ]
    for k, is_scalar in enumerate(chain.scalar):
        if is_scalar:
            lines.append(f"    s{k} = i{k}[0]")
    lines.append("    for j in numba.prange(n):")
    for k, is_scalar in enumerate(chain.scalar):
        if not is_scalar:
            lines.append(f"        a{k} = i{k}[j]")

    def ref(r):
        kind, k = r
        if kind == "tmp":
            return f"t{k}"
        return f"s{k}" if chain.scalar[k] else f"a{k}"

    for j, (op, operands) in enumerate(chain.ops):
        table = ZIP_EXPR if len(operands) == 2 else MAP_EXPR
        lines.append(f"        t{j} = {table[op].format(*(ref(r) for r in operands))}")
    for k, j in enumerate(chain.outputs):
        lines.append(f"        o{k}[j] = t{j}")
    return "\n".join(lines) + "\n"


# Helpers are compiled per dtype (T is numpy's float32 or float64 type): every constant is a T, so
# float32 kernels stay in float32 (numba promotes float32 op Python-float to float64).
_HELPERS = """
@numba.njit(inline="always", error_model="numpy")
def _pow(a, b):
    if b == 2.0:
        return a * a
    if b == 3.0:
        return a * a * a
    if b == 0.5:
        return T(math.sqrt(a))
    if b == 1.0:
        return a
    return T(a ** b)


@numba.njit(inline="always", error_model="numpy")
def _max(a, b):
    return a if (a > b or a != a) else b


@numba.njit(inline="always", error_model="numpy")
def _min(a, b):
    return a if (a < b or a != a) else b


@numba.njit(inline="always", error_model="numpy")
def _relu(a):
    return a if not (a <= 0) else T(0.0)
"""

# libm's tanh is ~15x slower than numpy's SIMD tanh here and LLVM does not vectorise it, so tanh
# is written out, branch-free (a branch in the loop body stops vectorisation). float32 uses the
# rational approximation of ``_flat32.tanh32`` (one definition for every float32 loop), inlined;
# erf and GELU likewise ``_flat32.erf32`` / ``gelu32``, float64 libm's erf (1e-12 is asked there).
_HELPERS64 = """
@numba.njit(inline="always", error_model="numpy")
def _erf(a):
    return T(math.erf(a))


@numba.njit(inline="always", error_model="numpy")
def _gelu(a):
    return T(0.5) * a * (T(1.0) + T(math.erf(a * T(SQRT1_2))))


# float64: through exp. Near 0, where 1 - exp(-2|a|) cancels, the odd Taylor series to a^11 is
# exact to float64 rounding for |a| < 1/16; both are computed and one is selected.
C3, C5, C7 = T(-1 / 3), T(2 / 15), T(-17 / 315)
C9, C11 = T(62 / 2835), T(-1382 / 155925)
ONE_, TWO_, SMALL_ = T(1.0), T(-2.0), T(0.0625)


@numba.njit(inline="always", error_model="numpy")
def _tanh(a):
    x = abs(a)
    x2 = a * a
    p = a * (ONE_ + x2 * (C3 + x2 * (C5 + x2 * (C7 + x2 * (C9 + x2 * C11)))))
    e = math.exp(TWO_ * x)
    t = (ONE_ - e) / (ONE_ + e)
    t = t if a >= 0 else -t
    return p if x < SMALL_ else t
"""


PARALLEL_MIN = 1 << 22
PARALLEL_THREADS = 4
"""The ``parallel=True`` variant of a kernel is used from ``PARALLEL_MIN`` elements when numba has
at least ``PARALLEL_THREADS`` threads. Otherwise the serial, vectorised loop wins: these kernels
are memory-bound (a 1M-element GELU runs in ~0.3 ms on one core), and with few cores a parallel
region waits for every thread to be scheduled (measured: 20-30 ms per call with 2 threads on a
busy 2-core machine, against 0.3 ms serial)."""


class NumbaCompiler:
    """Generates and caches numba kernels per chain signature: a serial ``njit`` one and, for
    arrays of at least :data:`PARALLEL_MIN` elements, a ``parallel=True`` one (``prange``)."""

    def __init__(self):
        self._cache = {}
        self._helpers = {}

    def _namespace(self, dtype):
        ns = self._helpers.get(dtype.name)
        if ns is None:
            import numba

            ns = {"numba": numba, "math": math, "T": np.dtype(dtype.np).type, "SQRT1_2": SQRT1_2}
            if dtype.np.itemsize == 4:
                from ._flat32 import erf32, gelu32, tanh32

                exec(compile(_HELPERS, "<torchlight fused-kernel helpers>", "exec"), ns)
                inline = numba.njit(inline="always", error_model="numpy")
                ns["_tanh"], ns["_erf"], ns["_gelu"] = inline(tanh32), inline(erf32), inline(gelu32)
            else:
                exec(
                    compile(_HELPERS + _HELPERS64, "<torchlight fused-kernel helpers>", "exec"), ns
                )
            self._helpers[dtype.name] = ns
        return ns

    def compile(self, chain, parallel=False):
        fn = self._cache.get((chain.key, parallel))
        if fn is None:
            import numba

            ns = dict(self._namespace(chain.dtype))
            src = numba_source(chain)
            exec(compile(src, f"<torchlight fused {chain!r}>", "exec"), ns)
            # error_model="numpy": x / 0 gives inf or nan like numpy instead of raising
            fn = numba.njit(parallel=parallel, cache=False, error_model="numpy")(ns["_fused"])
            fn.source = src
            self._cache[(chain.key, parallel)] = fn
        return fn

    def kernel(self, chain):
        """``kernel(input_views, output_views)`` for ``chain`` (None when an op is not known)."""
        if chain.dtype.np.kind != "f" or any(
            op not in ZIP_EXPR and op not in MAP_EXPR for op, _ in chain.ops
        ):
            return None
        import numba

        threads = numba.config.NUMBA_NUM_THREADS

        def run(ins, outs):
            n = outs[0].size
            fn = self.compile(chain, parallel=n >= PARALLEL_MIN and threads >= PARALLEL_THREADS)
            args = [v.storage[v.offset : v.offset + v.size] for v in ins]
            args += [o.storage[o.offset : o.offset + n] for o in outs]
            fn(n, *args)

        return run


COMPILER = NumbaCompiler()
"""The process-wide compiler: kernels are cached per chain signature for every backend's tapes."""


def compile_elementwise(chain):
    """The ``"compile"`` capability: a kernel for ``chain`` over flat host-memory views, or None."""
    return COMPILER.kernel(chain)
