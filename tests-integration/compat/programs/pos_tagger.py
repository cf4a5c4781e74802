"""Part-of-speech tagging with an LSTM over word embeddings (a plain PyTorch program).

A tiny hand-tagged corpus, one sentence per step: embed the words, run an LSTM over the
sentence, map each hidden state to tag scores and minimise the negative log-likelihood.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

CAPTURE_HELP = (
    "torchlight only: capture the training step once per sentence length and replay it "
    "(tl.jit.capture_step)"
)
TRAINING_DATA = [
    ("the dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("everybody read that book".split(), ["NN", "V", "DET", "NN"]),
    ("a cat saw the dog".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("the children ate an apple".split(), ["DET", "NN", "V", "DET", "NN"]),
]
TAG_TO_IX = {"DET": 0, "NN": 1, "V": 2}


def prepare_sequence(seq, to_ix):
    return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)


class LSTMTagger(nn.Module):
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        return F.log_softmax(tag_space, dim=1)


def main():
    parser = argparse.ArgumentParser(description="LSTM part-of-speech tagger")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--embedding-dim", type=int, default=6)
    parser.add_argument("--hidden-dim", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    word_to_ix = {}
    for sent, _ in TRAINING_DATA:
        for word in sent:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)

    model = LSTMTagger(args.embedding_dim, args.hidden_dim, len(word_to_ix), len(TAG_TO_IX))
    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr)

    def train_step(sentence_in, targets):
        model.zero_grad()
        tag_scores = model(sentence_in)
        loss = loss_function(tag_scores, targets)
        loss.backward()
        optimizer.step()
        return loss

    if args.capture:  # torchlight only: one capture per sentence length (two here)
        train_step = torch.jit.capture_step(train_step, on_mismatch="capture")
    for epoch in range(args.epochs):
        total = 0.0
        for sentence, tags in TRAINING_DATA:
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = prepare_sequence(tags, TAG_TO_IX)
            loss = train_step(sentence_in, targets)
            total += loss.item()
        print(f"epoch {epoch} loss {total / len(TRAINING_DATA):.6f}")

    with torch.no_grad():
        inputs = prepare_sequence(TRAINING_DATA[0][0], word_to_ix)
        predicted = model(inputs).argmax(dim=1).tolist()
    ix_to_tag = {v: k for k, v in TAG_TO_IX.items()}
    print("predicted:", [ix_to_tag[i] for i in predicted])
    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_captures} shapes captured")


if __name__ == "__main__":
    main()
