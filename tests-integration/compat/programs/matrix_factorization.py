"""A recommender: matrix factorisation of user-item ratings (a plain PyTorch program).

Ratings are generated from hidden low-rank user and item factors plus noise. The model learns
user and item embeddings and biases so that dot(user, item) + biases predicts the rating; the
loss is the mean squared error, optimised with Adagrad, batches drawn with torch.randperm.
"""

import argparse

import torch
import torch.nn as nn

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"


class MatrixFactorization(nn.Module):
    def __init__(self, n_users, n_items, n_factors):
        super().__init__()
        self.user_factors = nn.Embedding(n_users, n_factors)
        self.item_factors = nn.Embedding(n_items, n_factors)
        self.user_bias = nn.Embedding(n_users, 1)
        self.item_bias = nn.Embedding(n_items, 1)
        nn.init.normal_(self.user_factors.weight, std=0.1)
        nn.init.normal_(self.item_factors.weight, std=0.1)
        nn.init.zeros_(self.user_bias.weight)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, user, item):
        dot = (self.user_factors(user) * self.item_factors(item)).sum(dim=1)
        return dot + self.user_bias(user).squeeze(1) + self.item_bias(item).squeeze(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--ratings", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(0)
    true_u = torch.randn(args.users, args.rank)
    true_i = torch.randn(args.items, args.rank)
    users = torch.randint(0, args.users, (args.ratings,))
    items = torch.randint(0, args.items, (args.ratings,))
    ratings = (true_u[users] * true_i[items]).sum(1) + 0.1 * torch.randn(args.ratings)

    model = MatrixFactorization(args.users, args.items, args.rank * 2)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    def train_step(user, item, rating):
        prediction = model(user, item)
        loss = loss_fn(prediction, rating)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    if args.capture:  # torchlight only; the epoch's shorter last batch runs eagerly
        train_step = torch.jit.capture_step(train_step, on_mismatch="eager")
    for epoch in range(args.epochs):
        perm = torch.randperm(args.ratings)
        total, batches = 0.0, 0
        for start in range(0, args.ratings, args.batch_size):
            idx = perm[start : start + args.batch_size]
            loss = train_step(users[idx], items[idx], ratings[idx])
            total += loss.item()
            batches += 1
        print(f"epoch {epoch} loss {total / batches:.6f}")

    with torch.no_grad():
        rmse = torch.sqrt(loss_fn(model(users, items), ratings)).item()
    print(f"train RMSE {rmse:.4f}")

    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
