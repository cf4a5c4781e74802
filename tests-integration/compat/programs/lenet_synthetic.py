"""LeNet-style convolutional network on synthetic images (a plain PyTorch program).

The images are 1x32x32 noise with a bright bar that is either horizontal or vertical; the
network learns which. Conv2d, max-pooling, flatten, dropout, cross-entropy and Adam.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 2)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout(F.relu(self.fc2(x)))
        return self.fc3(x)


def make_batch(n, generator):
    images = 0.1 * torch.randn(n, 1, 32, 32, generator=generator)
    labels = torch.randint(0, 2, (n,), generator=generator)
    pos = torch.randint(4, 28, (n,), generator=generator)
    for i in range(n):
        p = int(pos[i])
        if labels[i].item() == 0:
            images[i, 0, p, :] += 1.0
        else:
            images[i, 0, :, p] += 1.0
    return images, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    net = Net()
    print(net)
    params = list(net.parameters())
    print(len(params), params[0].size())

    optimizer = optim.Adam(net.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    net.train()

    def train_step(inputs, labels):
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
        return loss

    if args.capture:  # torchlight only: replay the step's kernel calls (tl.jit.capture_step)
        train_step = torch.jit.capture_step(train_step)
    for step in range(args.steps):
        inputs, labels = make_batch(args.batch_size, g)
        loss = train_step(inputs, labels)
        print(f"step {step} loss {loss.item():.6f}")

    net.eval()
    with torch.no_grad():
        inputs, labels = make_batch(64, g)
        predicted = net(inputs).argmax(1)
        accuracy = (predicted == labels).float().mean().item()
    print(f"accuracy {accuracy:.3f}")
    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
