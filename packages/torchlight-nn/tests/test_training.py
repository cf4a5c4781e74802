"""Integration: an MLP learns a 2-D two-arm spiral and XOR; a small CNN overfits a batch.

The optimizer is a few lines of Adam written inline, so this test depends on nothing but
``torchlight.nn`` (``torchlight.optim`` has its own tests).
"""

import numpy as np

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


class Adam:
    """Adam (Kingma & Ba) with bias correction, enough for these tests."""

    def __init__(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.betas, self.eps = list(params), lr, betas, eps
        self.m = [np.zeros(p.shape) for p in self.params]
        self.v = [np.zeros(p.shape) for p in self.params]
        self.t = 0

    def step(self):
        self.t += 1
        b1, b2 = self.betas
        with tl.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                g = p.grad.to_numpy()
                m *= b1
                m += (1 - b1) * g
                v *= b2
                v += (1 - b2) * g * g
                update = (
                    self.lr * (m / (1 - b1**self.t)) / (np.sqrt(v / (1 - b2**self.t)) + self.eps)
                )
                p.sub_(tl.tensor(update, dtype=p.dtype))


def spiral(n_per_class=100, seed=0):
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(2):
        r = np.linspace(0.15, 1.0, n_per_class)
        theta = (
            np.linspace(0, 3 * np.pi, n_per_class) + c * np.pi + rng.normal(0, 0.08, n_per_class)
        )
        xs.append(np.stack([r * np.cos(theta), r * np.sin(theta)], 1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


def train(model, x, y, steps, lr):
    opt = Adam(model.parameters(), lr=lr)
    X, Y = tl.tensor(x), tl.tensor(y)
    for _ in range(steps):
        model.zero_grad()
        loss = F.cross_entropy(model(X), Y)
        loss.backward()
        opt.step()
    with tl.no_grad():
        pred = model.eval()(X).argmax(1).numpy()
    return (pred == y).mean(), loss.item()


def test_mlp_learns_spiral():
    tl.manual_seed(0)
    x, y = spiral()
    model = nn.Sequential(
        nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2)
    )
    acc, loss = train(model, x, y, steps=400, lr=0.01)
    assert acc > 0.95, (acc, loss)


def test_mlp_learns_xor():
    tl.manual_seed(1)
    x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
    y = np.array([0, 1, 1, 0])
    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    acc, loss = train(model, x, y, steps=200, lr=0.05)
    assert acc == 1.0 and loss < 0.05


def test_small_cnn_overfits_a_batch():
    tl.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, 16)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1, groups=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.1),
        nn.Linear(32, 4),
    )
    acc, loss = train(model, x, y, steps=60, lr=0.02)
    assert acc == 1.0, (acc, loss)


def test_gru_learns_to_sum_a_sequence():
    tl.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (32, 5, 1)).astype(np.float32)
    target = x.sum(1)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(1, 16, batch_first=True)
            self.out = nn.Linear(16, 1)

        def forward(self, x):
            return self.out(self.rnn(x)[1][-1])

    model = Model()
    opt = Adam(model.parameters(), lr=0.02)
    X, T = tl.tensor(x), tl.tensor(target)
    first = None
    for _ in range(80):
        model.zero_grad()
        loss = F.mse_loss(model(X), T)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.05 * first
