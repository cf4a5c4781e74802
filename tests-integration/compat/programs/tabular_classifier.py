"""Tabular classification with an MLP, a DataLoader and a learning-rate schedule (a plain PyTorch program).

Reads a CSV of numeric features and an integer label (the last column), standardises the
features, splits train/validation, trains an MLP with batch norm and dropout using AdamW and a
StepLR schedule, keeps the best validation checkpoint with ``torch.save(model.state_dict())``
and reloads it for the final evaluation.
"""

import argparse
import csv
import os

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, random_split

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"


def load_csv(path):
    with open(path, newline="") as f:
        rows = [row for row in csv.reader(f) if row and not row[0].startswith("#")]
    header, rows = rows[0], rows[1:]
    data = np.array(rows, dtype=np.float32)
    return header, data[:, :-1], data[:, -1].astype(np.int64)


class MLP(nn.Module):
    def __init__(self, n_in, n_hidden, n_classes, p_drop):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_in, n_hidden),
            nn.BatchNorm1d(n_hidden),
            nn.ReLU(),
            nn.Dropout(p_drop),
            nn.Linear(n_hidden, n_hidden),
            nn.ReLU(),
            nn.Linear(n_hidden, n_classes),
        )

    def forward(self, x):
        return self.net(x)


def evaluate(model, loader, criterion, device):
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss_sum += criterion(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            total += len(y)
    return loss_sum / total, correct / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--out", default="best.pt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    header, features, labels = load_csv(args.csv)
    mean, std = features.mean(axis=0), features.std(axis=0) + 1e-6
    x = torch.from_numpy((features - mean) / std)
    y = torch.from_numpy(labels)
    n_classes = int(y.max().item()) + 1
    print(f"{len(y)} rows, {x.shape[1]} features ({', '.join(header[:-1])}), {n_classes} classes")

    dataset = TensorDataset(x, y)
    n_val = max(1, len(dataset) // 5)
    train_set, val_set = random_split(
        dataset, [len(dataset) - n_val, n_val], generator=torch.Generator().manual_seed(args.seed)
    )
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=256)

    model = MLP(x.shape[1], args.hidden, n_classes, args.dropout).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(
        optimizer, step_size=max(1, args.epochs // 3), gamma=0.5
    )

    def train_step(xb, yb):
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        return loss

    if args.capture:  # torchlight only: replay the step's kernel calls (tl.jit.capture_step)
        train_step = torch.jit.capture_step(train_step)
    best = float("inf")
    for epoch in range(args.epochs):
        model.train()
        running = 0.0
        for xb, yb in train_loader:
            loss = train_step(xb.to(device), yb.to(device))
            running += loss.item()
        scheduler.step()
        val_loss, val_acc = evaluate(model, val_loader, criterion, device)
        print(
            f"epoch {epoch} loss {running / len(train_loader):.6f} val_loss {val_loss:.4f} "
            f"val_acc {val_acc:.3f} lr {scheduler.get_last_lr()[0]:.5f}"
        )
        if val_loss < best:
            best = val_loss
            torch.save(model.state_dict(), args.out)

    model.load_state_dict(torch.load(args.out))
    val_loss, val_acc = evaluate(model, val_loader, criterion, device)
    print(
        f"best checkpoint: val_loss {val_loss:.4f} val_acc {val_acc:.3f} ({os.path.getsize(args.out)} bytes)"
    )
    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
