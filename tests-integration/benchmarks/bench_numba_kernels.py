"""The numba backend's kernels on the mini-GPT's shapes, and why its matmul runs on numba's threads.

Run: ``python tests-integration/benchmarks/bench_numba_kernels.py`` (``--threads N``, default 1).
Prints medians (ms) through the public tensor API for the ops the package README quotes — softmax
over attention's rows of 64, layer norm over rows of 128, the bias-gradient column sum, a full
sum, ``masked_fill`` with a broadcast causal mask, a bias add — numba backend next to the numpy
backend. Then the thread-pool experiment behind ``_blas.py`` (two threads, needs 2 cores): one
(2048, 128) @ (128, 512) product cut in two halves, run (a) as two ``np.matmul`` calls, one on a
Python thread, alone and right after a numba ``prange`` kernel (whose OpenMP workers then spin),
and (b) as the backend does it, BLAS called from inside numba's ``prange``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def median_ms(fn, before=None, n=50):
    for _ in range(5):
        fn()
    times = []
    for _ in range(n):
        if before is not None:
            before()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def cases(tl, dev):
    """Name -> zero-argument callable, every input on ``dev`` (the same values on each device)."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    att = rng.standard_normal((32, 4, 64, 64)).astype(f32)
    g2 = rng.standard_normal((2048, 512)).astype(f32)
    a = tl.tensor(att, device=dev, requires_grad=True)
    x = tl.tensor(rng.standard_normal((32, 64, 128)).astype(f32), device=dev, requires_grad=True)
    w = tl.ones(128, device=dev, requires_grad=True)
    b = tl.zeros(128, device=dev, requires_grad=True)
    t2 = tl.tensor(g2, device=dev)
    big = tl.tensor(rng.standard_normal((1024, 1024)).astype(f32), device=dev)
    scores = tl.tensor(att, device=dev)
    mask = tl.tensor(np.triu(np.ones((64, 64), bool), k=1), device=dev)
    bias = tl.tensor(rng.standard_normal(512).astype(f32), device=dev)
    return {
        "softmax (32,4,64,64) fwd": lambda: a.softmax(-1),
        "softmax (32,4,64,64) fwd+bwd": lambda: a.softmax(-1).sum().backward(),
        "layer_norm (32,64,128) fwd": lambda: tl.layer_norm(x, (128,), w, b),
        "layer_norm (32,64,128) fwd+bwd": lambda: tl.layer_norm(x, (128,), w, b).sum().backward(),
        "sum dim 0 (2048,512)": lambda: t2.sum(0),
        "sum all (1024,1024)": lambda: big.sum(),
        "masked_fill (32,4,64,64), mask (64,64)": lambda: scores.masked_fill(mask, float("-inf")),
        "bias add (2048,512)+(512,)": lambda: t2 + bias,
    }


def kernels(tl):
    on_numpy, on_numba = cases(tl, "cpu"), cases(tl, "numba")
    for name in on_numpy:
        t_np, t_nb = median_ms(on_numpy[name]), median_ms(on_numba[name])
        print(f"{name:42s} {t_np:9.3f} {t_nb:9.3f} {t_np / t_nb:8.2f}", flush=True)


def thread_pools(tl):
    import numba
    from numba import njit, prange
    from threadpoolctl import threadpool_limits

    if numba.config.NUMBA_NUM_THREADS < 2:
        print("(thread-pool experiment skipped: numba has one thread)")
        return
    numba.set_num_threads(2)

    @njit(parallel=True)
    def scale(v):
        for i in prange(v.size):
            v[i] = v[i] * np.float32(1.0001)

    v = np.ones(1 << 16, np.float32)
    scale(v)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2048, 128)).astype(np.float32)
    b = rng.standard_normal((128, 512)).astype(np.float32)
    o = np.empty((2048, 512), np.float32)
    pool = ThreadPoolExecutor(1)

    def python_threads():
        f = pool.submit(np.matmul, a[1024:], b, out=o[1024:])
        np.matmul(a[:1024], b, out=o[:1024])
        f.result()

    ta, tb = tl.tensor(a, device="numba"), tl.tensor(b, device="numba")
    ta @ tb  # loads BLAS and caps it at one thread (the backend's own setting)
    with threadpool_limits(1, user_api="blas"):
        print(f"{'halves on a Python thread, alone':42s} {median_ms(python_threads):9.3f}")
        print(
            f"{'halves on a Python thread, after prange':42s} {median_ms(python_threads, lambda: scale(v)):9.3f}"
        )
    print(
        f"{'BLAS inside prange (backend), after prange':42s} {median_ms(lambda: ta @ tb, lambda: scale(v)):9.3f}"
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1, help="numba threads for the kernel table")
    args = p.parse_args()
    import numba

    import torchlight as tl

    numba.set_num_threads(args.threads)
    print(f"numba {numba.__version__}, {args.threads} thread(s); medians in ms")
    print(f"{'case':42s} {'numpy':>9s} {'numba':>9s} {'np/nb':>8s}")
    kernels(tl)
    print("\n(2048,128) @ (128,512), two threads, ms")
    thread_pools(tl)


if __name__ == "__main__":
    main()
