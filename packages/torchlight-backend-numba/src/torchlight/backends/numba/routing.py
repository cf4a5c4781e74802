"""Which kernel runs an elementwise op or a reduction on the numba backend: the routing table.

Every routing decision of ``NumbaBackend.map``/``zip``/``where``/``reduce`` is a row of
``TABLE``: an op family, the ops, dtypes, layout and size it applies to, the kernel that then
runs and why. ``route`` walks a family's rows in order and returns the first that applies; the
backend only launches what it names. Every size threshold is defined here, with the measurement
behind it (medians on one core; the numba package README, "elementwise routing", has the numbers).

Print the table with ``python -m torchlight.backends.numba.routing``; ask which kernel one call
would run with ``explain``:

>>> import torchlight as tl
>>> from torchlight.backends.numba.routing import explain
>>> a, b = tl.ones(3, 4, device="numba"), tl.ones(4, device="numba")
>>> explain("add", a, b)
'numpy'
>>> explain("silu", a)
'_packed.map'
>>> explain("silu", tl.ones(64, 64, device="numba"))
'numpy'
>>> explain("gelu", a)
'_flat32.map32'
"""

import os
from typing import NamedTuple

import numpy as np

from torchlight.tensor.errors import BackendError
from torchlight.tensor.indexing import _CONTIGUOUS, coalesce, contiguous_strides
from torchlight.tensor.storage import TensorData

from . import _flat32 as L
from . import _packed as P
from . import _tiled as T
from ._scalar import CMP_CODES, MAP_CODES, ZIP_CODES

__all__ = [
    "FLAT_MIN",
    "FLAT_ZIP_MIN",
    "TILE_MIN",
    "TILE_ZIP_MIN",
    "SPLIT_MIN",
    "SPLIT_MAX_OUT",
    "SPLIT_CHUNK",
    "COLS_MIN",
    "COLS_NUMBA_MIN",
    "PACKED_MAX",
    "PACKED_SUM_MIN",
    "NUMPY_SMALL",
    "PACKED_SMALL",
    "packed_range",
    "all_packed",
    "rows",
    "clear_routes",
    "Rule",
    "TABLE",
    "route",
    "explain",
    "format_table",
]

