"""Node classification with a two-layer graph convolutional network (a plain PyTorch program).

The graph is a stochastic block model: nodes in the same community are linked with probability
p_in, others with p_out, and node features are noisy community indicators. The GCN propagates
with the symmetrically normalised adjacency D^-1/2 (A + I) D^-1/2 and learns from a few
labelled nodes per community (boolean masks); accuracy is reported on the rest.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def stochastic_block_model(n_per, n_blocks, p_in, p_out, n_features, generator):
    n = n_per * n_blocks
    labels = torch.arange(n_blocks).repeat_interleave(n_per)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    probs = torch.where(same, torch.full((n, n), p_in), torch.full((n, n), p_out))
    upper = torch.triu((torch.rand(n, n, generator=generator) < probs).float(), diagonal=1)
    adj = upper + upper.t()
    features = F.one_hot(labels, n_blocks).float() @ torch.randn(
        n_blocks, n_features, generator=generator
    )
    features = features + 2.0 * torch.randn(n, n_features, generator=generator)
    return adj, features, labels


def normalize_adjacency(adj):
    adj = adj + torch.eye(adj.shape[0])
    d_inv_sqrt = adj.sum(dim=1).pow(-0.5)
    return d_inv_sqrt.unsqueeze(1) * adj * d_inv_sqrt.unsqueeze(0)


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, adj):
        return adj @ (x @ self.weight) + self.bias


class GCN(nn.Module):
    def __init__(self, n_features, n_hidden, n_classes, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(n_features, n_hidden)
        self.gc2 = GraphConvolution(n_hidden, n_classes)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes-per-block", type=int, default=60)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--labelled", type=int, default=5, help="labelled nodes per block")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    adj, features, labels = stochastic_block_model(
        args.nodes_per_block, args.blocks, 0.2, 0.02, args.features, g
    )
    adj = normalize_adjacency(adj)
    train_mask = torch.zeros(len(labels), dtype=torch.bool)
    for b in range(args.blocks):
        train_mask[b * args.nodes_per_block : b * args.nodes_per_block + args.labelled] = True
    test_mask = ~train_mask
    print(f"{len(labels)} nodes, {int(train_mask.sum())} labelled")

    model = GCN(args.features, args.hidden, args.blocks, dropout=0.5)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss = F.nll_loss(output[train_mask], labels[train_mask])
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.6f}")

    model.eval()
    with torch.no_grad():
        pred = model(features, adj).argmax(dim=1)
        acc = (pred[test_mask] == labels[test_mask]).float().mean()
    print(f"test accuracy {acc.item():.3f}")


if __name__ == "__main__":
    main()
