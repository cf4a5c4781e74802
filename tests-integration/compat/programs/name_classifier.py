"""Classifying surnames by language with a character-level RNN (a plain PyTorch program).

Reads ``<data-dir>/names/<Language>.txt`` (one name per line), turns each name into a sequence of
one-hot letters and trains a hand-written recurrent cell (input + hidden -> hidden, -> output)
on randomly drawn examples.
"""

import argparse
import glob
import math
import os
import random
import string
import time
import unicodedata

import torch
import torch.nn as nn

CAPTURE_HELP = (
    "torchlight only: capture the training step once per name length and replay it "
    "(tl.jit.capture_step)"
)
ALL_LETTERS = string.ascii_letters + " .,;'"
N_LETTERS = len(ALL_LETTERS)


def unicode_to_ascii(s):
    return "".join(
        c
        for c in unicodedata.normalize("NFD", s)
        if unicodedata.category(c) != "Mn" and c in ALL_LETTERS
    )


def read_lines(filename):
    with open(filename, encoding="utf-8") as f:
        return [unicode_to_ascii(line.strip()) for line in f if line.strip()]


def line_to_tensor(line):
    tensor = torch.zeros(len(line), 1, N_LETTERS)
    for li, letter in enumerate(line):
        tensor[li][0][ALL_LETTERS.find(letter)] = 1
    return tensor


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = torch.tanh(self.i2h(combined))
        output = self.softmax(self.i2o(combined))
        return output, hidden

    def init_hidden(self):
        return torch.zeros(1, self.hidden_size)


def time_since(since):
    s = time.time() - since
    return f"{math.floor(s / 60)}m {s - 60 * math.floor(s / 60):.0f}s"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--iters", type=int, default=5000)
    parser.add_argument("--print-every", type=int, default=500)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    category_lines = {}
    all_categories = []
    for filename in sorted(glob.glob(os.path.join(args.data_dir, "names", "*.txt"))):
        category = os.path.splitext(os.path.basename(filename))[0]
        all_categories.append(category)
        category_lines[category] = read_lines(filename)
    n_categories = len(all_categories)
    if n_categories == 0:
        raise RuntimeError(f"no data found under {args.data_dir}/names/")
    print(f"{n_categories} categories:", all_categories)

    rnn = RNN(N_LETTERS, args.hidden, n_categories)
    criterion = nn.NLLLoss()

    def random_training_example():
        category = random.choice(all_categories)
        line = random.choice(category_lines[category])
        category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
        return category, line, category_tensor, line_to_tensor(line)

    def train(category_tensor, line_tensor):
        hidden = rnn.init_hidden()
        rnn.zero_grad()
        for i in range(line_tensor.size()[0]):
            output, hidden = rnn(line_tensor[i], hidden)
        loss = criterion(output, category_tensor)
        loss.backward()
        # plain SGD, written out
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-args.lr)
        return output, loss

    if args.capture:  # torchlight only: one capture per name length
        train = torch.jit.capture_step(train, on_mismatch="capture", max_captures=32)

    start = time.time()
    current_loss = 0.0
    for it in range(1, args.iters + 1):
        category, line, category_tensor, line_tensor = random_training_example()
        output, loss = train(category_tensor, line_tensor)
        current_loss += loss.item()
        if it % args.print_every == 0:
            guess = all_categories[output.topk(1)[1][0].item()]
            mark = "ok" if guess == category else f"wrong ({category})"
            print(
                f"{it} {it / args.iters * 100:.0f}% ({time_since(start)}) "
                f"loss {current_loss / args.print_every:.4f} {line} / {guess} {mark}"
            )
            current_loss = 0.0
    if args.capture:
        print(f"training step: {train.state}, {train.n_captures} shapes captured")


if __name__ == "__main__":
    main()