# --- thresholds (elements), each measured on one core -------------------------------------------
#: contiguous float32 maps (exp, tanh, relu, sigmoid, neg, gelu_tanh) and gelu_tanh_back run
#: _flat32's SIMD loops from here on: faster than numpy's ufuncs from 64k values on
FLAT_MIN = int(os.environ.get("TORCHLIGHT_NUMBA_FLAT_MIN", str(1 << 16)))
#: an arithmetic zip is memory-bound and costs ~3 us more per call than the ufunc: parity at ~512k
FLAT_ZIP_MIN = max(FLAT_MIN, 1 << 19)
#: where over tiles (_tiled): below, the strided where costs about what setting up tiles does
TILE_MIN = 1 << 12
#: float32 arithmetic zips over tiles: below, numpy's broadcasting loops are as fast
TILE_ZIP_MIN = 1 << 16
#: reduce_split: a 1-D reduction of at least this many values with fewer than SPLIT_MAX_OUT
#: outputs is cut into SPLIT_CHUNK-value chunks reduced in parallel (fewer outputs than threads)
SPLIT_MIN, SPLIT_MAX_OUT, SPLIT_CHUNK = 1 << 16, 8, 1 << 14
#: reduce_cols: a reduction over the rows of a matrix with contiguous rows of at least this many
#: columns (a bias gradient); narrower, the per-output kernel is as fast
COLS_MIN = 64
#: below this many values numpy's reduce wins, over any dims: over the rows 64x784 4.9 against
#: 10.2 us, 512x512 23 against 44 us on one thread, 26 against 31 us on two (1024x512 is 41 against
#: 76 on two); over the last dim 8x8 1.3 against 3.6 us, 64x64 2.9 against 6.2, 256x256 15 against
#: 19 on one thread, where the kernel's fixed cost (~2.5 us a call) dominates small tensors
COLS_NUMBA_MIN = 1 << 19
#: max and min go to numpy's reduce at every size: its SIMD loops measured 5-10x faster than the
#: numba kernel, which checks every value for NaN (512x512 over dim 1: 53 against 299 us on one
#: thread; 1024x512: 105 against 603)
_NUMPY_EXTREMA = {"max", "min"}
#: ops whose numpy form is several passes run as one call of a ``_packed`` kernel when every
#: operand is packed (C-contiguous, none broadcast): the arithmetic gradients at every size (their
#: loop vectorises: the tanh_back kernel 0.4-0.8 us against numpy's 2.4-4.0 at 128 values, 17-20
#: against 31-40 at 64k), the ops around exp or erf below PACKED_MAX values, from where libm's
#: scalar exp per value loses to numpy's SIMD passes (the silu kernel at 512 values 2.5-5.1
#: against 4.9-10.3 us; at 1024 softplus and gelu_tanh lose); a float sum over the last dims
#: from PACKED_SUM_MIN values wherever numpy's reduce would run (256x256 over the last dim 7.6
#: against 19 us). Three runs of ``tests-integration/benchmarks/bench_packed.py``, one thread.
PACKED_MAX = 1 << 10
#: packed sums are of rows (the last dims) of at least this many values: at 4x64 the kernel
#: lost to numpy's reduce (1.9 against 1.7 us), at 16x27 it tied, at 256x256 it won (7.6
#: against 19); sums over leading dims (columns) lost at 16x128 and 64x784 and stay numpy's
PACKED_SUM_MIN = 1 << 12
_PACKED_ZIP_ANY = {"relu_back", "sigmoid_back", "tanh_back"}
# (sigmoid and softplus_back are numpy's too: at 256 values one compiled call counted more
# instructions than numpy's passes, 22.6k against 21.5k and 33.4k against 26.7k a backend call)
_PACKED_ZIP_SMALL = {"silu_back", "gelu_back", "gelu_tanh_back"}
_PACKED_MAP_SMALL = {"silu", "softplus", "gelu_tanh", "gelu", "erf"}

# --- op sets ---------------------------------------------------------------------------------------
_F32 = np.dtype(np.float32)
_INT_MAP = {"copy", "neg", "abs", "sign", "square", "relu"}
_BOOL_MAP = {"copy", "logical_not"}
_INT_ZIP = {"add", "sub", "mul", "pow", "maximum", "minimum"}
_BOOL_AS_CMP = {
    "add": "logical_or",
    "mul": "logical_and",
    "maximum": "logical_or",
    "minimum": "logical_and",
}
# numpy's ufunc loops are SIMD (exp, tanh and log included) and a scalar JIT loop cannot vectorise
# transcendental calls without Intel's SVML, so ops that are one or two ufuncs stay with numpy;
# these, whose numpy form is several passes with temporaries around libm's erf, run fused in
# numba (silu and silu_back, around exp, went back to numpy above PACKED_MAX: the fused loop,
# one exp per value, measured 3-4x slower than numpy's SIMD passes from 8k values, bench_packed.py)
_NUMBA_MAP = {"gelu", "erf"}
_NUMBA_ZIP = {"gelu_back"}
_FLAT_FUSED = {"gelu_tanh_back", "gelu_back"}  # compute-bound: both operands arrays
#: every other form of these calls libm's erf per value (~6 ns; scipy's, numba's ``math.erf``):
#: the flat32 loops run them at every size, not only from FLAT_MIN
_FLAT_ANY_SIZE = {"gelu", "gelu_back", "erf"}


def _kind(dtype):
    k = dtype.kind
    return "b" if k == "b" else ("f" if k == "f" else "i")


def _scalar(v):
    """True when every element of the view is the one at its offset (a broadcast scalar)."""
    return all(st == 0 or sz == 1 for sz, st in zip(v.shape, v.strides))


def _f32(views, out):
    return out.storage.dtype == _F32 and all(v.storage.dtype == _F32 for v in views)


_FLAT_OR_STRIDED = {
    f: (f"_elementwise.{f}_flat", f"_elementwise.{f}_strided") for f in ("map", "zip", "cmp")
}


_NO_PACKED = (0, 0)


