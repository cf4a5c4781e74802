"""Per-call time of the ops small training programs run most, torchlight beside PyTorch.

Run: ``python tests-integration/benchmarks/bench_ops.py [--repeat 5] [--number 2000] [--only NAME ...]
[--device cpu|numba]`` (or ``nox -s bench``). Each case is one line of PyTorch code, run unchanged on
``torchlight`` and on ``torch`` (the same API), on small tensors where the Python cost of a call is
what a step pays: a layer, a loss, a reduction, the indexing and stacking of a data loader. Prints
µs per call (the median over ``--repeat`` timings of ``--number`` calls) and the ratio; the summary
is the geometric mean and the worst ratio. Single-threaded. PyTorch CPU (``pip install
torch==2.13.0``) is the peer, never a dependency: without it only torchlight's column is printed.

``--calls`` prints instead the Python-level calls (functions and builtins, as ``sys.setprofile``
sees them) of one torchlight call of each case: a count, the same on every run, so that a change
to an op's Python path can be read on a noisy machine (``bench_commits.py BASE -- bench_ops.py
--calls``), as ``bench_calls.py`` does for whole programs.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import sys
import timeit

from thread_pools import default_threads

if __name__ == "__main__":  # the script's own process: one thread per pool, before the imports
    # (not when a test imports this module: numba refuses a thread count changed after launch)
    default_threads(1)

import torchlight as tl  # noqa: E402
import torchlight.nn  # noqa: E402, F401  (tl.nn)

#: name -> builder(m): given the framework module (``torchlight`` or ``torch``), the call to time.
#: Arguments are built once, outside the timed call; ``requires_grad`` where a model's would be.
CASES = {
    "a + b (16x16, grad)": lambda m: _call(
        lambda a, b: a + b, m.ones(16, 16, requires_grad=True), m.ones(16, 16)
    ),
    "x * 2.0 (8x8, grad)": lambda m: _call(lambda x: x * 2.0, m.ones(8, 8, requires_grad=True)),
    "tanh (16x16, grad)": lambda m: _call(m.tanh, m.ones(16, 16, requires_grad=True)),
    "relu (16x32, grad)": lambda m: _call(m.relu, m.ones(16, 32, requires_grad=True)),
    "x.view(-1, 1)": lambda m: _call(lambda x: x.view(-1, 1), m.ones(5)),
    "x.transpose(0, 1)": lambda m: _call(lambda x: x.transpose(0, 1), m.ones(8, 8)),
    "x[:, -1, :]": lambda m: _call(lambda x: x[:, -1, :], m.ones(4, 8, 8)),
    "x[i, j] (0-d int tensors)": lambda m: _call(
        lambda x, i, j: x[i, j], m.ones(5, 5), m.tensor(2), m.tensor(3)
    ),
    "x[2] (int)": lambda m: _call(lambda x: x[2], m.ones(5, 5)),
    "x[3][0][5] = 1 (a one-hot letter)": lambda m: _call(
        lambda x: x[3][0].__setitem__(5, 1), m.zeros(7, 1, 57)
    ),
    "x.item()": lambda m: _call(lambda x: x.item(), m.ones(1)),
    "x[1:11] = ix (int64)": lambda m: _call(
        lambda x, ix: x.__setitem__(slice(1, 11), ix), m.zeros(17, dtype=m.long), m.arange(10)
    ),
    "x[11:] = -1 (int64)": lambda m: _call(
        lambda x: x.__setitem__(slice(11, None), -1), m.zeros(17, dtype=m.long)
    ),
    "zeros(17, dtype=long)": lambda m: _call(lambda: m.zeros(17, dtype=m.long)),
    "tensor(list of 10, long)": lambda m: _call(lambda: m.tensor(list(range(10)), dtype=m.long)),
    "stack 16 x (17,)": lambda m: _call(m.stack, [m.zeros(17, dtype=m.long) for _ in range(16)]),
    "cat 2 x (16, 8), dim 1": lambda m: _call(
        lambda a, b: m.cat([a, b], 1), m.ones(16, 8), m.ones(16, 8)
    ),
    "cat 16 x (32, 16), dim -1 (grad)": lambda m: _call(
        lambda xs: m.cat(xs, -1), [m.ones(32, 16, requires_grad=True) for _ in range(16)]
    ),
    "roll(x, 1, 1) (32x16, long)": lambda m: _call(
        lambda x: m.roll(x, 1, 1), m.zeros(32, 16, dtype=m.long)
    ),
    "unfold 5x5 windows, backward (4x6x12x12)": lambda m: _call(
        lambda x: x.unfold(2, 5, 1).unfold(3, 5, 1).sum().backward(),
        m.ones(4, 6, 12, 12, requires_grad=True),
    ),
    "max_pool2d 2x2, backward (32x6x28x28)": lambda m: _call(
        lambda x: m.nn.functional.max_pool2d(x, 2).sum().backward(),
        m.randn(32, 6, 28, 28, requires_grad=True),
    ),
    "max_pool2d 3x3 stride 2, backward (16x64x16x16)": lambda m: _call(
        lambda x: m.nn.functional.max_pool2d(x, 3, 2).sum().backward(),
        m.randn(16, 64, 16, 16, requires_grad=True),
    ),
    "max_pool2d 2x2, backward (16x16x10x10, LeNet's second pool)": lambda m: _call(
        lambda x: m.nn.functional.max_pool2d(x, 2).sum().backward(),
        m.randn(16, 16, 10, 10, requires_grad=True),
    ),
    "max_pool2d 2x2 of a ReLU, backward (16x6x28x28, LeNet's first pool)": lambda m: _call(
        lambda x: m.nn.functional.max_pool2d(m.relu(x), 2).sum().backward(),
        m.randn(16, 6, 28, 28, requires_grad=True),
    ),
    "avg_pool2d 2x2, backward (32x6x28x28)": lambda m: _call(
        lambda x: m.nn.functional.avg_pool2d(x, 2).sum().backward(),
        m.randn(32, 6, 28, 28, requires_grad=True),
    ),
    "conv2d 6->16 5x5, backward (32x6x14x14)": lambda m: _call(
        lambda x, w: m.nn.functional.conv2d(x, w).sum().backward(),
        m.randn(32, 6, 14, 14, requires_grad=True),
        m.randn(16, 6, 5, 5, requires_grad=True),
    ),
    "conv2d 1->6 5x5, backward of the weight (16x1x32x32, LeNet's first)": lambda m: _call(
        lambda x, w: m.nn.functional.conv2d(x, w).sum().backward(),
        m.randn(16, 1, 32, 32),
        m.randn(6, 1, 5, 5, requires_grad=True),
    ),
    "conv2d 32->64 3x3 pad 1, backward (16x32x16x16)": lambda m: _call(
        lambda x, w: m.nn.functional.conv2d(x, w, padding=1).sum().backward(),
        m.randn(16, 32, 16, 16, requires_grad=True),
        m.randn(64, 32, 3, 3, requires_grad=True),
    ),
    "x[:, t] for 16 steps, backward (32x16x64)": lambda m: _call(
        lambda x: sum(x[:, t] for t in range(16)).sum().backward(),
        m.ones(32, 16, 64, requires_grad=True),
    ),
    "sum(dim=1) (8x8, grad)": lambda m: _call(lambda x: x.sum(1), m.ones(8, 8, requires_grad=True)),
    "mean (8x8, grad)": lambda m: _call(lambda x: x.mean(), m.ones(8, 8, requires_grad=True)),
    "max(x, 1) (5x5)": lambda m: _call(lambda x: m.max(x, 1), m.ones(5, 5)),
    "logsumexp(x, 1) (5x5)": lambda m: _call(lambda x: m.logsumexp(x, 1), m.ones(5, 5)),
    "softmax(-1) (16x27, grad)": lambda m: _call(
        lambda x: m.softmax(x, -1), m.ones(16, 27, requires_grad=True)
    ),
    "Linear(16, 16) (16x16)": lambda m: _call(m.nn.Linear(16, 16), m.ones(16, 16)),
    "Embedding(27, 16) (16x3)": lambda m: _call(
        m.nn.Embedding(27, 16), m.zeros(16, 3, dtype=m.long)
    ),
    "Embedding(28, 16) forward + backward (32x16)": lambda m: _call(
        lambda emb, ix: emb(ix).sum().backward(),
        m.nn.Embedding(28, 16),
        m.zeros(32, 16, dtype=m.long),
    ),
    "Embedding(15, 16) read 9 times, backward (16x9 each, makemore's MLP)": lambda m: _call(
        lambda emb, ixs: m.cat([emb(ix) for ix in ixs], -1).sum().backward(),
        m.nn.Embedding(15, 16),
        [(m.arange(144) * (k + 1) % 15).reshape(16, 9) for k in range(9)],
    ),
    "leaky_relu(0.2), backward (32x32, a GAN's hidden layer)": lambda m: _call(
        lambda x: m.nn.functional.leaky_relu(x, 0.2).sum().backward(),
        m.linspace(-3, 3, 1024).reshape(32, 32).requires_grad_(),
    ),
    "scaled_dot_product_attention, causal, backward (8x2x16x8)": lambda m: _call(
        lambda q: (
            m.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
        ),
        m.linspace(-1, 1, 2048).reshape(8, 2, 16, 8).requires_grad_(),
    ),
    "x.masked_fill(mask, -inf) (16x4x32x32, attention scores)": lambda m: _call(
        lambda x, mask: x.masked_fill(mask, float("-inf")),
        m.ones(16, 4, 32, 32),
        m.ones(32, 32, dtype=m.bool).triu(1),
    ),
    "LayerNorm(32) (16x32, grad)": lambda m: _call(
        m.nn.LayerNorm(32), m.ones(16, 32, requires_grad=True)
    ),
    "cross_entropy (16x27)": lambda m: _call(
        m.nn.functional.cross_entropy,
        m.ones(16, 27, requires_grad=True),
        m.zeros(16, dtype=m.long),
    ),
    "nll_loss (1x18)": lambda m: _call(
        m.nn.functional.nll_loss, m.ones(1, 18, requires_grad=True), m.tensor([3])
    ),
    "cross_entropy, ignore_index=-1, backward (32x27)": lambda m: _call(
        lambda x, y: m.nn.functional.cross_entropy(x, y, ignore_index=-1).backward(),
        m.ones(32, 27, requires_grad=True),
        m.tensor([3, -1] * 16),
    ),
    "nll_loss, backward (1x18)": lambda m: _call(
        lambda x, y: m.nn.functional.nll_loss(x, y).backward(),
        m.ones(1, 18, requires_grad=True),
        m.tensor([3]),
    ),
    "LSTM(5, 2, bidirectional) forward + backward (11x1x5)": lambda m: _call(
        lambda lstm, x: lstm(x)[0].sum().backward(),
        m.nn.LSTM(5, 2, bidirectional=True),
        m.ones(11, 1, 5, requires_grad=True),
    ),
    "mse_loss (8x8, grad)": lambda m: _call(
        m.nn.functional.mse_loss, m.ones(8, 8, requires_grad=True), m.zeros(8, 8)
    ),
    "(a * a + a).sum().backward() (8x8)": lambda m: _call(
        lambda a: (a * a + a).sum().backward(), m.ones(8, 8, requires_grad=True)
    ),
    "MLP step 16-32-27, SGD": lambda m: _mlp_step(m),
    "name classifier step (RNN, 8 letters, 57-128-18)": lambda m: _name_classifier_step(m),
    "x[idx], 64 rows of a 60000x784 dataset": lambda m: _call(
        lambda x, i: x[i], m.zeros(60000, 784), m.arange(64) * 937
    ),
    "x[idx], 256 of 5000 (1-D)": lambda m: _call(
        lambda x, i: x[i], m.zeros(5000), m.arange(256) * 19
    ),
    "x[idx] = v, 64 rows of a 1000000x4 buffer": lambda m: _call(
        lambda x, i, v: x.__setitem__(i, v), m.zeros(1000000, 4), m.arange(64) * 997, m.ones(64, 4)
    ),
    "Adagrad step, 4 tables (200x8, 100x8, 200x1, 100x1)": lambda m: _adagrad_step(m),
    "SGD step, weight decay, 12 params (a BiLSTM-CRF's)": lambda m: _sgd_step(m),
    "clip_grad_norm_, 15 gradients (a one-layer GPT's)": lambda m: _clip(m),
    "CRF forward algorithm, 11 steps, backward (5 tags)": lambda m: _call(
        _crf_forward, m, m.ones(5, 5, requires_grad=True), m.ones(11, 5, requires_grad=True)
    ),
    "row[t] of each of 11 rows, summed, backward (a CRF's gold path)": lambda m: _call(
        _gold_path, m, m.ones(11, 5, requires_grad=True), m.tensor([0, 1, 1, 2, 0, 4] * 2)
    ),
    "i + 16 (0-d int64)": lambda m: _call(lambda i: i + 16, m.tensor(5)),
    "sigmoid (16x16, grad)": lambda m: _call(m.sigmoid, m.ones(16, 16, requires_grad=True)),
    "(1 - z) * h, backward (16x16, a GRU's blend)": lambda m: _call(
        lambda z, h: ((1 - z) * h).sum().backward(),
        m.ones(16, 16, requires_grad=True),
        m.ones(16, 16, requires_grad=True),
    ),
    "cross_entropy, backward (512x65, a GPT's logits)": lambda m: _call(
        lambda x, y: m.nn.functional.cross_entropy(x, y).backward(),
        m.ones(512, 65, requires_grad=True),
        m.arange(512) % 65,
    ),
    "torch.pow(x, 3.0) (16x9x64, a tanh GELU's cube)": lambda m: _call(
        lambda x: m.pow(x, 3.0), m.linspace(-3, 3, 9216).reshape(16, 9, 64)
    ),
    "x ** 4 (2000, a polynomial's term)": lambda m: _call(lambda x: x**4, m.linspace(-3, 3, 2000)),
    "gelu (8x16x64, a GPT's MLP activations)": lambda m: _call(
        m.nn.functional.gelu, m.linspace(-4, 4, 8192).reshape(8, 16, 64)
    ),
    "gelu, backward (8x16x64)": lambda m: _call(
        lambda x, g: m.nn.functional.gelu(x).backward(g),
        m.linspace(-4, 4, 8192).reshape(8, 16, 64).requires_grad_(),
        m.ones(8, 16, 64),
    ),
    "a @ w.T + b (1x89 @ 89x32, an RNN cell's Linear)": lambda m: _call(
        m.nn.Linear(89, 32), m.ones(1, 89)
    ),
    "for i in ix (8 int64 batch starts, nanoGPT's get_batch)": lambda m: _call(
        list, m.arange(8) * 500
    ),
    "embedding of a rolled index, 9 times (16x9, makemore's MLP)": lambda m: _call(
        _makemore_reads,
        m,
        m.nn.Embedding(15, 16),
        m.tensor([[(9 * i + j) % 14 for j in range(9)] for i in range(16)]),  # a loader's batch
    ),
    "randint(0, 24, (16,)) (a batch loop's positions)": lambda m: _call(
        lambda g: m.randint(0, 24, (16,), generator=g), m.Generator().manual_seed(0)
    ),
    "randn(16, 1, 32, 32) (a CNN's batch of noise)": lambda m: _call(
        lambda g: m.randn(16, 1, 32, 32, generator=g), m.Generator().manual_seed(0)
    ),
    "x[i, 0, :, p] += 1 (16x1x32x32, a batch loop's write)": lambda m: _call(
        _add_a_column, m.zeros(16, 1, 32, 32)
    ),
    "softmax(-1) (16x2x9x9, attention scores)": lambda m: _call(
        lambda x: m.softmax(x, -1), m.linspace(-3, 3, 2592).reshape(16, 2, 9, 9)
    ),
    "LayerNorm(16), backward (16x9x16)": lambda m: _call(
        lambda ln, x: ln(x).sum().backward(),
        m.nn.LayerNorm(16),
        m.linspace(-3, 3, 2304).reshape(16, 9, 16).requires_grad_(),
    ),
    "Linear(16, 64), backward (16x9x16, a batch of sequences)": lambda m: _call(
        lambda lin, x: lin(x).sum().backward(),
        m.nn.Linear(16, 64),
        m.linspace(-3, 3, 2304).reshape(16, 9, 16).requires_grad_(),
    ),
    "a @ b (97x1 @ 1x128, an outer product)": lambda m: _call(
        lambda a, b: a @ b, m.ones(97, 1), m.ones(1, 128)
    ),
    "BatchNorm1d(64), train, backward (32x64)": lambda m: _call(
        lambda bn, x: bn(x).sum().backward(),
        m.nn.BatchNorm1d(64),
        m.linspace(-3, 3, 2048).reshape(32, 64).requires_grad_(),
    ),
    "GRU-style cell over 9 steps, backward (16x16, three Linear(32, 16))": lambda m: _call(
        _gru_steps, m, *[m.nn.Linear(32, 16) for _ in range(3)], m.ones(16, 16)
    ),
    "a * b, backward (16x16, both grad)": lambda m: _call(
        lambda a, b: (a * b).sum().backward(),
        m.ones(16, 16, requires_grad=True),
        m.ones(16, 16, requires_grad=True),
    ),
    # a GPT's attention dropout (batch 32, 4 heads, context 128): the mask's draw is the cost
    "rand (2097152)": lambda m: _call(m.rand, 2097152),
    "dropout(p=0.1), training (32x4x128x128)": lambda m: _call(
        lambda x: m.nn.functional.dropout(x, p=0.1), m.ones(32, 4, 128, 128)
    ),
}


def _call(fn, *args):
    return lambda: fn(*args)


def _mlp_step(m):
    """One training step of a small MLP: forward, cross-entropy, backward, SGD update."""
    model = m.nn.Sequential(m.nn.Linear(16, 32), m.nn.Tanh(), m.nn.Linear(32, 27))
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x, y = m.ones(16, 16), m.zeros(16, dtype=m.long)

    def step():
        opt.zero_grad()
        m.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def _name_classifier_step(m):
    """One training step of the compatibility suite's ``name_classifier`` (PyTorch's char-RNN
    tutorial) on one name, written as the program writes it: the one-hot letters, the RNN
    module (``cat``, two ``Linear``, ``tanh``, ``LogSoftmax``) over 8 letters, ``NLLLoss``,
    backward, the written-out SGD update and ``loss.item()``."""
    letters, hidden = 57, 128

    class RNN(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.i2h = m.nn.Linear(letters + hidden, hidden)
            self.i2o = m.nn.Linear(letters + hidden, 18)
            self.softmax = m.nn.LogSoftmax(dim=1)

        def forward(self, x, h):
            combined = m.cat((x, h), 1)
            return self.softmax(self.i2o(combined)), m.tanh(self.i2h(combined))

    rnn, criterion = RNN(), m.nn.NLLLoss()
    positions = [36, 14, 22, 0, 11, 18, 10, 8]  # "Kowalski" in the program's alphabet

    def step():
        line = m.zeros(len(positions), 1, letters)
        for li, k in enumerate(positions):
            line[li][0][k] = 1
        target = m.tensor([3], dtype=m.long)
        h = m.zeros(1, hidden)
        rnn.zero_grad()
        for i in range(line.size()[0]):
            output, h = rnn(line[i], h)
        loss = criterion(output, target)
        loss.backward()
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-0.005)
        return loss.item()

    return step


def _adagrad_step(m):
    """``optimizer.step()`` of Adagrad over a recommender's four embedding tables."""
    params = [m.nn.Parameter(m.zeros(*shape)) for shape in ((200, 8), (100, 8), (200, 1), (100, 1))]
    for p in params:
        p.grad = m.ones(*p.shape)
    return m.optim.Adagrad(params, lr=0.1).step


