"""Backends side by side: the numpy (``cpu``) backend, the numba backend, PyTorch CPU if installed.

Run: ``python tests-integration/benchmarks/bench_backends.py`` (``--quick`` for fewer repeats,
``--cold`` to compile into an empty numba cache, ``--threads N``). One process, one run; prints
the median time per call of each case and the ratios numpy/numba and torch/numba (> 1: numba is
faster). Every case goes through the public tensor API, so the times include torchlight's
per-op Python overhead, which is what a user sees.

JIT compile time is reported separately: the first call of each case on the numba backend
(compile, or load from numba's on-disk cache when ``cache=True`` already has the kernel) is
timed on its own and excluded from the medians. PyTorch runs with the same thread count as
numba, and so does BLAS while the numpy backend is timed (``threadpoolctl``); the numba backend
sets BLAS to one thread itself, because it runs its matmuls on its own threads (``_blas.py``).
PyTorch is never a dependency: ``pip install torch==2.13.0`` to include it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument("--cold", action="store_true", help="compile into an empty numba cache dir")
    p.add_argument(
        "--threads", type=int, default=None, help="numba/torch threads (default: numba's)"
    )
    p.add_argument("--no-gpt", action="store_true", help="skip the GPT / MLP training steps")
    return p.parse_args()


ARGS = parse()
if ARGS.cold:
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-cold-")

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import torchlight as tl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpt  # noqa: E402

try:
    import torch
except ImportError:  # torch is optional
    torch = None


def median_ms(fn, repeat, min_time=0.2):
    """Median wall time of one call in ms (calls batched so each sample lasts >= ~min_time/repeat)."""
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    inner = max(1, int(min_time / repeat / max(one, 1e-6)))
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t) / inner)
    return statistics.median(samples) * 1e3


def settle():
    """Let the previous case's thread pool go idle: OpenBLAS's and OpenMP's workers spin for a
    while after their last call and would take the cores from the next backend (measured: numba's
    matmul 512² right after numpy's 2-thread one took 1.2, 3.1 or 8.0 ms; after this pause 1.2)."""
    time.sleep(0.5)


def first_call_ms(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


# --- cases: each builds its inputs for a device and returns a zero-argument callable ---------------
def tl_case(name, build):
    return name, build


def elementwise_chain(dev, n=1 << 20):
    x = tl.randn(n, device=dev)
    y = tl.randn(n, device=dev)
    return lambda: ((x * 2.0 + 1.0).tanh() * y - x).relu() + x.exp() * 0.5


def torch_elementwise_chain(n=1 << 20):
    x, y = torch.randn(n), torch.randn(n)
    return lambda: ((x * 2.0 + 1.0).tanh() * y - x).relu() + x.exp() * 0.5


def reduction(dim):
    def build(dev):
        x = tl.randn(1024, 1024, device=dev)
        return lambda: x.sum(dim)

    def build_torch():
        x = torch.randn(1024, 1024)
        return lambda: x.sum(dim) if dim is not None else x.sum()

    return build, build_torch


def softmax_rows(r, c, backward=False):
    def build(dev):
        x = tl.randn(r, c, device=dev, requires_grad=backward)
        g = tl.randn(r, c, device=dev)
        if backward:
            return lambda: x.softmax(-1).backward(g)
        return lambda: x.softmax(-1)

    def build_torch():
        x = torch.randn(r, c, requires_grad=backward)
        g = torch.randn(r, c)
        if backward:
            return lambda: x.softmax(-1).backward(g)
        return lambda: x.softmax(-1)

    return build, build_torch


def layernorm_rows(r, c, backward=False):
    def build(dev):
        x = tl.randn(r, c, device=dev, requires_grad=backward)
        w = tl.randn(c, device=dev, requires_grad=backward)
        b = tl.randn(c, device=dev, requires_grad=backward)
        g = tl.randn(r, c, device=dev)
        if backward:
            return lambda: tl.layer_norm(x, (c,), w, b).backward(g)
        return lambda: tl.layer_norm(x, (c,), w, b)

    def build_torch():
        x = torch.randn(r, c, requires_grad=backward)
        w = torch.randn(c, requires_grad=backward)
        b = torch.randn(c, requires_grad=backward)
        g = torch.randn(r, c)
        f = torch.nn.functional.layer_norm
        if backward:
            return lambda: f(x, (c,), w, b).backward(g)
        return lambda: f(x, (c,), w, b)

    return build, build_torch


def matmul(n=512):
    def build(dev):
        a, b = tl.randn(n, n, device=dev), tl.randn(n, n, device=dev)
        return lambda: a @ b

    def build_torch():
        a, b = torch.randn(n, n), torch.randn(n, n)
        return lambda: a @ b

    return build, build_torch


def mlp_step(dev=None, use_torch=False, batch=128):
    """One SGD step of a 784-256-256-10 MLP with cross-entropy (built from tensor ops)."""
    rng = np.random.default_rng(0)
    sizes = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
    init = [
        rng.standard_normal(s).astype(np.float32) * (0.05 if len(s) == 2 else 0.0) for s in sizes
    ]
    xs = rng.standard_normal((batch, 784)).astype(np.float32)
    ys = rng.integers(0, 10, size=(batch, 1))
    if use_torch:
        ps = [torch.tensor(a, requires_grad=True) for a in init]
        x, y = torch.tensor(xs), torch.tensor(ys)

        def step():
            h = torch.relu(x @ ps[0] + ps[1])
            h = torch.relu(h @ ps[2] + ps[3])
            loss = -torch.log_softmax(h @ ps[4] + ps[5], -1).gather(1, y).mean()
            for p in ps:
                p.grad = None
            loss.backward()
            with torch.no_grad():
                for p in ps:
                    p.sub_(p.grad * 0.01)

        return step
    ps = [tl.tensor(a, device=dev, requires_grad=True) for a in init]
    x, y = tl.tensor(xs, device=dev), tl.tensor(ys, device=dev)

    def step():
        h = (x @ ps[0] + ps[1]).relu()
        h = (h @ ps[2] + ps[3]).relu()
        loss = -(h @ ps[4] + ps[5]).log_softmax(-1).gather(1, y).mean()
        for p in ps:
            p.grad = None
        loss.backward()
        with tl.no_grad():
            for p in ps:
                p.sub_(p.grad * 0.01)

    return step


def gpt_step(dev):
    """One AdamW step of the mini-GPT (vocab 65, 4 layers, 4 heads, width 128, context 64, batch 32)."""
    model, opt, idx, tgt = bench_gpt.build(dev)

    def step():
        out = model(idx, tgt)
        loss = out[1] if isinstance(out, tuple) else out
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def torch_gpt_step():
    import torch.nn as tnn

    torch.manual_seed(0)
    V, T, C, H, L, B = 65, 64, 128, 4, 4, 32

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = tnn.LayerNorm(C), tnn.LayerNorm(C)
            self.qkv, self.proj = tnn.Linear(C, 3 * C), tnn.Linear(C, C)
            self.fc, self.out = tnn.Linear(C, 4 * C), tnn.Linear(4 * C, C)
            self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / (C // H) ** 0.5
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, C))
            return x + self.out(tnn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPTT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = tnn.Embedding(V, C), tnn.Embedding(T, C)
            self.blocks = tnn.Sequential(*[Block() for _ in range(L)])
            self.ln = tnn.LayerNorm(C)

        def forward(self, idx, tgt):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            logits = self.ln(self.blocks(x)) @ self.tok.weight.T
            return tnn.functional.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))

    model = GPTT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))

    def step():
        loss = model(idx, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def main():
    import numba

    threads = ARGS.threads or numba.get_num_threads()
    numba.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    repeat = 5 if ARGS.quick else 15
    print(
        f"numba {numba.__version__} ({threads} threads, layer {numba.config.THREADING_LAYER}), "
        f"numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}; "
        f"numba cache: {'cold (empty dir)' if ARGS.cold else 'default (warm after the first run)'}"
    )

    cases = [
        (
            "elementwise chain 1M (7 ops)",
            elementwise_chain,
            torch_elementwise_chain if torch else None,
        )
    ]
    for dim, label in ((0, "sum dim 0"), (1, "sum dim 1"), (None, "sum all")):
        b, bt = reduction(dim)
        cases.append((f"1024x1024 {label}", b, bt))
    for r, c in ((64, 65), (4096, 1024)):
        for bwd in (False, True):
            b, bt = softmax_rows(r, c, bwd)
            cases.append((f"softmax {r}x{c}{' fwd+bwd' if bwd else ''}", b, bt))
            b, bt = layernorm_rows(r, c, bwd)
            cases.append((f"layernorm {r}x{c}{' fwd+bwd' if bwd else ''}", b, bt))
    b, bt = matmul()
    cases.append(("matmul 512x512", b, bt))
    if not ARGS.no_gpt:
        cases.append(
            (
                "MLP step 784-256-256-10 b128",
                lambda dev: mlp_step(dev),
                (lambda: mlp_step(use_torch=True)) if torch else None,
            )
        )
        try:
            import torchlight.nn  # noqa: F401

            cases.append(
                ("GPT step (4L 4H 128w T64 B32 AdamW)", gpt_step, torch_gpt_step if torch else None)
            )
        except ImportError:
            print("(GPT step skipped: torchlight-nn is not installed)")

    head = f"{'case':40s} {'numpy ms':>10s} {'numba ms':>10s} {'torch ms':>10s} {'np/numba':>9s} {'torch/numba':>11s} {'numba 1st call ms':>18s}"
    print(head)
    print("-" * len(head))
    for name, build, build_torch in cases:
        with threadpool_limits(
            threads, user_api="blas"
        ):  # the numpy backend's matmuls: BLAS's threads
            f_np = build("cpu")
            t_np = median_ms(f_np, repeat)
        settle()
        f_nb = build("numba")
        first = first_call_ms(f_nb)
        t_nb = median_ms(f_nb, repeat)
        settle()
        t_t = median_ms(build_torch(), repeat) if build_torch is not None else float("nan")
        settle()
        print(
            f"{name:40s} {t_np:10.3f} {t_nb:10.3f} {t_t:10.3f} {t_np / t_nb:9.2f} {t_t / t_nb:11.2f} {first:18.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
