"""Named-entity tagging with a bidirectional LSTM and a linear-chain CRF (a plain PyTorch program).

The LSTM gives per-token emission scores; a learned transition matrix scores tag pairs. The loss
is the CRF negative log-likelihood, log Z (forward algorithm, a logsumexp over previous tags)
minus the score of the gold path; decoding is Viterbi.
"""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim

START_TAG = "<START>"
STOP_TAG = "<STOP>"


def argmax(vec):
    _, idx = torch.max(vec, 1)
    return idx.item()


def prepare_sequence(seq, to_ix):
    return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)


class BiLSTM_CRF(nn.Module):
    def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)
        self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
        # transitions[i, j]: the score of moving *to* tag i *from* tag j
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
        with torch.no_grad():
            self.transitions[tag_to_ix[START_TAG], :] = -10000
            self.transitions[:, tag_to_ix[STOP_TAG]] = -10000

    def _forward_alg(self, feats):
        init_alphas = torch.full((1, self.tagset_size), -10000.0)
        init_alphas[0][self.tag_to_ix[START_TAG]] = 0.0
        forward_var = init_alphas
        for feat in feats:
            # scores[next, prev] = alpha[prev] + transition(prev -> next) + emission(next)
            scores = forward_var + self.transitions + feat.view(-1, 1)
            forward_var = torch.logsumexp(scores, dim=1).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        return torch.logsumexp(terminal_var, dim=1)[0]

    def _get_lstm_features(self, sentence):
        embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
        lstm_out, _ = self.lstm(embeds)
        lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
        return self.hidden2tag(lstm_out)

    def _score_sentence(self, feats, tags):
        score = torch.zeros(1)
        tags = torch.cat([torch.tensor([self.tag_to_ix[START_TAG]], dtype=torch.long), tags])
        for i, feat in enumerate(feats):
            score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
        score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
        return score

    def _viterbi_decode(self, feats):
        backpointers = []
        init_vvars = torch.full((1, self.tagset_size), -10000.0)
        init_vvars[0][self.tag_to_ix[START_TAG]] = 0
        forward_var = init_vvars
        for feat in feats:
            next_tag_var = forward_var + self.transitions  # [next, prev]
            viterbivars_t, bptrs_t = torch.max(next_tag_var, dim=1)
            backpointers.append(bptrs_t.tolist())
            forward_var = (viterbivars_t + feat).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        best_tag_id = argmax(terminal_var)
        path_score = terminal_var[0][best_tag_id]
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        start = best_path.pop()
        assert start == self.tag_to_ix[START_TAG]
        best_path.reverse()
        return path_score, best_path

    def neg_log_likelihood(self, sentence, tags):
        feats = self._get_lstm_features(sentence)
        forward_score = self._forward_alg(feats)
        gold_score = self._score_sentence(feats, tags)
        return (forward_score - gold_score).sum()

    def forward(self, sentence):
        lstm_feats = self._get_lstm_features(sentence)
        return self._viterbi_decode(lstm_feats)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--embedding-dim", type=int, default=5)
    parser.add_argument("--hidden-dim", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(1)
    training_data = [
        (
            "the wall street journal reported today that apple corporation made money".split(),
            "B I I I O O O B I O O".split(),
        ),
        ("georgia tech is a university in georgia".split(), "B I O O O O B".split()),
    ]
    word_to_ix = {}
    for sentence, _ in training_data:
        for word in sentence:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}

    model = BiLSTM_CRF(len(word_to_ix), tag_to_ix, args.embedding_dim, args.hidden_dim)
    optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)

    with torch.no_grad():
        print("before:", model(prepare_sequence(training_data[0][0], word_to_ix))[1])

    for epoch in range(args.epochs):
        total = 0.0
        for sentence, tags in training_data:
            model.zero_grad()
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long)
            loss = model.neg_log_likelihood(sentence_in, targets)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} loss {total / len(training_data):.6f}")

    with torch.no_grad():
        score, path = model(prepare_sequence(training_data[0][0], word_to_ix))
        print(f"after: score {score.item():.4f} path {path}")


if __name__ == "__main__":
    main()