#: parameter shapes of the compatibility suite's BiLSTM-CRF tagger and one-layer nanoGPT
_TAGGER_SHAPES = [
    (5, 5),
    (20, 5),
    (8, 5),
    (8, 2),
    (8,),
    (8,),
    (8, 5),
    (8, 2),
    (8,),
    (8,),
    (5, 4),
    (5,),
]
_GPT_SHAPES = [(12, 16), (16, 48), (16,), (16,), (48, 16), (16, 16), (16,), (64, 16), (16, 64)] + [
    (16,)
] * 6


def _with_grads(m, shapes):
    params = [m.nn.Parameter(m.zeros(*shape)) for shape in shapes]
    for k, p in enumerate(params):
        p.grad = m.ones(*p.shape) * (0.01 * (k + 1))
    return params


def _sgd_step(m):
    """``optimizer.step()`` of SGD with weight decay over the BiLSTM-CRF tagger's parameters."""
    return m.optim.SGD(_with_grads(m, _TAGGER_SHAPES), lr=0.01, weight_decay=1e-4).step


def _clip(m):
    """``clip_grad_norm_(params, 1.0)`` of the one-layer GPT's gradients (norm below the limit)."""
    params = _with_grads(m, _GPT_SHAPES)
    return lambda: m.nn.utils.clip_grad_norm_(params, 1.0)


