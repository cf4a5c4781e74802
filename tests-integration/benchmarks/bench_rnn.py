"""Recurrent training steps with and without the fused GRU/LSTM cell kernels, per backend.

Run: ``taskset -c 1 python tests-integration/benchmarks/bench_rnn.py`` (``--quick`` for fewer
repeats, ``--backends cpu,numba``). Two models, each one full training step (forward, backward,
gradient clipping, optimizer step) on synthetic data of the real shapes:

* ``mt``: the translation project's GRU encoder-decoder (``projects/machine-translation``,
  default config: emb 256, hidden 256, bidirectional, "general" attention), batch 128, source and
  target lengths 4-9, vocabularies 6000/9000, Adam;
* ``lstm-lm``: PyTorch's word-language-model example (2-layer LSTM, emb 200, hidden 200, bptt 35,
  batch 20, vocabulary 10000, dropout 0.2, tied=False), SGD lr 20 with ``clip_grad_norm_(0.25)``.

"fused" is the backend as shipped; "composite" removes the ``gru_cell`` / ``lstm_cell``
capabilities for the run, so the same model runs the gate arithmetic as separate ops (what
torchlight did before the fused cells). Each number is the median of ``--repeat`` steps after two
warm-up steps (numba compiles or loads its kernels then). PyTorch CPU runs the same models side
by side when it is importable (never a dependency).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import torchlight as tl
import torchlight.nn as nn

try:
    import torch
except ImportError:  # optional
    torch = None

ROOT = Path(__file__).resolve().parents[2]
FUSED = ("gru_cell", "lstm_cell")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="5 timed steps instead of 15")
    p.add_argument("--repeat", type=int, default=None)
    p.add_argument("--backends", default="cpu,numba")
    p.add_argument("--models", default="mt,lstm-lm")
    return p.parse_args()


def median_ms(step, repeat):
    for _ in range(2):
        step()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


# --- the translation model ----------------------------------------------------------------------
def mt_step(dev):
    sys.path.insert(0, str(ROOT / "projects" / "machine-translation"))
    from data import Encoded, make_batch
    from model import ModelConfig, Seq2Seq

    rng = np.random.default_rng(0)
    n = 128
    src = [np.r_[rng.integers(4, 6000, size=k), 3] for k in rng.integers(4, 10, size=n)]
    tgt = [np.r_[rng.integers(4, 9000, size=k), 3] for k in rng.integers(4, 10, size=n)]
    batch = make_batch(Encoded(src, tgt), np.arange(n))
    tl.set_default_device(dev)
    tl.manual_seed(0)
    model = Seq2Seq(ModelConfig(6000, 9000))
    model.train()
    params = list(model.parameters())
    opt = tl.optim.Adam(params, lr=1e-3)

    def step():
        loss = model.loss(batch, teacher_forcing=True)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()

    return step


# --- the LSTM language model ----------------------------------------------------------------------
class LSTMLM(nn.Module):
    """PyTorch's word_language_model RNNModel (LSTM, untied): embed → dropout → LSTM → dropout → linear."""

    def __init__(self, vocab=10000, emb=200, hidden=200, layers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hidden, layers, dropout=dropout)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return self.decoder(self.drop(out)), hidden


def lm_step(dev, bptt=35, batch=20, vocab=10000):
    tl.set_default_device(dev)
    tl.manual_seed(0)
    model = LSTMLM(vocab)
    model.train()
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.integers(0, vocab, size=(bptt, batch)), device=dev)
    y = tl.tensor(rng.integers(0, vocab, size=(bptt * batch,)), device=dev)
    crit = nn.CrossEntropyLoss()
    opt = tl.optim.SGD(model.parameters(), lr=20.0)
    state = {"h": None}

    def step():
        h = state["h"]
        if h is not None:
            h = (h[0].detach(), h[1].detach())  # truncated BPTT: carry the state, not the graph
        opt.zero_grad()
        out, h = model(x, h)
        loss = crit(out.reshape(-1, vocab), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        state["h"] = h
        return loss.item()

    return step


def torch_lm_step(bptt=35, batch=20, vocab=10000):  # pragma: no cover - needs torch
    tnn = torch.nn

    class Model(tnn.Module):
        def __init__(self):
            super().__init__()
            self.drop = tnn.Dropout(0.2)
            self.encoder = tnn.Embedding(vocab, 200)
            self.rnn = tnn.LSTM(200, 200, 2, dropout=0.2)
            self.decoder = tnn.Linear(200, vocab)

        def forward(self, x, h):
            out, h = self.rnn(self.drop(self.encoder(x)), h)
            return self.decoder(self.drop(out)), h

    torch.manual_seed(0)
    model = Model().train()
    x = torch.randint(0, vocab, (bptt, batch))
    y = torch.randint(0, vocab, (bptt * batch,))
    opt = torch.optim.SGD(model.parameters(), lr=20.0)
    state = {"h": None}

    def step():
        h = state["h"]
        if h is not None:
            h = (h[0].detach(), h[1].detach())
        opt.zero_grad()
        out, h = model(x, h)
        loss = tnn.functional.cross_entropy(out.reshape(-1, vocab), y)
        loss.backward()
        tnn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        state["h"] = h
        return loss.item()

    return step


def main():
    args = parse()
    repeat = args.repeat or (5 if args.quick else 15)
    builders = {"mt": mt_step, "lstm-lm": lm_step}
    print(f"median ms per training step over {repeat} steps (after 2 warm-up steps)")
    print(f"{'model':10} {'backend':8} {'composite':>10} {'fused':>10} {'speed-up':>9}")
    for name in args.models.split(","):
        for dev in args.backends.split(","):
            be = tl.zeros(1, device=dev).backend
            cls = type(be)
            shipped = cls.capabilities
            if not set(FUSED) & shipped:
                print(f"{name:10} {dev:8} (backend has no fused cells)")
                continue
            try:
                cls.capabilities = shipped - set(FUSED)
                before = median_ms(builders[name](dev), repeat)
            finally:
                cls.capabilities = shipped
            after = median_ms(builders[name](dev), repeat)
            print(
                f"{name:10} {dev:8} {before:10.1f} {after:10.1f} {before / after:8.2f}x", flush=True
            )
        if name == "lstm-lm" and torch is not None:
            torch.set_num_threads(1)
            print(
                f"{name:10} {'torch':8} {'':10} {median_ms(torch_lm_step(), repeat):10.1f}  (PyTorch CPU, 1 thread)"
            )
    tl.set_default_device("cpu")


if __name__ == "__main__":
    main()