def packed_range(family, op, dtype, out_dtype):
    """``(lo, hi)``: ``op`` of ``family`` on ``dtype`` runs on a ``_packed`` kernel when its
    operands are packed and their values (a reduction's input's) number ``lo <= n < hi``;
    ``(0, 0)`` when no packed row takes it. Where ``hi`` is not 0 the route depends on the
    layout, so ``route`` never answers such a call by op and dtype alone."""
    if dtype.kind != "f" or out_dtype != dtype:
        return _NO_PACKED
    if family == "zip":
        if op in _PACKED_ZIP_ANY:
            return 0, 1 << 62
        return (0, PACKED_MAX) if op in _PACKED_ZIP_SMALL else _NO_PACKED
    if family == "map":
        return (0, PACKED_MAX) if op in _PACKED_MAP_SMALL else _NO_PACKED
    if family == "reduce" and op == "sum":
        return PACKED_SUM_MIN, COLS_NUMBA_MIN
    return _NO_PACKED


def rows(dims, ndim):
    """Whether the sorted ``dims`` are the last dims of ``ndim`` (a sum over rows). The short key
    holds ``dims`` but not ``ndim``: over dim 0 a 1-D input is one row, a 2-D one columns."""
    return bool(dims) and dims[-1] == ndim - 1 and dims[-1] - dims[0] == len(dims) - 1


def all_packed(views, out, n):
    """Every operand C-contiguous with C-order strides and ``n`` values (none broadcast), as
    ``_packed`` takes them. (Stricter than ``is_contiguous``, which also takes any stride on a
    size-1 dim, and a third of its cost: the backend asks this before every packed launch.)"""
    if out.strides != (_CONTIGUOUS.get(out.shape) or contiguous_strides(out.shape)):
        return False
    for v in views:
        if v.size != n or v.strides != (_CONTIGUOUS.get(v.shape) or contiguous_strides(v.shape)):
            return False
    return True


def _coalesced(shape, strides, code, name):
    """``(kernel, (code, shape, strides))`` for the operands' ``strides`` (out's last): the flat
    kernel when every operand is one unit-stride run after coalescing, else the strided one."""
    cshape, cstrides = coalesce(shape, strides)
    flat = len(cshape) == 1 and max(cstrides)[0] == 1 == min(cstrides)[0]
    return _FLAT_OR_STRIDED[name][0 if flat else 1], (code, cshape, cstrides)


# --- map -------------------------------------------------------------------------------------------
def _map_cast(op, views, out, n, ufuncs):
    return (
        ("np.copyto", None)
        if op == "copy" and views[0].storage.dtype != out.storage.dtype
        else None
    )


def _map_flat32(op, views, out, n, ufuncs):
    ok = (
        (n >= FLAT_MIN or op in _FLAT_ANY_SIZE)
        and op in L.FLAT_MAP
        and _f32(views, out)
        and views[0].is_contiguous()
        and out.is_contiguous()
    )
    return ("_flat32.map32", L.FLAT_MAP[op]) if ok else None


def _map_packed(op, views, out, n, ufuncs):
    lo, hi = packed_range("map", op, views[0].storage.dtype, out.storage.dtype)
    ok = ufuncs and lo <= n < hi and all_packed(views, out, n)
    return ("_packed.map", MAP_CODES[op]) if ok else None


def _map_numpy(op, views, out, n, ufuncs):
    if ufuncs and not (views[0].storage.dtype.kind == "f" and op in _NUMBA_MAP):
        return "numpy", None
    return None


def _map_numba(op, views, out, n, ufuncs):
    kind = _kind(views[0].storage.dtype)
    if (
        (kind == "i" and op not in _INT_MAP)
        or (kind == "b" and op not in _BOOL_MAP)
        or (kind == "f" and op == "logical_not")
        or op not in MAP_CODES
    ):
        return None
    return _coalesced(views[0].shape, (views[0].strides, out.strides), MAP_CODES[op], "map")


