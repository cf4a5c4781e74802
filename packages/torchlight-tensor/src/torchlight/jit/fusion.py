"""Fusion: chains of elementwise ops on a tape run as one generated kernel.

Eager elementwise code such as ``0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x**3)))`` runs
nine separate ops, each reading and writing a full array. On the tape those ops form a connected
group whose intermediate results nobody else reads; fusion compiles the group into **one** loop
that reads each input once and writes only the values that leave the group.

Grouping (:func:`plan`): an elementwise node (``add sub mul div pow maximum minimum`` and the
named unary maps) joins the group of each elementwise node that produced one of its inputs. A
group is fused when it has at least two ops, all its ops have the same traced output shape and a
floating dtype, its outside inputs have that shape or a single element (scalar constants), and no
op outside the group needs one of its results before the group's last op. Everything else runs
op by op.

Compilers (:func:`get_compiler`):

* a backend that lists the ``"compile"`` capability provides ``compile_elementwise(chain)``: given
  an :class:`ElementwiseChain` it returns ``kernel(input_views, output_views)`` (``TensorData``
  views: inputs of the full shape or one element, outputs contiguous of the full shape);
* otherwise, on the numba backend (or anywhere the storage is host memory when asked with
  ``fuse="numba"``), :class:`NumbaCompiler` generates Python source for one
  ``@numba.njit`` kernel over flat contiguous arrays (``parallel=True`` for big arrays) and caches it per chain
  signature (:func:`numba_source` is reusable by backends);
* the numpy backend has no compiler: the tape replays op by op.

At replay time a fused group checks its actual inputs (contiguous, same shape or one element,
the traced dtype); when they do not qualify it simply runs its ops one by one, so fused and
unfused replays always agree.
"""

import importlib.util
import math

__all__ = [
    "ElementwiseChain",
    "FusedGroup",
    "plan",
    "get_compiler",
    "NumbaCompiler",
    "numba_source",
    "numba_available",
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
    "gelu": "(HALF * {0} * (ONE + math.erf({0} * SQRT1_2)))",
    "gelu_tanh": "(HALF * {0} * (ONE + _tanh(TANH_C * ({0} + GELU_K * {0} * {0} * {0}))))",
    "silu": "({0} / (ONE + math.exp(-{0})))",
    "softplus": "(math.log1p(math.exp(-abs({0}))) + _relu({0}))",
    "erf": "math.erf({0})",
}
_ZIP_CLASSES = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Pow": "pow",
    "Maximum": "maximum",
    "Minimum": "minimum",
}


def elementwise_op(node):
    """The backend op name of an elementwise node, or None when the node is not fusable."""
    name = node.fn.__name__
    if name in _ZIP_CLASSES and node.fn.__module__.endswith("pointwise"):
        return _ZIP_CLASSES[name]
    if name == "Unary" and node.args[1] in MAP_EXPR:
        return node.args[1]
    return None


class ElementwiseChain:
    """What a compiler sees: ``ops`` is a tuple of ``(op, operands)`` in execution order, each
    operand ``("in", k)`` (the k-th input) or ``("tmp", j)`` (the result of op j); ``scalar[k]``
    says input k has one element (broadcast); ``outputs`` are the op indices whose results are
    written out; ``dtype`` the common floating dtype. ``key`` identifies it for caching."""

    __slots__ = ("ops", "n_inputs", "scalar", "outputs", "dtype", "key")

    def __init__(self, ops, n_inputs, scalar, outputs, dtype):
        self.ops = tuple(ops)
        self.n_inputs = n_inputs
        self.scalar = tuple(scalar)
        self.outputs = tuple(outputs)
        self.dtype = dtype
        self.key = (self.ops, n_inputs, self.scalar, self.outputs, dtype.name)

    def __repr__(self):
        return f"ElementwiseChain({' -> '.join(op for op, _ in self.ops)}; {self.n_inputs} inputs)"


class _Single:
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def run(self, vals, sizes, compiler):
        from .replay import run_node

        run_node(self.node, vals, sizes)


