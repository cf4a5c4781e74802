"""Logistic-regression bag-of-words classifier (a plain PyTorch program).

Sentences become word-count vectors; one affine map and a log-softmax give the language.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"

DATA = [
    ("me gusta comer en la cafeteria".split(), "SPANISH"),
    ("Give it to me".split(), "ENGLISH"),
    ("No creo que sea una buena idea".split(), "SPANISH"),
    ("No it is not a good idea to get lost at sea".split(), "ENGLISH"),
]
TEST_DATA = [
    ("Yo creo que si".split(), "SPANISH"),
    ("it is lost on me".split(), "ENGLISH"),
]
LABEL_TO_IX = {"SPANISH": 0, "ENGLISH": 1}


class BoWClassifier(nn.Module):
    def __init__(self, num_labels, vocab_size):
        super().__init__()
        self.linear = nn.Linear(vocab_size, num_labels)

    def forward(self, bow_vec):
        return F.log_softmax(self.linear(bow_vec), dim=1)


def make_bow_vector(sentence, word_to_ix):
    vec = torch.zeros(len(word_to_ix))
    for word in sentence:
        vec[word_to_ix[word]] += 1
    return vec.view(1, -1)


def make_target(label, label_to_ix):
    return torch.LongTensor([label_to_ix[label]])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(1)
    word_to_ix = {}
    for sent, _ in DATA + TEST_DATA:
        for word in sent:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)

    model = BoWClassifier(len(LABEL_TO_IX), len(word_to_ix))
    for param in model.parameters():
        print(param.shape)

    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)

    def train_step(bow_vec, target):
        model.zero_grad()
        log_probs = model(bow_vec)
        loss = loss_function(log_probs, target)
        loss.backward()
        optimizer.step()
        return loss

    if args.capture:  # torchlight only: replay the step's kernel calls (tl.jit.capture_step)
        train_step = torch.jit.capture_step(train_step)
    for epoch in range(args.epochs):
        total = 0.0
        for instance, label in DATA:
            bow_vec = make_bow_vector(instance, word_to_ix)
            loss = train_step(bow_vec, make_target(label, LABEL_TO_IX))
            total += loss.item()
        print(f"epoch {epoch} loss {total / len(DATA):.6f}")

    with torch.no_grad():
        correct = 0
        for instance, label in TEST_DATA:
            log_probs = model(make_bow_vector(instance, word_to_ix))
            correct += int(torch.argmax(log_probs, dim=1).item() == LABEL_TO_IX[label])
    print(f"test accuracy {correct}/{len(TEST_DATA)}")
    print("weight of 'creo':", model.linear.weight[:, word_to_ix["creo"]])

    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