# --- zip -------------------------------------------------------------------------------------------
def _zip_mode(op, a, b, out):
    """zip32's operand mode: 0 both arrays, 1 b a scalar, 2 a a scalar, 3 in place; None: none."""
    fa, fb = a.is_contiguous(), b.is_contiguous()
    if fa and fb:
        inplace = a.storage is out.storage and a.offset == out.offset and op not in _FLAT_FUSED
        return 3 if inplace else 0
    if op in _FLAT_FUSED:
        return None
    return 1 if fa and _scalar(b) else (2 if fb and _scalar(a) else None)


def _zip_flat32(op, views, out, n, ufuncs):
    if (
        op not in L.FLAT_ZIP
        or n < (0 if op in _FLAT_ANY_SIZE else FLAT_MIN if op in _FLAT_FUSED else FLAT_ZIP_MIN)
        or not (_f32(views[:1], out) and out.is_contiguous())
    ):
        return None
    mode = _zip_mode(op, *views, out)
    return None if mode is None else ("_flat32.zip32", (L.FLAT_ZIP[op], mode))


def _zip_tiles(op, views, out, n, ufuncs):
    if (
        n < TILE_ZIP_MIN
        or op not in T.TILE_ZIP
        or not (_f32(views[:1], out) and out.is_contiguous())
    ):
        return None
    tiles = T.plan(views, n, need_repeat=True)  # a bias row added to every row, say
    return None if tiles is None else ("_tiled.zip_tiles", (T.TILE_ZIP[op], tiles))


def _zip_packed(op, views, out, n, ufuncs):
    lo, hi = packed_range("zip", op, views[0].storage.dtype, out.storage.dtype)
    ok = ufuncs and lo <= n < hi and all_packed(views, out, n)
    return ("_packed.zip", ZIP_CODES[op]) if ok else None


def _zip_numpy(op, views, out, n, ufuncs):
    kind = _kind(views[0].storage.dtype)
    if ufuncs and not (kind == "f" and op in _NUMBA_ZIP) and not (kind == "i" and op == "pow"):
        return "numpy", None
    return None


def _zip_numba(op, views, out, n, ufuncs):
    kind = _kind(views[0].storage.dtype)
    if kind == "b":
        op = _BOOL_AS_CMP.get(op, op)
    strides = (views[0].strides, views[1].strides, out.strides)
    if op in CMP_CODES:
        return _coalesced(out.shape, strides, CMP_CODES[op], "cmp")
    if op in ZIP_CODES and (kind == "f" or (kind == "i" and op in _INT_ZIP)):
        return _coalesced(out.shape, strides, ZIP_CODES[op], "zip")
    return None


# --- where -----------------------------------------------------------------------------------------
def _where_tiles(op, views, out, n, ufuncs):
    if n < TILE_MIN or not out.is_contiguous():
        return None
    tiles = T.plan(views, n, need_repeat=False)  # masked_fill's broadcast mask, say
    return None if tiles is None else ("_tiled.where_tiles", tiles)


def _where_strided(op, views, out, n, ufuncs):
    return "_elementwise.where_strided", (
        0,
        *coalesce(out.shape, tuple(v.strides for v in views) + (out.strides,)),
    )


# --- reduce ----------------------------------------------------------------------------------------
class Reduction(NamedTuple):
    """A reduction's geometry: kept dims (shape, input strides, output strides) and reduced dims
    (shape, input strides), each group coalesced, and the number of values per output."""

    oshape: tuple
    oxs: tuple
    oos: tuple
    rshape: tuple
    rxs: tuple
    nred: int
    dims: tuple


def reduction(a, dims, out):
    """The ``Reduction`` of reducing view ``a`` over ``dims`` into ``out``."""
    keep = [d for d in range(len(a.shape)) if d not in dims]
    oshape, (oxs, oos) = coalesce(
        [a.shape[d] for d in keep], ([a.strides[d] for d in keep], [out.strides[d] for d in keep])
    )
    rshape, (rxs,) = coalesce([a.shape[d] for d in dims], ([a.strides[d] for d in dims],))
    nred = 1
    for d in dims:
        nred *= a.shape[d]
    return Reduction(oshape, oxs, oos, rshape, rxs, nred, dims)


def _red_arg(op, views, out, n, geo):
    return ("_reduce.arg_kernel", geo) if op in ("argmax", "argmin") else None


