"""Step time of the mini-GPT with 1 and 2 MPI ranks (torchlight.distributed).

    python tests-integration/benchmarks/bench_ddp.py                  # 1 and 2 ranks
    python tests-integration/benchmarks/bench_ddp.py --ranks 1,2,4 --steps 20 --global-batch 16

Strong scaling: the *global* batch is fixed (``--global-batch`` sequences of ``--block-size``
tokens) and split over the ranks, so ideal scaling divides the step time by the number of ranks.
Each configuration is a separate job, ``mpiexec -n N python bench_ddp.py --worker ...``, and
reports the median step time (forward + backward + gradient all-reduce + AdamW step) after
``--warmup`` steps (the slowest rank's), the tokens per second, and how long the ranks were blocked waiting for the
all-reduce at the end of backward (communication not hidden behind the rest of backward).

The model is ``projects/mini-gpt/model.py``'s GPT (dropout off, so 1 and N ranks compute the same
function); a small transformer built here stands in when that project is absent.

Every rank runs one BLAS thread, so N ranks use N cores; ``--threaded-baseline`` adds one rank
with a BLAS thread per core (on a busy 2-core machine multi-threaded OpenBLAS is far slower on the
GPT's small matmuls, see the noxfile). On 2 cores expect at best a 2x gain from 2 ranks; the
point is correctness and the scaling path.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from thread_pools import thread_env

ROOT = Path(__file__).resolve().parents[2]
MINI_GPT = ROOT / "projects" / "mini-gpt"


def build_model(args):
    import torchlight as tl
    from torchlight import nn

    tl.manual_seed(0)
    if (MINI_GPT / "model.py").exists():
        sys.path.insert(0, str(MINI_GPT))
        from model import GPT, GPTConfig

        cfg = GPTConfig(
            vocab_size=args.vocab,
            block_size=args.block_size,
            n_layer=args.n_layer,
            n_head=args.n_head,
            n_embd=args.n_embd,
            dropout=0.0,
        )
        return GPT(cfg), "projects/mini-gpt GPT"

    class Block(nn.Module):  # fallback: pre-LN block with nn layers only
        def __init__(self, c, h):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
            self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
            self.fc, self.out = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.reshape(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.h) ** 0.5)
            mask = tl.tril(tl.ones(T, T)) == 0
            att = tl.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + self.proj(y)
            return x + self.out(tl.gelu(self.fc(self.ln2(x))))

    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(args.vocab, args.n_embd)
            self.wpe = nn.Embedding(args.block_size, args.n_embd)
            self.h = nn.ModuleList([Block(args.n_embd, args.n_head) for _ in range(args.n_layer)])
            self.ln = nn.LayerNorm(args.n_embd)

        def forward(self, idx, targets):
            B, T = idx.shape
            x = self.wte(idx) + self.wpe.weight[:T]
            for b in self.h:
                x = b(x)
            logits = self.ln(x) @ self.wte.weight.T
            loss = nn.functional.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
            return logits, loss

    return TinyGPT(), "fallback transformer (bench_ddp.py)"


def worker(args) -> None:
    import numpy as np

    import torchlight as tl
    import torchlight.distributed as dist
    from torchlight import optim

    dist.init()
    r, n = dist.rank(), dist.world_size()
    if args.global_batch % n:
        raise SystemExit(f"--global-batch {args.global_batch} is not divisible by {n} ranks")
    local = args.global_batch // n
    model, kind = build_model(args)
    ddp = dist.DistributedDataParallel(model, bucket_mb=args.bucket_mb) if n > 1 else model
    opt = optim.AdamW(model.parameters(), lr=3e-4)
    times = []
    for step in range(args.warmup + args.steps):
        rng = np.random.default_rng([step, r])
        idx = rng.integers(0, args.vocab, size=(local, args.block_size + 1))
        x, y = tl.tensor(idx[:, :-1]), tl.tensor(idx[:, 1:])
        dist.barrier()  # start every rank's step together
        t0 = time.perf_counter()
        opt.zero_grad()
        _, loss = ddp(x, y)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if step == args.warmup - 1 and n > 1:
            ddp.stats.update(rounds=0, bytes=0, wait_s=0.0)
        if step >= args.warmup:
            times.append(dt)
    worst = dist.all_gather_object(times)  # a step lasts as long as its slowest rank
    step_times = [max(ts[i] for ts in worst) for i in range(args.steps)]
    in_sync = dist.parameters_in_sync(model) if n > 1 else True
    if r == 0:
        med = statistics.median(step_times)
        res = {
            "ranks": n,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "model": kind,
            "params": sum(p.numel() for p in model.parameters()),
            "global_batch": args.global_batch,
            "block_size": args.block_size,
            "step_s_median": med,
            "step_s_min": min(step_times),
            "tokens_per_s": args.global_batch * args.block_size / med,
            "buckets": len(ddp.bucket_sizes) if n > 1 else 0,
            "allreduce_wait_ms_per_step": (
                1e3 * ddp.stats["wait_s"] / max(1, ddp.stats["rounds"]) if n > 1 else 0.0
            ),
            "params_in_sync": in_sync,
        }
        print("RESULT " + json.dumps(res), flush=True)


def launch(args, ranks: int, threads: int) -> dict:
    from torchlight.distributed.run import find_mpiexec

    env = dict(os.environ)
    env.update(thread_env(threads))
    passthrough = [
        f"--{k.replace('_', '-')}={v}"
        for k, v in vars(args).items()
        if k not in ("ranks", "worker", "json", "threaded_baseline")
    ]
    cmd = [find_mpiexec(), "-n", str(ranks), sys.executable, __file__, "--worker", *passthrough]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"benchmark job failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--global-batch", type=int, default=16)
    p.add_argument("--block-size", type=int, default=128)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--vocab", type=int, default=65)
    p.add_argument("--bucket-mb", type=float, default=1.0)
    p.add_argument(
        "--threaded-baseline",
        action="store_true",
        help="also time 1 rank with one BLAS thread per core",
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args(argv)
    if args.worker:
        worker(args)
        return []
    from torchlight.distributed.run import find_mpiexec

    if find_mpiexec() is None:
        raise SystemExit("no mpiexec: pip install mpich mpi4py")
    cores = os.cpu_count() or 1
    configs = []
    for n in (int(v) for v in args.ranks.split(",")):
        configs.append((n, 1))  # one BLAS thread per rank: N ranks use N cores
        if n == 1 and args.threaded_baseline and cores > 1:
            configs.append((1, cores))  # one rank using every core through BLAS threads
    results = []
    print(
        f"{'ranks':>5} {'BLAS thr':>8} {'step (ms)':>10} {'min (ms)':>9} {'tokens/s':>9} "
        f"{'wait (ms)':>9}  model"
    )
    for n, threads in configs:
        res = launch(args, n, threads)
        results.append(res)
        print(
            f"{n:>5} {threads:>8} {1e3 * res['step_s_median']:>10.1f} "
            f"{1e3 * res['step_s_min']:>9.1f} {res['tokens_per_s']:>9.0f} "
            f"{res['allreduce_wait_ms_per_step']:>9.2f}  {res['model']} "
            f"({res['params']:,} params, global batch {res['global_batch']}x{res['block_size']})",
            flush=True,
        )
        assert res["params_in_sync"], "replicas diverged"
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
