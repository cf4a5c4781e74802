"""Elementwise fusion: a GELU written from elementwise ops, eager vs traced-and-fused.

Run: ``python tests-integration/benchmarks/bench_jit_fusion.py [n]`` (default n = 1_000_000
float32 elements; or ``nox -s bench``). Prints, side by side in one run:

* eager torchlight on the numpy backend (nine ops, each a full pass over memory),
* the tape replayed op by op (the same nine ops, without autograd bookkeeping),
* the tape replayed fused: one generated ``numba.njit(parallel=True)`` kernel — on the numba
  backend when it is installed, else the numba kernel run on the cpu backend's host arrays
  (``fuse="numba"``),

for ``x**3`` (as the formula is usually written) and for ``x*x*x``. The target of the jit issue
is fused ≥ 3× faster than eager numpy at 1M elements. Not a timed test: numbers depend on the
machine (and on how busy it is); compile time is excluded (reported separately).
"""

import statistics
import sys
import time

import numpy as np

import torchlight as tl


def gelu_pow(x):
    return 0.5 * x * (1 + (0.79788456 * (x + 0.044715 * x**3)).tanh())


def gelu_mul(x):
    return 0.5 * x * (1 + (0.79788456 * (x + 0.044715 * x * x * x)).tanh())


def best_ms(fn, repeat=15):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3, statistics.median(times) * 1e3


def main(n=1_000_000):
    try:
        import numba  # noqa: F401
    except ImportError:
        print("numba is not installed: fused replay is unavailable (pip install numba)")
        return
    rng = np.random.default_rng(0)
    data = rng.standard_normal(n).astype(np.float32)
    x = tl.tensor(data)
    try:
        backend = tl.get_backend("numba")
        xf, fuse, where = x.to("numba"), None, "numba backend"
    except tl.TorchlightError:
        backend, xf, fuse, where = None, x, "numba", "cpu backend, fuse='numba'"
    print(f"GELU from elementwise ops, {n:,} float32 elements; fused kernel on the {where}")
    print(
        f"{'variant':<10} {'eager numpy':>14} {'replay op-by-op':>16} {'replay fused':>14} {'speed-up':>9}  (best / median ms)"
    )
    for name, fn in (("x**3", gelu_pow), ("x*x*x", gelu_mul)):
        tape = tl.jit.trace(fn, x)
        fused_tape = tl.jit.trace(fn, xf) if backend is not None else tape
        t0 = time.perf_counter()
        y = fused_tape.replay(xf, fuse=fuse)
        compile_s = time.perf_counter() - t0
        err = float(np.max(np.abs(y.to_numpy() - fn(x).numpy())))
        eager = best_ms(lambda fn=fn: fn(x))
        unfused = best_ms(lambda tape=tape: tape.replay(x, fuse=False))
        fused = best_ms(lambda t=fused_tape: t.replay(xf, fuse=fuse))
        print(
            f"{name:<10} {eager[0]:7.2f}/{eager[1]:6.2f} {unfused[0]:8.2f}/{unfused[1]:7.2f} "
            f"{fused[0]:6.2f}/{fused[1]:7.2f} {eager[0] / fused[0]:8.1f}x  "
            f"(first replay incl. compile {compile_s:.2f} s, max |fused - eager| {err:.1e})"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