def _red_split(op, views, out, n, geo):
    ok = geo.nred >= SPLIT_MIN and n < SPLIT_MAX_OUT and len(geo.rshape) == 1
    return ("_reduce.reduce_split", geo) if ok else None


def _over_rows(geo):
    """A reduction over the rows of a matrix with contiguous rows of at least COLS_MIN columns."""
    return (
        len(geo.rshape) == 1
        and len(geo.oshape) == 1
        and geo.oxs[0] == 1
        and geo.nred > 1
        and geo.oshape[0] >= COLS_MIN
    )


def _red_packed(op, views, out, n, geo):
    a, dims = views[0], geo.dims
    lo, hi = packed_range("reduce", op, a.storage.dtype, out.storage.dtype)
    if (
        lo <= a.size < hi
        and rows(dims, len(a.shape))  # (a 0-d input reduces over none: not rows)
        and all_packed((a,), out, a.size)
    ):
        return "_packed.sum", dims[0]  # rows from this dim on
    return None


def _red_numpy(op, views, out, n, geo):
    small = views[0].size < COLS_NUMBA_MIN
    # the plan is the dims alone: numpy needs nothing else, and the short key can hold it
    return ("numpy.reduce", geo.dims) if small or op in _NUMPY_EXTREMA else None


def _red_cols(op, views, out, n, geo):
    return ("_reduce.reduce_cols", geo) if _over_rows(geo) else None


def _red_any(op, views, out, n, geo):
    return "_reduce.reduce_kernel", geo


class Rule(NamedTuple):
    """One row of the routing table: the first row of a family whose ``match`` returns
    ``(kernel, plan)`` decides (``kernel`` one of ``kernels``); the other fields describe it
    for people."""

    family: str
    kernels: tuple
    ops: str
    dtypes: str
    layout: str
    size: str
    why: str
    match: object


