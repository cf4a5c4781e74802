"""Per-op Python overhead: ``a + b`` on 1-element tensors with requires_grad, forward + backward.

Run: ``python tests-integration/benchmarks/bench_overhead.py`` (or ``nox -s bench``). Prints, side
by side in one run, a bare numpy add (the floor), torchlight, and PyTorch CPU when installed
(``pip install torch==2.13.0``), with ratios. Single thread for a fair comparison.
"""

from thread_pools import default_threads

default_threads(1)

import statistics  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

import torchlight as tl  # noqa: E402


def per_call_us(stmt, number=20000, repeat=7):
    stmt()  # warm up
    times = timeit.repeat(stmt, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def main():
    rows = []
    x, y = np.array([1.0], np.float32), np.array([2.0], np.float32)
    rows.append(("numpy add (floor)", per_call_us(lambda: x + y)))

    a = tl.tensor([1.0], requires_grad=True)
    b = tl.tensor([2.0], requires_grad=True)
    rows.append(("torchlight a+b forward", per_call_us(lambda: a + b)))

    def tl_step():
        (a + b).backward()

    rows.append(("torchlight a+b forward+backward", per_call_us(tl_step)))
    try:
        import torch

        torch.set_num_threads(1)
        ta = torch.tensor([1.0], requires_grad=True)
        tb = torch.tensor([2.0], requires_grad=True)
        rows.append(("pytorch a+b forward", per_call_us(lambda: ta + tb)))

        def torch_step():
            (ta + tb).backward()

        rows.append(("pytorch a+b forward+backward", per_call_us(torch_step)))
    except ImportError:
        rows.append(("pytorch (not installed)", float("nan")))
    floor = rows[0][1]
    print(f"{'case':36s} {'us/op':>8s} {'x numpy':>8s}")
    for name, us in rows:
        print(f"{name:36s} {us:8.2f} {us / floor:8.1f}")
    return rows


if __name__ == "__main__":
    main()