def _gru_steps(m, to_z, to_r, to_hbar, x):
    """makemore's GRU cell (three linear layers on [x, h]) over 9 steps, then the backward: the
    layers' weights get nine gradients each."""
    h = m.zeros(16, 16)
    for _ in range(9):
        xh = m.cat([x, h], dim=1)
        r = m.sigmoid(to_r(xh))
        hbar = m.tanh(to_hbar(m.cat([x, r * h], dim=1)))
        z = m.sigmoid(to_z(xh))
        h = (1 - z) * h + z * hbar
    h.sum().backward()


def _add_a_column(x):
    """lenet_synthetic's batch loop: a line drawn into one image by an in-place add on a view
    (Python's ``x[idx] += v`` is a read, an in-place add and a write back)."""
    x[3, 0, :, 5] += 1.0


def _makemore_reads(m, wte, idx):
    """makemore's MLP context: read the table, roll the index, write the blank token, nine
    times (no backward)."""
    for _ in range(9):
        wte(idx)
        idx = m.roll(idx, 1, 1)
        idx[:, 0] = 14


def _crf_forward(m, trans, feats):
    """The BiLSTM-CRF program's forward algorithm (log Z), then its backward."""
    alpha = m.zeros(1, 5)
    for feat in feats:
        alpha = m.logsumexp(alpha + trans + feat.view(-1, 1), dim=1).view(1, -1)
    m.logsumexp(alpha, dim=1).sum().backward()


