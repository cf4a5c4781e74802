"""Policy-gradient reinforcement learning on a contextual bandit (a plain PyTorch program).

Each round a context vector is drawn; the best of the arms depends on the context. A softmax
policy network samples an arm with torch.distributions.Categorical, and REINFORCE with a running
baseline raises the log-probability of arms that paid more than expected.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical


class Policy(nn.Module):
    def __init__(self, n_context, n_arms, hidden):
        super().__init__()
        self.affine1 = nn.Linear(n_context, hidden)
        self.affine2 = nn.Linear(hidden, n_arms)

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arms", type=int, default=4)
    parser.add_argument("--context", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--log-interval", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(543)
    arm_weights = torch.randn(args.context, args.arms)
    policy = Policy(args.context, args.arms, args.hidden)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    eps = torch.finfo(torch.float32).eps
    baseline = 0.0

    for episode in range(args.episodes):
        contexts = torch.randn(args.batch, args.context)
        probs = policy(contexts)
        m = Categorical(probs)
        actions = m.sample()
        payoff = (contexts @ arm_weights).gather(1, actions.unsqueeze(1)).squeeze(1)
        rewards = payoff + 0.1 * torch.randn(args.batch)
        advantage = (rewards - baseline) / (rewards.std() + eps)
        loss = -(m.log_prob(actions) * advantage).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        baseline = 0.9 * baseline + 0.1 * rewards.mean().item()
        if episode % args.log_interval == 0:
            best = (contexts @ arm_weights).max(dim=1).values.mean().item()
            print(
                f"episode {episode}\tavg reward {rewards.mean().item():.3f}\tbest possible {best:.3f}"
                f"\tloss {loss.item():.4f}"
            )


if __name__ == "__main__":
    main()
