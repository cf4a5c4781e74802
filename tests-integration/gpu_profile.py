"""Where the time of torchlight's CUDA backend goes: a one-shot profile for a real NVIDIA GPU.

Run from the repository root on a machine with an NVIDIA GPU (nothing of torchlight installed is
needed; the helpers of ``tests-integration/gpu_check.py`` make the source tree importable)::

    python tests-integration/gpu_profile.py --out gpu_profile.json

    # a dry run of this script with toy sizes on numba's CUDA simulator (no GPU; slow):
    NUMBA_ENABLE_CUDASIM=1 python tests-integration/gpu_profile.py --tiny --out /tmp/gp.json

Parts, each recorded in one JSON file (``--out``, rewritten after every part; one part failing is
recorded as an error and does not stop the others), then a short table on stdout:

1. ``environment``: GPU name, compute capability, driver/runtime, versions (``gpu_check``).
2. ``gpt_step_profile``: the GPT training step of ``gpu_check`` (``projects/mini-gpt`` model,
   batch 64, context 256, width 384, 6 layers; AdamW). After 2 warm-up steps (the first one
   compiles), the un-instrumented step time (median of 5, synchronized), then ``--steps`` steps
   with every public method of the cuda backend instance wrapped: ``cuda.synchronize()`` before
   and after each call, wall time and call count per method (exclusive of nested backend calls),
   split into host time (until the call returns: Python, argument handling, launch) and the wait
   for the device after it. ``matmul`` calls are also bucketed by (batch, n, k, m, operand layout:
   N = unit column stride, T = transposed view) with their achieved GFLOP/s (top 15 by time).
   Whatever is not inside a backend call is reported as "(outside backend calls)": autograd,
   dispatch and module Python. The wrappers are removed afterwards.
3. ``matmul_tile_sweep``: the tiled matmul kernel (``_matmul.matmul_kernel``) built directly for
   up to ``--configs`` tile shapes ``(BM, BN, BK, TM, TN)`` (the backend's ``MATMUL_TILE`` first;
   shapes the kernel cannot take are recorded as invalid, not run) and timed with CUDA events
   (1 warm-up launch, median of ``--reps``) on float32 products: 4096^3, the GPT's Linear layers
   with their real operand layouts (forward ``x @ W^T`` with ``W^T`` a transposed view, the input
   gradient ``g @ W``, the weight gradient ``g^T @ x`` with ``g^T`` a transposed view) and its two
   attention products (batch 64x6 of ``q @ k^T`` and ``att @ v``, ``q``/``k``/``v`` strided views
   of the fused qkv output). Every result is checked on a few rows against a float64 numpy product;
   a config that fails or is wrong is recorded as such. Beside them: ``backend.matmul`` (the
   backend's own entry point, current tile, including its Python) and PyTorch (fp32, no TF32) on
   the same shapes and strides when torch has CUDA.

The whole run is bounded by ``--budget`` seconds (default 170): the GPT timing loops stop early
and tile configs that would not fit are recorded as skipped. ``--parts gpt`` or ``--parts sweep``
runs one part only.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check  # noqa: E402

# --- sizes (--tiny replaces them) ---------------------------------------------------------------
SQUARE_N = 4096
WARMUP_STEPS = 2  # the first one compiles every kernel of the step
PLAIN_STEPS = 5  # un-instrumented steps, median
TOP_SHAPES = 15
REL_TOL = 1e-3  # max |ours - float64| / max |float64| above this: the config is wrong
# (BM, BN, BK, TM, TN) candidates, in order of interest (the backend's MATMUL_TILE goes first)
TILES = [
    (64, 64, 16, 4, 4),
    (128, 128, 8, 8, 8),
    (128, 128, 16, 8, 8),
    (128, 64, 8, 8, 4),
    (64, 128, 8, 4, 8),
    (64, 64, 8, 4, 4),
    (64, 64, 8, 8, 8),
    (128, 128, 32, 8, 8),
    (64, 64, 32, 4, 4),
]
# under the simulator every CUDA thread is a Python thread: small blocks; the last one is invalid
# on purpose (BM not a multiple of TM), to exercise the validity check
TINY_TILES = [
    (16, 16, 8, 4, 4),
    (8, 8, 4, 2, 2),
    (16, 16, 4, 4, 4),
    (16, 8, 8, 4, 2),
    (16, 16, 8, 8, 8),
    (16, 16, 8, 3, 4),
]
MAX_THREADS = 1024
MAX_SHARED_BYTES = 48 * 1024  # static shared memory per block


def _error(exc):
    return {
        "status": "error",
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": traceback.format_exc()[-3000:],
    }


def _layout(view):
    """N: unit column stride (row-major rows), T: unit row stride (a transposed view), S: other."""
    shape, strides = view.shape, view.strides
    if shape[-1] == 1 or strides[-1] == 1:
        return "N"
    if shape[-2] == 1 or strides[-2] == 1:
        return "T"
    return "S"


# --- part 2: the GPT step, method by method -----------------------------------------------------
class MethodTimer:
    """Wraps every public method of one backend instance (instance attributes shadowing the class's
    methods): each call is synchronized before and after and timed. Times are exclusive: a nested
    backend call (e.g. ``to_numpy`` -> ``check_errors``) counts for itself, not for its caller."""

    SKIP = frozenset({"synchronize", "empty_cache"})

    def __init__(self, backend):
        self.backend = backend
        self.stats = {}  # name -> [calls, total seconds, host seconds]
        self.matmuls = {}  # (batch, n, k, m, layout) -> [calls, seconds]
        self._stack = []  # child time of the calls in progress
        self._installed = []
        self._shadowed = {}

    def method_names(self):
        cls = type(self.backend)
        names = []
        for name in dir(cls):
            if name.startswith("_") or name in self.SKIP:
                continue
            if inspect.isfunction(inspect.getattr_static(cls, name)):
                names.append(name)
        return names

    def install(self):
        for name in self.method_names():
            if name in vars(self.backend):
                self._shadowed[name] = vars(self.backend)[name]
            setattr(self.backend, name, self._wrap(name, getattr(self.backend, name)))
            self._installed.append(name)

    def restore(self):
        for name in self._installed:
            if name in self._shadowed:
                setattr(self.backend, name, self._shadowed[name])
            else:
                delattr(self.backend, name)
        self._installed.clear()

    def _bucket(self, args, seconds):
        try:
            a, b, out = args[:3]
            n, k = a.shape[-2:]
            key = (
                math.prod(out.shape[:-2]),
                int(n),
                int(k),
                int(b.shape[-1]),
                _layout(a) + _layout(b),
            )
        except Exception:
            key = (0, 0, 0, 0, "?")
        rec = self.matmuls.setdefault(key, [0, 0.0])
        rec[0] += 1
        rec[1] += seconds

    def _wrap(self, name, fn):
        from numba import cuda

        stats = self.stats.setdefault(name, [0, 0.0, 0.0])
        stack, clock, is_matmul = self._stack, time.perf_counter, name == "matmul"
        sync = cuda.synchronize

        def timed(*args, **kwargs):
            sync()
            stack.append(0.0)
            t0 = clock()
            t1 = None
            try:
                result = fn(*args, **kwargs)
                t1 = clock()
                return result
            finally:
                if t1 is None:
                    t1 = clock()
                sync()
                t2 = clock()
                child = stack.pop()
                if stack:
                    stack[-1] += t2 - t0
                stats[0] += 1
                stats[1] += t2 - t0 - child
                stats[2] += t1 - t0 - child
                if is_matmul:
                    self._bucket(args, t2 - t0 - child)

        timed.__wrapped__ = fn
        return timed


def profile_gpt(tl, steps, deadline, publish):
    """``publish(out)`` puts the (growing) result into the report and saves it."""
    import numpy as np

    model, loss_of, groups, source = gpu_check._gpt_model(tl)
    model.to("cuda")
    opt = tl.optim.AdamW(groups, lr=3e-4)
    shape, batch = gpu_check.GPT_SHAPE, gpu_check.BATCH
    T, V = shape["block_size"], shape["vocab_size"]
    data = np.random.default_rng(0).integers(0, V, size=(batch, T + 1))
    x = tl.tensor(data[:, :-1], device="cuda")
    y = tl.tensor(data[:, 1:], device="cuda")
    backend = next(iter(model.parameters())).backend
    out = {
        "model": source,
        "batch": batch,
        **shape,
        "backend": f"{type(backend).__module__}.{type(backend).__name__}",
        "backend_is_registry_cuda": backend is tl.get_backend("cuda"),
        "status": "running",
        "notes": "methods: ms/step = wall time inside the method, cuda.synchronize() before and "
        "after each call, exclusive of nested backend calls; host = until the call returned "
        "(Python + launch), device wait = the rest; share = of the instrumented step. Matmul "
        "layouts: N unit column stride, T transposed view (unit row stride), S other.",
    }
    publish(out)

    def step():
        opt.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        opt.step()
        return loss

    def timed_step():
        gpu_check._sync()
        t0 = time.perf_counter()
        loss = step()
        gpu_check._sync()
        return time.perf_counter() - t0, loss

    warm = []
    for i in range(WARMUP_STEPS):
        dt, loss = timed_step()
        warm.append(dt)
        if i == 0:
            out["first_loss"] = loss.item()
    out["warmup_step_seconds"] = warm
    out["first_step_seconds_incl_compile"] = warm[0]
    publish(out)
    print(f"[gpu_profile] GPT warm-up steps: {', '.join(f'{t:.2f}' for t in warm)} s", flush=True)
    est = warm[-1]

    plain = []
    while len(plain) < PLAIN_STEPS and time.perf_counter() + est < deadline:
        plain.append(timed_step()[0])
    out["plain_steps"] = len(plain)
    if plain:
        out["step_ms_uninstrumented_median"] = 1e3 * statistics.median(plain)
        out["step_ms_uninstrumented_all"] = [1e3 * t for t in plain]
        est = statistics.median(plain)
    publish(out)

    timer = MethodTimer(backend)
    walls = []
    timer.install()
    try:
        # the instrumented step is slower (two synchronizations per call): guess 3x
        while len(walls) < steps and (not walls or time.perf_counter() + 3 * est < deadline):
            dt, loss = timed_step()
            walls.append(dt)
    finally:
        timer.restore()
    out["wrappers_removed"] = all(
        not hasattr(getattr(backend, n), "__wrapped__") for n in timer.method_names()
    )
    out["last_loss"] = loss.item()
    n = len(walls)
    out["instrumented_steps"] = n
    if not n:
        out["status"] = "partial"
        out["reason"] = "no time left for an instrumented step"
        return out
    step_s = sum(walls) / n
    inside = sum(s[1] for s in timer.stats.values()) / n
    out["step_ms_instrumented_mean"] = 1e3 * step_s
    out["backend_calls_ms_per_step"] = 1e3 * inside
    out["outside_backend_ms_per_step"] = 1e3 * (step_s - inside)
    out["backend_calls_per_step"] = sum(s[0] for s in timer.stats.values()) / n
    rows = [
        {
            "method": name,
            "calls_per_step": calls / n,
            "ms_per_step": 1e3 * total / n,
            "host_ms_per_step": 1e3 * host / n,
            "device_wait_ms_per_step": 1e3 * (total - host) / n,
            "share_of_step": total / n / step_s,
        }
        for name, (calls, total, host) in timer.stats.items()
        if calls
    ]
    rows.sort(key=lambda r: -r["ms_per_step"])
    out["methods"] = rows
    mm = []
    for (nb, nn, kk, mm_, lay), (calls, secs) in timer.matmuls.items():
        flops = 2.0 * nb * nn * kk * mm_ * calls
        mm.append(
            {
                "shape": f"{nb}x{nn}x{kk}x{mm_}",
                "batch": nb,
                "n": nn,
                "k": kk,
                "m": mm_,
                "layout": lay,
                "calls_per_step": calls / n,
                "ms_per_step": 1e3 * secs / n,
                "gflops": flops / secs / 1e9 if secs > 0 else None,
                "share_of_step": secs / n / step_s,
            }
        )
    mm.sort(key=lambda r: -r["ms_per_step"])
    out["matmul_shape_buckets"] = len(mm)
    out["matmul_shapes_top"] = mm[:TOP_SHAPES]
    out["status"] = "ok"
    return out


# --- part 3: the matmul tile sweep --------------------------------------------------------------
def tile_problem(tile, dtype_bytes=4):
    """Why the kernel cannot take this tile (None when it can): see ``_matmul.matmul_kernel`` -- a
    ``(BN/TN, BM/TM)`` block whose threads each own a ``TM x TN`` micro-tile (rows ``ty + i*TY``,
    columns ``tx + j*TX``: BM, BN must be multiples of TM, TN), two static shared tiles
    ``BM x BK`` and ``BK x BN``, and ``_stage``'s strided copy (any BK)."""
    if len(tile) != 5 or not all(isinstance(v, int) and v > 0 for v in tile):
        return "needs five positive ints (BM, BN, BK, TM, TN)"
    BM, BN, BK, TM, TN = tile
    if BM % TM or BN % TN:
        return f"BM={BM} must be a multiple of TM={TM} and BN={BN} of TN={TN}"
    threads = (BM // TM) * (BN // TN)
    if threads > MAX_THREADS:
        return f"{threads} threads per block > {MAX_THREADS}"
    shared = (BM * BK + BK * BN) * dtype_bytes
    if shared > MAX_SHARED_BYTES:
        return f"{shared} bytes of shared memory > {MAX_SHARED_BYTES}"
    return None


def _tile_name(tile):
    BM, BN, BK, TM, TN = tile
    return f"{BM}x{BN}x{BK}/{TM}x{TN}"


class Operand:
    """A strided view of a flat float32 buffer, on the host and on the device."""

    def __init__(self, host, shape, strides, offset=0):
        self.host, self.shape, self.strides, self.offset = (
            host,
            tuple(shape),
            tuple(strides),
            offset,
        )
        self.dev = None

    def batch_offset(self, z):
        off = self.offset
        for size, stride in zip(reversed(self.shape[:-2]), reversed(self.strides[:-2])):
            z, i = divmod(z, size)
            off += i * stride
        return off

    def matrix(self, z):
        """The host (rows, cols) matrix of batch element ``z`` (a view, no copy)."""
        from numpy.lib.stride_tricks import as_strided

        base = self.host[self.batch_offset(z) :]
        r, c = self.shape[-2:]
        rs, cs = self.strides[-2:]
        item = self.host.itemsize
        return as_strided(base, shape=(r, c), strides=(rs * item, cs * item), writeable=False)


def matmul_cases(tiny):
    """The products of the sweep: ``name -> (a, b)`` operands (host data only)."""
    import numpy as np

    from torchlight.tensor.indexing import contiguous_strides

    N = 32 if tiny else SQUARE_N
    g = gpu_check.GPT_SHAPE
    B, T, C, H = gpu_check.BATCH, g["block_size"], g["n_embd"], g["n_head"]
    D, R = C // H, gpu_check.BATCH * g["block_size"]
    # one pool of uniform values in [-0.5, 0.5); every operand a slice of it at its own offset
    # (drawing each operand anew costs seconds at these sizes)
    biggest = max(N * N, B * H * T * T, R * 4 * C, B * T * 3 * C)
    pool = np.random.default_rng(0).random(2 * biggest + 7919, dtype=np.float32)
    pool -= 0.5
    used = [0]

    def buf(n):
        used[0] += 1
        off = (used[0] * 7919) % (len(pool) - n + 1)
        return pool[off : off + n]

    def dense(*shape):
        return Operand(buf(math.prod(shape)), shape, contiguous_strides(shape))

    def transposed(rows, cols):
        """The (rows, cols) transposed view of a contiguous (cols, rows) matrix."""
        return Operand(buf(rows * cols), (rows, cols), (1, rows))

    qkv = buf(B * T * 3 * C)  # the fused projection's output (B, T, 3C); q, k, v are views of it
    bh = (B, H)
    bh_strides = (T * 3 * C, D)
    q = Operand(qkv, bh + (T, D), bh_strides + (3 * C, 1), 0)
    kt = Operand(qkv, bh + (D, T), bh_strides + (1, 3 * C), C)
    v = Operand(qkv, bh + (T, D), bh_strides + (3 * C, 1), 2 * C)
    return {
        f"sq{N}": (dense(N, N), dense(N, N)),
        "qkv_fwd": (dense(R, C), transposed(C, 3 * C)),  # x @ W^T
        "fc_fwd": (dense(R, C), transposed(C, 4 * C)),
        "proj_fwd": (dense(R, 4 * C), transposed(4 * C, C)),
        "qkv_dx": (dense(R, 3 * C), dense(3 * C, C)),  # g @ W
        "qkv_dW": (transposed(3 * C, R), dense(R, C)),  # g^T @ x
        "att_qk": (q, kt),
        "att_v": (dense(B, H, T, T), v),
    }


class Case:
    """One product on the device: operands, a contiguous output, the reference rows, and the
    kernel arguments exactly as ``CudaBackend.matmul`` passes them."""

    def __init__(self, name, a, b):
        import numpy as np
        from numba import cuda

        from torchlight.backends.cuda._launch import coalesce
        from torchlight.tensor.indexing import contiguous_strides

        self.name, self.a, self.b = name, a, b
        self.batch = a.shape[:-2]
        self.n, self.k = a.shape[-2:]
        self.m = b.shape[-1]
        self.nbatch = math.prod(self.batch)
        self.out_shape = self.batch + (self.n, self.m)
        self.out_strides = contiguous_strides(self.out_shape)
        self.flops = 2.0 * self.nbatch * self.n * self.k * self.m
        self.layout = _layout(a) + _layout(b)
        self.label = (
            f"{'x'.join(map(str, self.batch)) + ' of ' if self.batch else ''}"
            f"{self.n}x{self.k} @ {self.k}x{self.m} {self.layout}"
        )
        if a.host is b.host:
            a.dev = b.dev = cuda.to_device(a.host)
        else:
            a.dev, b.dev = cuda.to_device(a.host), cuda.to_device(b.host)
        size = math.prod(self.out_shape)
        self.nan = np.full(size, np.nan, dtype=np.float32)
        self.out = cuda.to_device(self.nan)
        self.bshape, (self.abs_, self.bbs, self.obs) = coalesce(
            self.batch, (a.strides[:-2], b.strides[:-2], self.out_strides[:-2])
        )
        self.bshape = tuple(int(s) for s in self.bshape)
        self.abs_, self.bbs, self.obs = (
            tuple(int(s) for s in t) for t in (self.abs_, self.bbs, self.obs)
        )
        # reference rows: (batch element, row) pairs, float64 on the host
        picks = sorted({(0, 0), (self.nbatch // 2, self.n // 2), (self.nbatch - 1, self.n - 1)})
        self.ref = []
        for z in sorted({z for z, _ in picks}):
            bz = b.matrix(z).astype(np.float64)
            for zz, r in picks:
                if zz == z:
                    self.ref.append((z, r, a.matrix(z)[r].astype(np.float64) @ bz))
        self.ref_scale = max(float(np.max(np.abs(w))) for _, _, w in self.ref) or 1.0

    def args(self):
        """The arguments of ``CudaBackend._launch_matmul`` (before its ``tile``)."""
        a, b = self.a, self.b
        return (
            (a.dev, self.abs_, int(a.offset), int(a.strides[-2]), int(a.strides[-1])),
            (b.dev, self.bbs, int(b.offset), int(b.strides[-2]), int(b.strides[-1])),
            (self.out, self.obs, 0, int(self.out_strides[-2]), int(self.out_strides[-1])),
            self.bshape,
            self.nbatch,
            int(self.n),
            int(self.k),
            int(self.m),
        )

    def reset_out(self):
        self.out.copy_to_device(self.nan)

    def max_rel_err(self, rows_of=None):
        """Max |got - float64| / max |float64| over the reference rows (inf for NaN)."""
        import numpy as np

        worst = 0.0
        for z, r, want in self.ref:
            if rows_of is None:
                start = z * self.n * self.m + r * self.m
                got = self.out[start : start + self.m].copy_to_host()
            else:
                got = rows_of(z, r)
            diff = np.abs(np.asarray(got, dtype=np.float64) - want)
            if not np.all(np.isfinite(diff)):
                return float("inf")
            worst = max(worst, float(np.max(diff)) / self.ref_scale)
        return worst


class KernelTimer:
    """Device time of one launch: CUDA events around it on a real GPU (the gap while the host
    prepares the launch included), synchronize + perf_counter where events do not time (the
    simulator). Also the host time of the launch call itself."""

    def __init__(self):
        from numba import cuda

        from torchlight.backends.cuda._launch import SIMULATOR

        self.cuda = cuda
        self.events = None
        if not SIMULATOR:
            try:
                e0, e1 = cuda.event(timing=True), cuda.event(timing=True)
                e0.record()
                e1.record()
                e1.synchronize()
                if e0.elapsed_time(e1) >= 0:
                    self.events = e0, e1
            except Exception:
                self.events = None
        self.method = "cuda events" if self.events else "synchronize + perf_counter"

    def __call__(self, fn):
        """``(device ms, host ms)`` of ``fn()``."""
        clock = time.perf_counter
        if self.events:
            e0, e1 = self.events
            e0.record()
            h0 = clock()
            fn()
            h1 = clock()
            e1.record()
            e1.synchronize()
            return float(e0.elapsed_time(e1)), 1e3 * (h1 - h0)
        self.cuda.synchronize()
        h0 = clock()
        fn()
        h1 = clock()
        self.cuda.synchronize()
        return 1e3 * (clock() - h0), 1e3 * (h1 - h0)


def _time_runs(timer, fn, reps):
    runs = [timer(fn) for _ in range(reps)]
    dev = [r[0] for r in runs]
    return statistics.median(dev), statistics.median(r[1] for r in runs), dev


def _bench_kernel(be, case, tile, timer, reps):
    """The tiled kernel at ``tile``, launched through the backend's own ``_launch_matmul``."""
    args = case.args()

    def run():
        be._launch_matmul(*args, tile=tile)

    return {**_measure(case, run, timer, reps), "batch_ndim": len(case.bshape)}


def _measure(case, run, timer, reps):
    """One warm-up call of ``run`` (timed: the first compiles), the product checked against
    float64, then ``reps`` timed calls; ``host_ms`` is the time until ``run`` returns."""
    case.reset_out()
    t0 = time.perf_counter()
    run()
    gpu_check._sync()
    first = time.perf_counter() - t0
    err = case.max_rel_err()
    ms, host_ms, all_ms = _time_runs(timer, run, reps)
    return {
        "status": "ok" if err <= REL_TOL else "wrong",
        "ms": ms,
        "gflops": case.flops / ms / 1e6 if ms > 0 else None,
        "host_ms": host_ms,
        "first_call_seconds": first,
        "max_rel_err": err,
        "ms_all": all_ms,
    }


def _bench_backend(be, case, timer, reps):
    """``CudaBackend.matmul`` itself (its tile, its Python) on the same views."""
    from torchlight.tensor.storage import TensorData

    a = TensorData(case.a.dev, case.a.shape, case.a.strides, case.a.offset)
    b = TensorData(case.b.dev, case.b.shape, case.b.strides, case.b.offset)
    out = TensorData(case.out, case.out_shape)

    def run():
        be.matmul(a, b, out)

    return _measure(case, run, timer, reps)


def _torch_device(tiny):
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    if torch.cuda.is_available():
        return "cuda", None
    if tiny:  # exercise the code path on the cpu in a dry run
        return "cpu", None
    return None, "torch has no CUDA device"


def _bench_torch(case, device, reps):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")

    def view(op):
        flat = torch.from_numpy(op.host).to(device)
        return torch.as_strided(flat, op.shape, op.strides, op.offset)

    ta, tb = view(case.a), view(case.b)
    res = {}

    def run():
        res["c"] = torch.matmul(ta, tb)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    def timed():
        if device == "cuda":
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            run()
            e1.record()
            e1.synchronize()
            return e0.elapsed_time(e1)
        sync()
        t0 = time.perf_counter()
        run()
        sync()
        return 1e3 * (time.perf_counter() - t0)

    run()
    sync()
    c = res["c"].reshape(-1, case.n, case.m)
    err = case.max_rel_err(lambda z, r: c[z, r].cpu().numpy())
    times = [timed() for _ in range(reps)]
    ms = statistics.median(times)
    res.clear()  # let the device memory go
    return {
        "status": "ok" if err <= REL_TOL else "wrong",
        "device": device,
        "torch": torch.__version__,
        "ms": ms,
        "gflops": case.flops / ms / 1e6 if ms > 0 else None,
        "max_rel_err": err,
        "ms_all": times,
    }


def sweep_matmul(tl, tiles, max_configs, reps, deadline, tiny, publish):
    """``publish(out)`` puts the (growing) result into the report and saves it."""
    from torchlight.backends.cuda import backend as B
    from torchlight.backends.cuda._launch import SIMULATOR

    current = tuple(int(v) for v in B.MATMUL_TILE)
    order = [current] + [t for t in tiles if t != current]
    out = {
        "status": "running",
        "current_tile": _tile_name(current),
        "tile_order": "(BM, BN, BK, TM, TN): block (BN/TN, BM/TM) threads, TM x TN per thread",
        "reps": reps,
        "rel_tol": REL_TOL,
        "simulator": SIMULATOR,
    }
    publish(out)
    timer = KernelTimer()
    out["timing"] = timer.method + " around each launch (median of reps, after 1 warm-up)"
    t0 = time.perf_counter()
    cases = {}
    for name, (a, b) in matmul_cases(tiny).items():
        cases[name] = Case(name, a, b)
    out["setup_seconds"] = time.perf_counter() - t0
    out["shapes"] = {
        name: {"label": c.label, "gflop": c.flops / 1e9, "batch_ndim": len(c.bshape)}
        for name, c in cases.items()
    }
    configs = out["configs"] = {}

    def run_config(label, bench):
        print(f"[gpu_profile] matmul sweep: {label}", flush=True)
        res = configs[label] = {}
        t0 = time.perf_counter()
        for name, case in cases.items():
            try:
                res[name] = bench(case)
            except Exception as exc:
                res[name] = _error(exc)
        res["seconds"] = time.perf_counter() - t0
        publish(out)
        return res["seconds"]

    # the current tile, the backend's own entry point, then torch; then the other tiles
    durations = []
    valid = [t for t in order if not tile_problem(t)]
    not_run = {
        _tile_name(t): {"status": "invalid", "reason": tile_problem(t)}
        for t in order
        if tile_problem(t)
    }
    for tile in valid[max_configs:]:
        not_run[_tile_name(tile)] = {"status": "skipped", "reason": f"--configs {max_configs}"}
    valid = valid[:max_configs]

    def fits():
        """A new config costs about what the slowest other one did; the first (current) tile's
        kernels were compiled by the GPT part already, so add a compile guess to its time."""
        if not durations:
            est = 0.0
        elif len(durations) > 1:
            est = max(durations[1:])
        else:
            est = durations[0] + (0.0 if SIMULATOR else 10.0)
        return time.perf_counter() + est < deadline

    be = tl.get_backend("cuda")
    for i, tile in enumerate(valid):
        label = _tile_name(tile) + (" (current)" if tile == current else "")
        if not fits():
            configs[label] = {"status": "skipped", "reason": "time budget spent"}
            continue
        durations.append(
            run_config(label, lambda case, tile=tile: _bench_kernel(be, case, tile, timer, reps))
        )
        if i == 0:
            run_config("backend.matmul", lambda case: _bench_backend(be, case, timer, reps))
            device, why = _torch_device(tiny)
            if device is None:
                configs["torch"] = {"status": "skipped", "reason": why}
            else:
                label = "torch" if device == "cuda" else f"torch ({device})"
                run_config(label, lambda case, d=device: _bench_torch(case, d, reps))
    configs.update(not_run)
    for case in cases.values():  # free the device memory
        case.a.dev = case.b.dev = case.out = None
    errors = [
        f"{label}/{name}"
        for label, res in configs.items()
        for name, r in res.items()
        if isinstance(r, dict) and r.get("status") in ("error", "wrong")
    ]
    out["failed"] = errors
    out["status"] = "ok"
    return out


# --- the report -------------------------------------------------------------------------------
def _fmt(v, spec, width=0):
    return (format(v, spec) if isinstance(v, (int, float)) else "-").rjust(width)


def _gflops(v, width=0):
    if not isinstance(v, (int, float)):
        return "-".rjust(width)
    return format(v, ".0f" if v >= 100 else ".3g").rjust(width)


def print_tables(report):
    env = report.get("environment", {})
    gpu = env.get("gpu") or report.get("device_name", "?")
    print(
        f"\n== {gpu} (cc {env.get('compute_capability', '?')}), "
        f"numba {env.get('numba', '?')}, numba-cuda {env.get('numba_cuda', '?')}; "
        f"{report.get('elapsed_seconds', '?')} s"
    )
    for name, part in report["results"].items():
        if part.get("status") not in ("ok", "partial"):
            print(f"-- {name}: {part.get('status')}: {part.get('error') or part.get('reason')}")
    g = report["results"].get("gpt_step_profile", {})
    if g.get("methods"):
        print(
            f"\n== GPT train step: {_fmt(g.get('step_ms_uninstrumented_median'), '.1f')} ms "
            f"un-instrumented (median of {g.get('plain_steps')}); instrumented "
            f"{_fmt(g.get('step_ms_instrumented_mean'), '.1f')} ms (mean of "
            f"{g.get('instrumented_steps')}), {_fmt(g.get('backend_calls_per_step'), '.0f')} "
            "backend calls/step"
        )
        print(f"{'method':<24}{'calls/step':>11}{'ms/step':>10}{'host ms':>10}{'share':>8}")
        for r in g["methods"]:
            print(
                f"{r['method']:<24}{r['calls_per_step']:>11.1f}{r['ms_per_step']:>10.2f}"
                f"{r['host_ms_per_step']:>10.2f}{100 * r['share_of_step']:>7.1f}%"
            )
        outside = g["outside_backend_ms_per_step"]
        share = outside / g["step_ms_instrumented_mean"]
        print(
            f"{'(outside backend calls)':<24}{'':>11}{outside:>10.2f}{'':>10}{100 * share:>7.1f}%"
        )
        print(
            f"\n{'matmul batch x n x k x m':<28}{'lay':>4}{'calls':>7}{'ms/step':>9}{'GFLOP/s':>9}"
        )
        for r in g.get("matmul_shapes_top", []):
            print(
                f"{r['shape']:<28}{r['layout']:>4}{r['calls_per_step']:>7.1f}"
                f"{r['ms_per_step']:>9.2f}{_gflops(r['gflops'], 9)}"
            )
    s = report["results"].get("matmul_tile_sweep", {})
    if s.get("configs"):
        names = list(s.get("shapes", {}))
        print(
            f"\n== matmul GFLOP/s (float32; ERR error, BAD wrong result, - not run); {s['timing']}"
        )
        for name in names:
            print(f"   {name:<10} {s['shapes'][name]['label']}")
        print(f"{'config':<24}" + "".join(f"{n:>10}" for n in names))
        for label, res in s["configs"].items():
            if "status" in res and not any(n in res for n in names):
                print(f"{label:<24}  {res['status']}: {res.get('reason', '')}")
                continue
            cells = []
            for n in names:
                r = res.get(n, {})
                st = r.get("status")
                cell = {"error": "ERR", "wrong": "BAD"}.get(st) or _gflops(r.get("gflops"))
                cells.append(f"{cell:>10}")
            print(f"{label:<24}" + "".join(cells))
        problems = [
            f"   {label} / {n}: {r.get('error') or 'max rel err ' + str(r.get('max_rel_err'))}"
            for label, res in s["configs"].items()
            for n, r in res.items()
            if isinstance(r, dict) and r.get("status") in ("error", "wrong")
        ]
        for line in problems[:10]:
            print(line[:160])
        if len(problems) > 10:
            print(f"   ... {len(problems) - 10} more in the JSON")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="gpu_profile.json")
    ap.add_argument("--budget", type=float, default=170.0, help="seconds for the whole run")
    ap.add_argument("--steps", type=int, default=5, help="instrumented GPT steps")
    ap.add_argument("--reps", type=int, default=5, help="timed launches per (config, shape)")
    ap.add_argument("--configs", type=int, default=8, help="most tile configs to compile")
    ap.add_argument("--parts", default="gpt,sweep", help="comma-separated: gpt, sweep")
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="dry run of this script with toy sizes (allowed under NUMBA_ENABLE_CUDASIM=1)",
    )
    args = ap.parse_args(argv)
    start = time.perf_counter()
    deadline = start + args.budget
    global WARMUP_STEPS, PLAIN_STEPS
    tiles = TILES
    if args.tiny:
        gpu_check.GPT_SHAPE.update(vocab_size=65, n_layer=1, n_head=2, n_embd=16, block_size=8)
        gpu_check.BATCH = 2
        WARMUP_STEPS, PLAIN_STEPS = 1, 1
        args.steps, args.reps = min(args.steps, 1), min(args.reps, 2)
        tiles = TINY_TILES
    elif os.environ.pop("NUMBA_ENABLE_CUDASIM", None) not in (None, "", "0"):
        print(
            "[gpu_profile] ignoring NUMBA_ENABLE_CUDASIM: only --tiny runs on the simulator",
            file=sys.stderr,
        )
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    report = {"check": "torchlight-backend-cuda gpu_profile", "tiny": args.tiny, "results": {}}

    def save():
        report["elapsed_seconds"] = round(time.perf_counter() - start, 1)
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))

    def publisher(name):
        def publish(part):
            res[name] = part
            save()

        return publish

    res = report["results"]
    tl = gpu_check.ensure_torchlight()
    from torchlight.backends.cuda.spec import SPEC

    report["environment"] = gpu_check.environment()
    save()
    if not SPEC.is_available():
        report["error"] = f"cuda backend unavailable: {SPEC.why_unavailable()}"
        save()
        print(report["error"], file=sys.stderr)
        return 2
    from torchlight.backends.cuda._launch import SIMULATOR

    try:
        report["device_name"] = tl.get_backend("cuda").device_name
    except Exception as exc:
        report["device_name"] = f"? ({type(exc).__name__}: {exc})"
    if SIMULATOR and not args.tiny:
        report["error"] = "numba's CUDA simulator is on: only --tiny runs there"
        save()
        print(report["error"], file=sys.stderr)
        return 2
    # part -> (least seconds worth starting with, function)
    plan = [
        (
            "gpt_step_profile",
            "gpt",
            20.0,
            lambda: profile_gpt(
                tl,
                args.steps,
                deadline - (45.0 if "sweep" in parts else 5.0),
                publisher("gpt_step_profile"),
            ),
        ),
        (
            "matmul_tile_sweep",
            "sweep",
            15.0,
            lambda: sweep_matmul(
                tl,
                tiles,
                args.configs,
                args.reps,
                deadline - 5.0,
                args.tiny,
                publisher("matmul_tile_sweep"),
            ),
        ),
    ]
    for name, key, least, fn in plan:
        if key not in parts:
            continue
        if not args.tiny and time.perf_counter() + least > deadline:
            res[name] = {"status": "skipped", "reason": "time budget spent"}
            save()
            continue
        t0 = time.perf_counter()
        try:
            res[name] = fn()
        except Exception as exc:  # record and go on: one failing part must not hide the others
            res[name] = {**res.get(name, {}), **_error(exc)}  # keep what it had published
        res[name]["part_seconds"] = round(time.perf_counter() - t0, 1)
        save()
        print(
            f"[gpu_profile] {name}: {res[name].get('status')} in {res[name]['part_seconds']} s",
            flush=True,
        )
    save()
    print_tables(report)
    print(f"\n[gpu_profile] wrote {args.out} in {report['elapsed_seconds']} s")
    bad = [n for n, r in res.items() if r.get("status") == "error"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