def _gold_path(m, feats, tags):
    """One element of each row, summed (the program's gold-path score), then the backward."""
    score = m.zeros(1)
    for i, feat in enumerate(feats):
        score = score + feat[tags[i]]
    score.sum().backward()


def per_call_us(fn, number: int, repeat: int) -> float:
    """Median over ``repeat`` timings of ``number`` calls, in µs per call (after a warm-up)."""
    for _ in range(20):
        fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def python_calls(fn) -> int:
    """Python-level calls (functions and builtins) of one call of ``fn``, after a warm-up."""
    for _ in range(3):
        fn()
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call" or event == "c_call":
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count - 1  # the setprofile(None) that ends the count


def geomean(values: list) -> float | None:
    """exp(mean(log v)): the mean of ratios that treats 2x and 0.5x alike."""
    kept = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else None


def run(names, number: int, repeat: int, device: str) -> list:
    """Rows ``{"case", "torchlight_us", "torch_us", "ratio"}`` for the cases ``names``."""
    torch = None
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(1)
    rows = []
    with tl.device(device):
        for name in names:
            ours = per_call_us(CASES[name](tl), number, repeat)
            theirs = per_call_us(CASES[name](torch), number, repeat) if torch else None
            ratio = ours / theirs if theirs else None
            rows.append({"case": name, "torchlight_us": ours, "torch_us": theirs, "ratio": ratio})
    return rows