TABLE = (
    Rule(
        "map",
        ("np.copyto",),
        "copy",
        "cast",
        "any",
        "any",
        "memory-bound; no kernel per dtype pair",
        _map_cast,
    ),
    Rule(
        "map",
        ("_flat32.map32",),
        "neg relu exp sigmoid gelu_tanh tanh gelu erf",
        "float32",
        "contiguous",
        ">= FLAT_MIN (gelu erf: any)",
        "SIMD loops, threads: faster than the ufunc from 64k values; erf without libm",
        _map_flat32,
    ),
    Rule(
        "map",
        ("_packed.map",),
        "silu softplus gelu_tanh gelu erf",
        "float",
        "packed (contiguous, none broadcast)",
        "< PACKED_MAX",
        "one call, storages and offsets only, against numpy's 2-5 passes",
        _map_packed,
    ),
    Rule(
        "map",
        ("numpy",),
        "all but gelu erf on floats",
        "any",
        "any",
        "any",
        "SIMD ufuncs; a JIT loop cannot vectorise libm calls",
        _map_numpy,
    ),
    Rule(
        "map",
        ("_elementwise.map_flat", "_elementwise.map_strided"),
        "defined for the dtype",
        "any",
        "flat after coalescing / any",
        "any",
        "one fused pass; numpy_ufuncs=False: every op",
        _map_numba,
    ),
    Rule(
        "zip",
        ("_flat32.zip32",),
        "add sub mul div gelu_tanh_back gelu_back",
        "float32",
        "contiguous out; arrays, scalar, in place",
        ">= FLAT_ZIP_MIN (FLAT_MIN gelu_tanh_back, any gelu_back)",
        "SIMD loops, threads: parity with the ufunc at 512k; erf without libm",
        _zip_flat32,
    ),
    Rule(
        "zip",
        ("_tiled.zip_tiles",),
        "add sub mul div",
        "float32",
        "contiguous out; full, tile, scalar",
        ">= TILE_ZIP_MIN",
        "unit-stride rows instead of numpy's broadcast loop",
        _zip_tiles,
    ),
    Rule(
        "zip",
        ("_packed.zip",),
        "relu_back sigmoid_back tanh_back; silu_back gelu_back gelu_tanh_back",
        "float",
        "packed (contiguous, none broadcast)",
        "any; the last three < PACKED_MAX",
        "one vectorised call against numpy's 2-5 passes",
        _zip_packed,
    ),
    Rule(
        "zip",
        ("numpy",),
        "all but gelu_back on floats, pow on ints",
        "any",
        "any (broadcast too)",
        "any",
        "(3,4)+(4,) float: ufunc 1.2 us, strided kernel 5.0 us (4x slower)",
        _zip_numpy,
    ),
    Rule(
        "zip",
        (
            "_elementwise.zip_flat",
            "_elementwise.zip_strided",
            "_elementwise.cmp_flat",
            "_elementwise.cmp_strided",
        ),
        "defined for the dtype",
        "any",
        "flat after coalescing / any",
        "any",
        "one fused pass; numpy_ufuncs=False: every op",
        _zip_numba,
    ),
    Rule(
        "where",
        ("_tiled.where_tiles",),
        "where",
        "any",
        "contiguous out; full, tile, scalar",
        ">= TILE_MIN",
        "SIMD select over unit-stride rows",
        _where_tiles,
    ),
    Rule(
        "where",
        ("_elementwise.where_strided",),
        "where",
        "any",
        "any",
        "any",
        "the general case",
        _where_strided,
    ),
    Rule(
        "reduce",
        ("_reduce.arg_kernel",),
        "argmax argmin",
        "any",
        "one dim",
        "any",
        "the only arg kernel",
        _red_arg,
    ),
    Rule(
        "reduce",
        ("_packed.sum",),
        "sum",
        "float",
        "packed, over the last dims (rows)",
        ">= PACKED_SUM_MIN, < COLS_NUMBA_MIN values",
        "one call, storages and offsets only: 2.5x numpy's reduce on 256x256 rows",
        _red_packed,
    ),
    Rule(
        "reduce",
        ("numpy.reduce",),
        "sum prod max min",
        "any",
        "any",
        "< COLS_NUMBA_MIN values; max min at any size",
        "numpy's SIMD reduce: a call costs ~1.3 us against the kernel's ~3.6; max/min 5x faster",
        _red_numpy,
    ),
    Rule(
        "reduce",
        ("_reduce.reduce_split",),
        "sum prod max min",
        "any",
        "one reduced run",
        ">= SPLIT_MIN values, < SPLIT_MAX_OUT outputs",
        "fewer outputs than threads: split the values",
        _red_split,
    ),
    Rule(
        "reduce",
        ("_reduce.reduce_cols",),
        "sum prod max min",
        "any",
        "over rows, contiguous rows",
        ">= COLS_MIN columns",
        "SIMD over columns, threads over row chunks (bias gradients)",
        _red_cols,
    ),
    Rule(
        "reduce",
        ("_reduce.reduce_kernel",),
        "sum prod max min",
        "any",
        "any",
        "any",
        "threads over outputs, a strided walk per output",
        _red_any,
    ),
)
_MATCH = {
    f: tuple(r.match for r in TABLE if r.family == f) for f in ("map", "zip", "where", "reduce")
}
# numpy_ufuncs=False runs every op on the general numba kernels (their own tests): the rows that
# hand a reduction to numpy or to _packed are skipped (the map and zip rows ask the flag themselves)
_MATCH_KERNELS = dict(
    _MATCH,
    reduce=tuple(
        r.match
        for r in TABLE
        if r.family == "reduce" and not {"numpy.reduce", "_packed.sum"} & set(r.kernels)
    ),
)


