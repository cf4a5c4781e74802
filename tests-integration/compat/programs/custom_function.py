"""Fitting sin(x) with a custom autograd Function (a plain PyTorch program).

y = a + b * P3(c + d * x), where P3 is the Legendre polynomial of degree three, implemented as a
``torch.autograd.Function`` with a hand-written backward: P3'(x) = 1.5 * (5x^2 - 1).
"""

import argparse
import math

import torch

CAPTURE_HELP = "torchlight only: capture the training step once and replay it (tl.jit.capture_step)"


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--points", type=int, default=2000)
    parser.add_argument("--print-every", type=int, default=100)
    parser.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    args = parser.parse_args()

    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, args.points, dtype=dtype)
    y = torch.sin(x)

    # weights initialised near the answer, as the problem is badly conditioned from random ones
    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)

    learning_rate = 5e-6

    def train_step():
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= learning_rate * p.grad
                p.grad = None
        return loss

    if args.capture:  # torchlight only: replay the step's kernel calls (tl.jit.capture_step)
        train_step = torch.jit.capture_step(train_step)
    for t in range(args.steps):
        loss = train_step()
        if t % args.print_every == args.print_every - 1:
            print(f"step {t} loss {loss.item():.6f}")

    print(f"Result: y = {a.item():.4f} + {b.item():.4f} * P3({c.item():.4f} + {d.item():.4f} x)")

    if args.capture:
        print(f"training step: {train_step.state}, {train_step.n_calls} kernel calls a replay")


if __name__ == "__main__":
    main()
