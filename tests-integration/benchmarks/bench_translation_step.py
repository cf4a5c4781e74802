"""Training-step time of the machine-translation project's model (teacher forcing, Adam).

Run: ``python tests-integration/benchmarks/bench_translation_step.py [--steps 25] [--batch 128]
[--device cpu|numba]``. Builds ``projects/machine-translation``'s ``Seq2Seq`` at its default
sizes (embedding and hidden 256, bidirectional encoder, general attention) with vocabularies of
``--vocab`` words, and times ``loss`` + ``backward`` + ``Adam.step`` on synthetic batches whose
sentences have 4 to 10 tokens (the project's ``--max-words 8`` plus EOS, padded per batch as
its training loop pads them). Prints the median ms per step after ``--warmup`` steps, and the
last loss, so two versions of the model can be compared on the same numbers
(``bench_commits.py BASE -- bench_translation_step.py``). Single-threaded unless ``--threads``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from thread_pools import default_threads

PROJECT = Path(__file__).resolve().parents[2] / "projects" / "machine-translation"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--vocab", type=int, default=3000)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    default_threads(args.threads)

    import numpy as np

    import torchlight as tl

    sys.path.insert(0, str(PROJECT))
    from data import Encoded, make_batch
    from model import EOS, ModelConfig, Seq2Seq

    rng = np.random.default_rng(0)
    n = args.batch

    def batch():
        """``n`` random sentence pairs of 4 to 10 tokens (EOS last), padded by the project's own
        ``make_batch`` as its training loop pads them."""
        src_len, tgt_len = rng.integers(4, 11, n), rng.integers(4, 11, n)
        src, tgt = [], []
        for i in range(n):
            src.append(np.r_[rng.integers(4, args.vocab, src_len[i] - 1), EOS])
            tgt.append(np.r_[rng.integers(4, args.vocab, tgt_len[i] - 1), EOS])
        return make_batch(Encoded(src, tgt), np.arange(n))

    tl.set_default_device(args.device)
    tl.manual_seed(0)
    model = Seq2Seq(ModelConfig(args.vocab, args.vocab))
    opt = tl.optim.Adam(model.parameters(), lr=1e-3)
    batches = [batch() for _ in range(6)]
    times = []
    for k in range(args.warmup + args.steps):
        b = batches[k % len(batches)]
        t0 = time.perf_counter()
        loss = model.loss(b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    ms = 1e3 * statistics.median(times[args.warmup :])
    print(f"translation step ({args.device}, batch {n})  {ms:.1f}")
    print(f"last loss  {loss.item():.6f}")


if __name__ == "__main__":
    main()