def table(rows: list) -> str:
    """The markdown table of ``rows`` and its summary line."""
    lines = ["| case | µs torchlight | µs PyTorch | torchlight / PyTorch |", "|---|---:|---:|---:|"]
    for r in rows:
        theirs = "—" if r["torch_us"] is None else f"{r['torch_us']:.2f}"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}"
        lines.append(f"| {r['case']} | {r['torchlight_us']:.2f} | {theirs} | {ratio} |")
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    if ratios:
        worst = max(rows, key=lambda r: r["ratio"] or 0)
        lines.append("")
        lines.append(
            f"geometric mean of the ratios: {geomean(ratios):.2f}; "
            f"worst: {worst['ratio']:.2f} ({worst['case']})"
        )
    else:
        lines.append("\nPyTorch is not importable: its column is left out")
    return "\n".join(lines)


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="timings per case (the median is kept)")
    p.add_argument("--number", type=int, default=2000, help="calls per timing")
    p.add_argument("--only", nargs="+", metavar="NAME", help="these cases only")
    p.add_argument("--device", default="cpu", help="torchlight's device (cpu, numba, ...)")
    p.add_argument(
        "--calls", action="store_true", help="count torchlight's Python calls instead of timing"
    )
    args = p.parse_args(argv)
    names = args.only or list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {sorted(CASES)}")
    if args.calls:
        with tl.device(args.device):
            rows = [{"case": name, "calls": python_calls(CASES[name](tl))} for name in names]
        print("| case | Python calls |\n|---|---:|")
        print("\n".join(f"| {r['case']} | {r['calls']} |" for r in rows))
        return rows
    rows = run(names, args.number, args.repeat, args.device)
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