class FusedGroup:
    """A group of elementwise nodes of a tape, run as one kernel when its inputs qualify."""

    def __init__(self, tape, members, ext_inputs, outputs, ops):
        self.tape = tape
        self.members = [tape.nodes[i] for i in members]
        self.nodes = list(members)
        self.ext_inputs = ext_inputs  # slots read from outside the group
        self.outputs = outputs  # (tmp index, slot) written out
        self.ops = ops
        self.dtype = self.members[0].dtype
        self._chains = {}

    def chain(self, scalar):
        """The :class:`ElementwiseChain` of this group's ops for inputs whose scalar pattern is
        ``scalar`` (which inputs are 0-d), built once and cached.
        """
        c = self._chains.get(scalar)
        if c is None:
            c = self._chains[scalar] = ElementwiseChain(
                self.ops, len(self.ext_inputs), scalar, [t for t, _ in self.outputs], self.dtype
            )
        return c

    def run(self, vals, sizes, compiler):
        """Run the group on the values in ``vals``: one compiled kernel when the inputs qualify (same
        shape and dtype, contiguous) and ``compiler`` offers one, otherwise op by op.
        """
        ins = [vals[s] for s in self.ext_inputs]
        shape, scalar = _qualify(ins, self.dtype)
        kernel = None
        if shape is not None:
            kernel = compiler.kernel(self.chain(scalar), ins)
        if kernel is None:  # inputs do not qualify (or the compiler declined): op by op
            from .replay import run_node

            for node in self.members:
                run_node(node, vals, sizes)
            return
        outs = kernel(ins, shape)
        for (_, slot), out in zip(self.outputs, outs):
            vals[slot] = out

    def __repr__(self):
        return f"FusedGroup(ops {self.nodes}: {' '.join(op for op, _ in self.ops)})"


def _qualify(ins, dtype):
    """(full shape, scalar flags) when every input is contiguous of one shape or has 1 element."""
    shape = None
    for t in ins:
        if t.dtype is not dtype:
            return None, None
        if t._td.size != 1:
            if shape is None:
                shape = t._td.shape
            elif t._td.shape != shape:
                return None, None
            if not t._td.is_contiguous():
                return None, None
    if shape is None:
        return None, None
    for t in ins:
        if t._td.size == 1 and len(t._td.shape) > len(shape):
            return None, None
    return shape, tuple(t._td.size == 1 and t._td.shape != shape for t in ins)


