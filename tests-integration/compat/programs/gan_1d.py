"""A generative adversarial network that learns a 1-D Gaussian mixture (a plain PyTorch program).

The generator maps uniform noise to samples; the discriminator tells real samples from
generated ones. Both train with BCEWithLogitsLoss and Adam, alternating: the discriminator on a
real batch and a detached fake batch, then the generator through the discriminator.
"""

import argparse

import torch
import torch.nn as nn

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"


def real_samples(n):
    component = (torch.rand(n, 1) < 0.5).float()
    return component * (torch.randn(n, 1) * 0.3 + 2.0) + (1 - component) * (
        torch.randn(n, 1) * 0.3 - 2.0
    )


def make_generator(noise_dim, hidden):
    return nn.Sequential(
        nn.Linear(noise_dim, hidden),
        nn.LeakyReLU(0.2),
        nn.Linear(hidden, hidden),
        nn.LeakyReLU(0.2),
        nn.Linear(hidden, 1),
    )


def make_discriminator(hidden):
    return nn.Sequential(
        nn.Linear(1, hidden),
        nn.LeakyReLU(0.2),
        nn.Linear(hidden, hidden),
        nn.LeakyReLU(0.2),
        nn.Linear(hidden, 1),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--noise-dim", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--print-every", type=int, default=100)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    torch.manual_seed(0)
    G = make_generator(args.noise_dim, args.hidden)
    D = make_discriminator(args.hidden)
    criterion = nn.BCEWithLogitsLoss()
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
    ones = torch.ones(args.batch_size, 1)
    zeros = torch.zeros(args.batch_size, 1)

    def train_step(real, noise):
        fake = G(noise)

        opt_d.zero_grad()
        loss_d = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
        loss_d.backward()
        opt_d.step()

        opt_g.zero_grad()
        loss_g = criterion(D(fake), ones)
        loss_g.backward()
        opt_g.step()
        return loss_d, loss_g

    if args.capture:  # torchlight only: the batches are drawn outside the captured step
        train_step = torch.jit.capture_step(train_step)
    for step in range(args.steps):
        real = real_samples(args.batch_size)
        loss_d, loss_g = train_step(real, torch.rand(args.batch_size, args.noise_dim) * 2 - 1)
        if step % args.print_every == 0 or step == args.steps - 1:
            print(f"step {step} loss_d {loss_d.item():.4f} loss_g {loss_g.item():.4f}")

    with torch.no_grad():
        samples = G(torch.rand(1000, args.noise_dim) * 2 - 1).squeeze(1)
    print(
        f"generated: mean {samples.mean().item():.3f} std {samples.std().item():.3f} "
        f"fraction > 0: {(samples > 0).float().mean().item():.3f}"
    )

    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
