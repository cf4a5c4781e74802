"""Learning word embeddings with an N-gram language model (a plain PyTorch program).

Each word is predicted from the CONTEXT_SIZE words before it: their embeddings are concatenated,
passed through a hidden layer, and scored against the vocabulary with a log-softmax.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"

TEXT = """When forty winters shall besiege thy brow,
And dig deep trenches in thy beauty's field,
Thy youth's proud livery so gazed on now,
Will be a totter'd weed of small worth held:
Then being asked, where all thy beauty lies,
Where all the treasure of thy lusty days;
To say, within thine own deep sunken eyes,
Were an all-eating shame, and thriftless praise.""".split()


class NGramLanguageModeler(nn.Module):
    def __init__(self, vocab_size, embedding_dim, context_size, hidden):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.linear1 = nn.Linear(context_size * embedding_dim, hidden)
        self.linear2 = nn.Linear(hidden, vocab_size)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).view((1, -1))
        out = F.relu(self.linear1(embeds))
        out = self.linear2(out)
        return F.log_softmax(out, dim=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--context-size", type=int, default=2)
    parser.add_argument("--embedding-dim", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument(
        "--limit", type=int, default=0, help="use only the first N n-grams (0: all)"
    )
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(1)
    ngrams = [
        ([TEXT[i - j - 1] for j in range(args.context_size)], TEXT[i])
        for i in range(args.context_size, len(TEXT))
    ]
    if args.limit:
        ngrams = ngrams[: args.limit]
    vocab = set(TEXT)
    word_to_ix = {word: i for i, word in enumerate(sorted(vocab))}

    losses = []
    loss_function = nn.NLLLoss()
    model = NGramLanguageModeler(len(vocab), args.embedding_dim, args.context_size, args.hidden)
    optimizer = optim.SGD(model.parameters(), lr=0.001)

    def train_step(context_idxs, target):
        model.zero_grad()
        log_probs = model(context_idxs)
        loss = loss_function(log_probs, target)
        loss.backward()
        optimizer.step()
        return loss

    if args.capture:  # torchlight only: replay the step's kernel calls (tl.jit.capture_step)
        train_step = torch.jit.capture_step(train_step)
    for epoch in range(args.epochs):
        total_loss = 0
        for context, target in ngrams:
            context_idxs = torch.tensor([word_to_ix[w] for w in context], dtype=torch.long)
            loss = train_step(context_idxs, torch.tensor([word_to_ix[target]], dtype=torch.long))
            total_loss += loss.item()
        losses.append(total_loss)
        print(f"epoch {epoch} loss {total_loss / len(ngrams):.6f}")

    print(
        "embedding of 'beauty':",
        model.embeddings.weight[word_to_ix["beauty"]].detach().tolist()[:3],
    )

    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
