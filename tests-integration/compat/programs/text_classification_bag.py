"""Text classification with an EmbeddingBag and a multi-worker DataLoader (a plain PyTorch program).

Reads ``label<TAB>text`` lines, builds a word vocabulary, and feeds batches through a
``Dataset`` defined in this script and a ``collate_fn`` that concatenates the token ids with
their offsets, the input ``nn.EmbeddingBag`` takes. ``--workers N`` loads batches in N worker
processes. SGD with a StepLR schedule and gradient clipping; accuracy on a held-out split.
"""

import argparse
import re
import time
from collections import Counter

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.dataset import random_split

TOKEN_RE = re.compile(r"[a-z']+")


def tokenize(text):
    return TOKEN_RE.findall(text.lower())


class ReviewDataset(Dataset):
    def __init__(self, path):
        self.samples = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    label, text = line.rstrip("\n").split("\t", 1)
                    self.samples.append((int(label), text))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, idx):
        return self.samples[idx]


class Vocab:
    def __init__(self, texts, min_freq=1):
        counts = Counter(tok for text in texts for tok in tokenize(text))
        self.itos = ["<unk>"] + sorted(t for t, c in counts.items() if c >= min_freq)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def __call__(self, tokens):
        return [self.stoi.get(t, 0) for t in tokens]


class Collate:
    def __init__(self, vocab):
        self.vocab = vocab

    def __call__(self, batch):
        labels, ids, offsets = [], [], [0]
        for label, text in batch:
            labels.append(label)
            processed = torch.tensor(self.vocab(tokenize(text)), dtype=torch.int64)
            ids.append(processed)
            offsets.append(processed.size(0))
        labels = torch.tensor(labels, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        return labels, torch.cat(ids), offsets


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


def evaluate(model, loader):
    model.eval()
    correct, count = 0, 0
    with torch.no_grad():
        for label, text, offsets in loader:
            correct += (model(text, offsets).argmax(1) == label).sum().item()
            count += label.size(0)
    return correct / count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--embed-dim", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(0)
    dataset = ReviewDataset(args.data)
    vocab = Vocab(text for _, text in dataset)
    num_class = len({label for label, _ in dataset})
    n_test = len(dataset) // 5
    train_set, test_set = random_split(dataset, [len(dataset) - n_test, n_test])
    collate = Collate(vocab)
    train_loader = DataLoader(
        train_set,
        batch_size=args.batch_size,
        shuffle=True,
        collate_fn=collate,
        num_workers=args.workers,
    )
    test_loader = DataLoader(
        test_set, batch_size=args.batch_size, collate_fn=collate, num_workers=args.workers
    )
    print(
        f"{len(dataset)} reviews, vocabulary of {len(vocab)}, {num_class} classes, "
        f"{args.workers} workers"
    )

    model = TextClassificationModel(len(vocab), args.embed_dim, num_class)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.9)
    for epoch in range(1, args.epochs + 1):
        start = time.time()
        model.train()
        total_loss, batches = 0.0, 0
        for label, text, offsets in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(text, offsets), label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            total_loss += loss.item()
            batches += 1
        scheduler.step()
        accuracy = evaluate(model, test_loader)
        print(
            f"| epoch {epoch:3d} | time {time.time() - start:5.2f}s | loss {total_loss / batches:.6f} "
            f"| test accuracy {accuracy:8.3f}"
        )


if __name__ == "__main__":
    main()
