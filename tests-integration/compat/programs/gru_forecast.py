"""Time-series forecasting with a GRU (a plain PyTorch program).

Noisy sums of sines are cut into windows; a two-layer GRU reads each window (batch_first) and a
linear head predicts the next value. Mean squared error, Adam, gradient-norm clipping, and a
held-out evaluation of the multi-step autoregressive forecast.
"""

import argparse
import math

import torch
import torch.nn as nn

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"


def make_series(n_series, length, generator):
    t = torch.arange(length, dtype=torch.float32)
    freq = 0.05 + 0.1 * torch.rand(n_series, 1, generator=generator)
    phase = 2 * math.pi * torch.rand(n_series, 1, generator=generator)
    clean = torch.sin(freq * t + phase) + 0.5 * torch.sin(2.3 * freq * t)
    return clean + 0.05 * torch.randn(n_series, length, generator=generator)


def windows(series, width):
    xs, ys = [], []
    for start in range(series.shape[1] - width):
        xs.append(series[:, start : start + width])
        ys.append(series[:, start + width])
    return torch.cat(xs).unsqueeze(-1), torch.cat(ys).unsqueeze(-1)


class Forecaster(nn.Module):
    def __init__(self, hidden, layers):
        super().__init__()
        self.gru = nn.GRU(input_size=1, hidden_size=hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1, :])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--series", type=int, default=16)
    parser.add_argument("--length", type=int, default=120)
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--horizon", type=int, default=10)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    train = make_series(args.series, args.length, g)
    test = make_series(4, args.window + args.horizon, g)
    x, y = windows(train, args.window)
    print(f"{x.shape[0]} training windows of {args.window} steps")

    model = Forecaster(args.hidden, args.layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.MSELoss()

    def train_step(xb, yb):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        return loss

    if args.capture:  # torchlight only; the epoch's shorter last batch runs eagerly
        train_step = torch.jit.capture_step(train_step, on_mismatch="eager")
    for epoch in range(args.epochs):
        order = torch.randperm(x.shape[0], generator=g)
        total, n = 0.0, 0
        for i in range(0, x.shape[0], args.batch_size):
            idx = order[i : i + args.batch_size]
            loss = train_step(x[idx], y[idx])
            total += loss.item() * len(idx)
            n += len(idx)
        print(f"epoch {epoch} loss {total / n:.6f}")

    model.eval()
    with torch.no_grad():
        context = test[:, : args.window].unsqueeze(-1)
        preds = []
        for _ in range(args.horizon):
            nxt = model(context)
            preds.append(nxt)
            context = torch.cat([context[:, 1:, :], nxt.unsqueeze(1)], dim=1)
        forecast = torch.cat(preds, dim=1)
        mse = ((forecast - test[:, args.window :]) ** 2).mean().item()
    print(f"{args.horizon}-step forecast mse {mse:.4f}")

    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