#: how many distinct calls ``route`` remembers (more are routed afresh each time)
ROUTE_CACHE_SIZE = 4096
_ROUTES: dict = {}
#: (family, op, input dtype, output dtype[, dims]) -> a hit that hands the op to numpy
_SMALL_ROUTES: dict = {}
_SMALL_FAMILIES = ("map", "zip")  # below their size thresholds, no map/zip row asks the size
#: the short keys of ``_SMALL_ROUTES`` whose kernel is numpy's own map, zip or reduce, each with
#: the size below which it holds (outputs of a map or zip, inputs of a reduction): the backend
#: hands such a call straight to its numpy backend without calling ``route`` (~0.5 us a small op)
NUMPY_SMALL: dict = {}
_NUMPY_KERNELS = ("numpy", "numpy.reduce")
#: the short keys of the ops with a packed row, each ``(lo, hi, plan, kernel, numpy_below)``,
#: ``[lo, hi)`` the packed row's sizes below the small-size bound. Once ``route`` has sent a
#: packed call of the key to ``_packed`` (``kernel``: the compiled one; a map's or zip's serial
#: compilation, launched below PARALLEL_MIN), the backend launches such calls without asking;
#: once it has sent a call of the key to numpy (``numpy_below``: the small-size bound), the
#: backend hands every call below it that the packed row does not take to numpy: below every
#: size threshold only the packed row comes before numpy's for these ops. Until then ``kernel``
#: is None and ``numpy_below`` 0.
PACKED_SMALL: dict = {}
_PACKED_KERNELS = ("_packed.map", "_packed.zip", "_packed.sum")


def clear_routes() -> None:
    """Forget every remembered routing decision (after changing a threshold: the decisions were
    taken under the old one)."""
    _ROUTES.clear()
    _SMALL_ROUTES.clear()
    NUMPY_SMALL.clear()
    PACKED_SMALL.clear()


# kernels whose plans hold the operands' memory (``_tiled.plan`` slices the storages): routed
# afresh on every call, never remembered
_PLANS_HOLD_DATA = ("_tiled.",)


def _remember_packed(family, op, skey, hit, lo, hi, bound):
    """Record in ``PACKED_SMALL`` what a small call of an op with a packed row was routed to."""
    old = PACKED_SMALL.get(skey, (lo, min(hi, bound), None, None, 0))
    if hit[0] in _PACKED_KERNELS:
        if family == "reduce":
            made = P.sum_packed
        else:
            made = (P.map_kernel if family == "map" else P.zip_kernel)(op, hit[1]).ser
        PACKED_SMALL[skey] = old[:2] + (hit[1], made, old[4])
    elif hit[0] in _NUMPY_KERNELS:
        PACKED_SMALL[skey] = old[:4] + (bound,)
        if lo:  # below the packed row's sizes every layout goes to numpy: the plain short key
            NUMPY_SMALL[skey] = lo


def route(family, op, views, out, numpy_ufuncs=True, dims=()):
    """``(kernel, plan)`` for ``family`` ("map", "zip", "where" or "reduce" over ``dims``) of
    ``op`` on the ``views`` (TensorData) into ``out``: the first row of ``TABLE`` that applies.
    ``plan`` is what the kernel's launcher needs (op code, coalesced shape, tiles, a
    ``Reduction``). Raises ``BackendError`` when no row applies (the op is not defined for the
    dtype) or a zip mixes dtypes."""
    if family == "zip" and views[0].storage.dtype != views[1].storage.dtype:
        raise BackendError(
            f"numba backend: zip {op!r} got mixed dtypes {views[0].storage.dtype} "
            f"and {views[1].storage.dtype}"
        )
    # Below every elementwise size threshold a map's or zip's row depends on the op and dtypes
    # alone; when that row hands the op to numpy (no plan), a short key remembers it (~1 us less
    # per small op than the full key below).
    # Likewise a reduction of fewer than COLS_NUMBA_MIN values: only the arg row (argmax/argmin)
    # comes before the numpy row, whose plan is the dims, so (op, dtypes, dims) decides it.
    # An op with a packed row is decided by the layout too: never by the short key alone.
    n = out.size
    dt, odt = views[0].storage.dtype, out.storage.dtype
    plo, phi = packed_range(family, op, dt, odt)
    if family == "reduce":
        bound = COLS_NUMBA_MIN
        small = numpy_ufuncs and views[0].size < bound
        skey = (family, op, dt, odt, dims)
    else:
        bound = min(FLAT_MIN, FLAT_ZIP_MIN, TILE_ZIP_MIN)
        small = family in _SMALL_FAMILIES and numpy_ufuncs and n < bound
        skey = (family, op, dt, odt)
    if small and not phi:
        hit = _SMALL_ROUTES.get(skey)
        if hit is not None:
            return hit
    # The decision depends only on the key's fields (a training loop repeats a few hundred
    # distinct calls), and walking the rows costs ~4 us: remembered, a small op is as quick as
    # on the numpy backend.
    key = (family, op, numpy_ufuncs, dims, out.shape, out.strides, out.storage.dtype) + tuple(
        [
            (
                v.shape,
                v.strides,
                v.storage.dtype,
                v.storage is out.storage and v.offset == out.offset,
            )
            for v in views
        ]
    )
    hit = _ROUTES.get(key)
    if hit is not None:
        return hit
    extra = reduction(views[0], dims, out) if family == "reduce" else numpy_ufuncs
    for match in (_MATCH if numpy_ufuncs else _MATCH_KERNELS)[family]:
        hit = match(op, views, out, n, extra)
        if hit is not None:
            if len(_ROUTES) < ROUTE_CACHE_SIZE and not hit[0].startswith(_PLANS_HOLD_DATA):
                _ROUTES[key] = hit
            if small and not phi and (hit[1] is None or hit[0] == "numpy.reduce"):
                _SMALL_ROUTES[skey] = hit
                if hit[0] in _NUMPY_KERNELS:
                    NUMPY_SMALL[skey] = bound
            elif small and phi:
                _remember_packed(family, op, skey, hit, plo, phi, bound)
            return hit
    raise BackendError(
        f"numba backend: {family} op {op!r} is not defined for dtype {views[0].storage.dtype}"
    )


