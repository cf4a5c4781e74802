"""Where the step of makemore (karpathy/makemore, the compatibility suite's ``makemore_<type>``
cases) goes, phase by phase, on torchlight and on PyTorch.

    taskset -c 1 python tests-integration/benchmarks/bench_makemore_phases.py [--type gru] [--device numba]

The verbatim program (``tests-integration/compat/public/makemore/makemore.py``, imported
unchanged: on torchlight through ``torchlight.compat.install()``) is set up as its case runs it
(one layer, 2 heads, embeddings of 16, batch 16, names of the case's syllables, AdamW at 1e-2);
each step is cut into the batch (its ``InfiniteDataLoader``: a random sampler, the dataset's
``__getitem__`` per name, the collation), the forward with the loss, ``zero_grad`` and
``backward``, and AdamW's step. Each framework runs in a child process of its own with one
thread; µs per step, the median over ``--steps`` steps after 50 unmeasured ones. PyTorch's
column is left out when it is not importable.
"""

from __future__ import annotations

import importlib.util
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import phase_children

PUBLIC = Path(__file__).resolve().parents[1] / "compat" / "public" / "makemore"
PHASES = ("batch", "forward", "backward", "AdamW step", "whole step")
TYPES = ("transformer", "gru", "mlp", "bow")
WARMUP = 50


def _module(name: str, filename: str):
    """The public program's file ``filename`` imported unchanged as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, PUBLIC / filename)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(kind: str, steps: int) -> dict:
    """µs per step of each phase in this process (``torch`` already aliased or real)."""
    import torch

    mm, case = _module("makemore", "makemore.py"), _module("makemore_case", "case.py")
    with tempfile.TemporaryDirectory() as folder:
        case.setup(Path(folder))  # names.txt, as the suite's run writes it
        random.seed(0)
        torch.manual_seed(0)
        train, _ = mm.create_datasets(str(Path(folder) / "names.txt"))
    config = mm.ModelConfig(
        vocab_size=train.get_vocab_size(),
        block_size=train.get_output_length(),
        n_layer=1,
        n_head=2,
        n_embd=16,
        n_embd2=16,
    )
    build = {
        "transformer": mm.Transformer,
        "gru": lambda c: mm.RNN(c, cell_type="gru"),
        "mlp": mm.MLP,
        "bow": mm.BoW,
    }
    model = build[kind](config)
    opt = torch.optim.AdamW(
        model.parameters(), lr=1e-2, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8
    )
    loader = mm.InfiniteDataLoader(train, batch_size=16, pin_memory=True, num_workers=0)
    times = {p: [] for p in PHASES}
    for step in range(WARMUP + steps):
        t0 = time.perf_counter()
        x, y = loader.next()
        t1 = time.perf_counter()
        _, loss = model(x, y)
        t2 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        if step >= WARMUP:
            for phase, (a, b) in zip(PHASES, [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t0, t4)]):
                times[phase].append(b - a)
    return {p: statistics.median(v) * 1e6 for p, v in times.items()}


def main(argv=None) -> int:
    options = {"--type": dict(choices=TYPES, default="gru", help="the model (default gru)")}
    return phase_children.main(
        __file__, __doc__, argv, lambda a: measure(a.type, a.steps), PHASES, "µs", 0, options
    )


if __name__ == "__main__":
    sys.exit(main())