def plan(tape):
    """The replay steps of ``tape``: single nodes and :class:`FusedGroup` s (cached on the tape)."""
    cached = tape._plans.get("fusion")
    if cached is not None:
        return cached
    nodes = tape.nodes
    ops = [elementwise_op(n) for n in nodes]
    parent = list(range(len(nodes)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for n in nodes:
        if ops[n.index] is None:
            continue
        for s in n.inputs:
            p = tape.values[s].node
            if p is not None and ops[p] is not None:
                parent[find(n.index)] = find(p)
    groups = {}
    for n in nodes:
        if ops[n.index] is not None:
            groups.setdefault(find(n.index), []).append(n.index)
    users = tape.consumers()
    out_slots = set(tape.output_slots())
    fused_at = {}  # last member index -> FusedGroup
    in_group = set()
    for members in groups.values():
        g = _make_group(tape, sorted(members), ops, users, out_slots)
        if g is not None:
            fused_at[g.nodes[-1]] = g
            in_group.update(g.nodes)
    steps = []
    for n in nodes:
        if n.index in fused_at:
            steps.append(fused_at[n.index])
        elif n.index not in in_group:
            steps.append(_Single(n))
    tape._plans["fusion"] = steps
    return steps


def _make_group(tape, members, ops, users, out_slots):
    if len(members) < 2:
        return None
    nodes = [tape.nodes[i] for i in members]
    shape, dtype = nodes[0].shape, nodes[0].dtype
    if not dtype.is_floating_point:
        return None
    if any(n.shape != shape or n.dtype is not dtype for n in nodes):
        return None
    member_set = set(members)
    tmp_of = {}  # slot -> tmp index
    ext = []  # external input slots
    prog = []
    for j, n in enumerate(nodes):
        operands = []
        for s in n.inputs:
            if s in tmp_of:
                operands.append(("tmp", tmp_of[s]))
                continue
            v = tape.values[s]
            numel = 1
            for d in v.shape:
                numel *= d
            if v.dtype is not dtype or (
                v.shape != shape and (numel != 1 or len(v.shape) > len(shape))
            ):
                return None
            if s not in ext:
                ext.append(s)
            operands.append(("in", ext.index(s)))
        prog.append((ops[n.index], tuple(operands)))
        tmp_of[n.out] = j
    last = members[-1]
    outputs = []
    for j, n in enumerate(nodes):
        outside = [u for u in users.get(n.out, ()) if u not in member_set]
        if any(u < last for u in outside):
            return None  # someone outside needs this result before the group would run
        if outside or n.out in out_slots:
            outputs.append((j, n.out))
    if not outputs:
        return None
    return FusedGroup(tape, members, ext, outputs, prog)


# --- compilers ---------------------------------------------------------------------------------
def numba_available():
    """Whether numba can be imported here (what ``fuse="numba"`` needs)."""
    return importlib.util.find_spec("numba") is not None


def get_compiler(backend, fuse):
    """The compiler for ``backend`` under the replay's ``fuse`` option (None: op by op)."""
    if fuse is False or backend is None:
        return None
    if "compile" in getattr(backend, "capabilities", ()) and hasattr(
        backend, "compile_elementwise"
    ):
        return BackendCompiler(backend)
    if fuse == "numba" or getattr(backend, "name", None) == "numba":
        if numba_available():
            return _NUMBA
        if fuse == "numba":
            from .tape import TraceError

            raise TraceError("fuse='numba' needs numba installed (pip install numba)")
    return None


class BackendCompiler:
    """Uses the backend's own ``compile_elementwise(chain)`` (the ``"compile"`` capability)."""

    _cache = {}  # (id(backend), chain.key) -> the backend's kernel (None: declined)

    def __init__(self, backend):
        self.backend = backend

    def kernel(self, chain, ins):
        backend = self.backend
        key = (id(backend), chain.key)
        if key not in self._cache:
            self._cache[key] = backend.compile_elementwise(chain)
        fn = self._cache[key]
        if fn is None:
            return None

        def run(ins, shape):
            from torchlight.tensor.dispatch import alloc

            outs = [alloc(shape, chain.dtype, backend) for _ in chain.outputs]
            fn([t._td for t in ins], [o._td for o in outs])
            return outs

        return run


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
        f"    SQRT1_2 = T({1.0 / math.sqrt(2.0)!r})",
        f"    TANH_C = T({math.sqrt(2.0 / math.pi)!r})",
        "    GELU_K = T(0.044715)",
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
# is written out. Both variants are branch-free (a branch in the loop body stops vectorisation).
_TANH32 = """
# float32: the odd/even rational approximation Eigen uses for float32 tanh (max error ~3 ulp,
# saturating beyond |x| = 7.9); only multiply-adds and one divide, so the loop vectorises.
A1, A3, A5 = T(4.89352455891786e-03), T(6.37261928875436e-04), T(1.48572235717979e-05)
A7, A9 = T(5.12229709037114e-08), T(-8.60467152213735e-11)
A11, A13 = T(2.00018790482477e-13), T(-2.76076847742355e-16)
B0, B2 = T(4.89352518554385e-03), T(2.26843463243900e-03)
B4, B6 = T(1.18534705686654e-04), T(1.19825839466702e-06)
CLAMP = T(7.90531110763549805)


@numba.njit(inline="always", error_model="numpy")
def _tanh(a):
    x = min(max(a, -CLAMP), CLAMP)
    x2 = x * x
    p = ((((((x2 * A13 + A11) * x2 + A9) * x2 + A7) * x2 + A5) * x2 + A3) * x2 + A1) * x
    q = ((x2 * B6 + B4) * x2 + B2) * x2 + B0
    return p / q if a == a else a
"""

_TANH64 = """
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
            import numpy as np

            ns = {"numba": numba, "math": math, "T": np.dtype(dtype.np).type}
            tanh = _TANH32 if dtype.np.itemsize == 4 else _TANH64
            exec(compile(_HELPERS + tanh, "<torchlight.jit.fusion helpers>", "exec"), ns)
            self._helpers[dtype.name] = ns
        return ns

    def compile(self, chain, parallel=False):
        """The numba-compiled function of ``chain`` (``parallel=True``: a ``prange`` version), generated
        from :func:`numba_source` once per chain signature and cached.
        """
        fn = self._cache.get((chain.key, parallel))
        if fn is None:
            import numba

            ns = dict(self._namespace(chain.dtype))
            src = numba_source(chain)
            exec(compile(src, f"<torchlight.jit fused {chain!r}>", "exec"), ns)
            # error_model="numpy": x / 0 gives inf or nan like numpy instead of raising
            fn = numba.njit(parallel=parallel, cache=False, error_model="numpy")(ns["_fused"])
            fn.source = src
            self._cache[(chain.key, parallel)] = fn
        return fn

    def kernel(self, chain, ins):
        """A callable ``run(ins, shape) -> outputs`` that evaluates ``chain`` on the host arrays
        ``ins`` in one pass (the parallel kernel for large arrays), or ``None`` when the inputs live in
        device memory.
        """
        import numpy as np

        if not all(isinstance(t._td.storage, np.ndarray) for t in ins):
            return None  # device memory: not for a host kernel
        import numba

        threads = numba.config.NUMBA_NUM_THREADS

        def run(ins, shape):
            from torchlight.tensor.dispatch import alloc

            backend = ins[0].backend
            n = 1
            for s in shape:
                n *= s
            fn = self.compile(chain, parallel=n >= PARALLEL_MIN and threads >= PARALLEL_THREADS)
            outs = [alloc(shape, chain.dtype, backend) for _ in chain.outputs]
            args = []
            for t in ins:
                td = t._td
                args.append(td.storage[td.offset : td.offset + td.size])
            args += [o._td.storage[:n] for o in outs]
            fn(n, *args)
            return outs

        return run


_NUMBA = NumbaCompiler()