# --- asking the table --------------------------------------------------------------------------------
_REDUCE_OPS = ("sum", "prod", "max", "min", "argmax", "argmin")


def _broadcast(views):
    shape = np.broadcast_shapes(*(v.shape for v in views))
    return shape, [v if v.shape == shape else v.expand(shape) for v in views]


def explain(op, *tensors, dim=None):
    """The kernel ``NumbaBackend`` would run for ``op`` on ``tensors`` (on device "numba"), as
    ``TABLE`` names it: ``"numpy"`` (the numpy backend's ufuncs), ``"_flat32.map32"``, ...

    ``op`` is a backend op name: a map with one tensor ("exp", "gelu"), a zip with two ("add",
    "lt"), ``"where"`` with (cond, a, b), or a reduction ("sum", "argmax") over ``dim`` (an int,
    a tuple, or None for every dim). Operands broadcast as they do in the tensor API; they must
    already share a dtype, as the core casts them before calling the backend.

    >>> import torchlight as tl
    >>> explain("sum", tl.ones(2048, 512, device="numba"), dim=0)
    '_reduce.reduce_cols'
    """
    from .backend import NumbaBackend

    backend = tensors[0].backend
    if not isinstance(backend, NumbaBackend):
        raise BackendError(
            f"explain: the tensors are on {backend.name!r}; move them with .to('numba')"
        )
    views = [t._td for t in tensors]
    dims = ()
    if op in _REDUCE_OPS:
        family, nd = "reduce", len(views[0].shape)
        dims = (
            tuple(range(nd)) if dim is None else tuple(d % nd for d in np.atleast_1d(dim).tolist())
        )
        shape = tuple(1 if d in dims else s for d, s in enumerate(views[0].shape))
    else:
        family = "where" if op == "where" else ("map" if len(views) == 1 else "zip")
        shape, views = _broadcast(views)
    dtype = np.bool_ if family == "zip" and op in CMP_CODES else views[-1].storage.dtype
    out = TensorData(np.empty(int(np.prod(shape)), dtype), tuple(shape))
    return route(family, op, views, out, backend.numpy_ufuncs, dims)[0]


def format_table():
    """``TABLE`` and the thresholds as text, one row per line (what ``python -m
    torchlight.backends.numba.routing`` prints)."""
    heads = ("family", "kernel", "ops", "dtypes", "layout", "size", "why")
    rows = [heads] + [(r.family, " / ".join(r.kernels), *r[2:7]) for r in TABLE]
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:6], widths)) + "  " + r[6] for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines += ["", "First matching row of a family wins. Thresholds (elements):"]
    lines += [  # the thresholds (NUMPY_SMALL, a cache filled as routes are asked, is not one)
        f"  {k} = {globals()[k]}" for k in __all__ if isinstance(globals()[k], int)
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_table())
