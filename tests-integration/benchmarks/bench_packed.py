"""The numba backend's packed kernels against numpy, op by op and size by size: where the
"packed" rows of its routing table (``torchlight.backends.numba.routing``) come from.

    python tests-integration/benchmarks/bench_packed.py [--number 2000] [--repeat 5] [--sizes ...]

For each op whose numpy form is several passes (the ``*_back`` gradients, ``sigmoid``, ``silu``,
``softplus``, ``gelu_tanh``) and each size, three times in µs per call, on float32 values, one
thread, the best of ``--repeat`` runs of ``--number`` calls:

* ``numba``: the numba backend's call (``NumbaBackend().zip`` / ``map``) on packed operands: its
  routing, then the packed kernel where the table sends it, else its other route;
* ``numpy``: the numpy backend's call on the same operands (its ufunc passes);
* ``kernel``: the packed kernel alone (``_packed.zip_kernel(op)`` / ``map_kernel``, serial),
  whether or not the table sends this size to it.

Then float32 sums over a block of dims, ``NumbaBackend().reduce`` against the numpy backend's
(``np.add.reduce`` with ``keepdims``). ``route`` names the kernel the numba call ran.
"""

from __future__ import annotations

import argparse
import functools
import timeit

import numba
import numpy as np

from torchlight.backends.numba import _packed, routing
from torchlight.backends.numba.backend import NumbaBackend
from torchlight.tensor.backend.numpy import NumpyBackend
from torchlight.tensor.storage import TensorData

ZIP_OPS = ("tanh_back", "sigmoid_back", "relu_back", "silu_back", "softplus_back", "gelu_tanh_back")
MAP_OPS = ("sigmoid", "silu", "softplus", "gelu_tanh")
SIZES = (128, 512, 1024, 8192, 65536)
SUMS = (
    ((1, 18), (1,)),
    ((4, 64), (1,)),
    ((16, 27), (1,)),
    ((16, 128), (0,)),
    ((64, 784), (0,)),
    ((256, 256), (1,)),
)


def _view(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return TensorData(x.reshape(-1), shape)


def _best(number, repeat, fn, *args):
    call = functools.partial(fn, *args)
    call()  # compiles, routes
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def elementwise(number, repeat, sizes=SIZES):
    """Rows ``(op, n, route, µs numba, µs numpy, µs kernel)``."""
    nb, np_ = NumbaBackend(), NumpyBackend()
    rows = []
    for family, ops in (("zip", ZIP_OPS), ("map", MAP_OPS)):
        for op in ops:
            for n in sizes:
                views = [_view((n,), k) for k in range(1 if family == "map" else 2)]
                out = _view((n,), 9)
                code = (routing.ZIP_CODES if family == "zip" else routing.MAP_CODES)[op]
                kern = (_packed.zip_kernel if family == "zip" else _packed.map_kernel)(op, code)
                args = [a for v in views for a in (v.storage, 0)] + [out.storage, 0, n]
                rows.append(
                    (
                        op,
                        n,
                        routing.route(family, op, views, out)[0],
                        _best(number, repeat, getattr(nb, family), op, *views, out),
                        _best(number, repeat, getattr(np_, family), op, *views, out),
                        _best(number, repeat, kern.ser, *args),
                    )
                )
    return rows


def sums(number, repeat, cases=SUMS):
    """Rows ``(shape, dims, route, µs numba, µs numpy)``."""
    nb, np_ = NumbaBackend(), NumpyBackend()
    rows = []
    for shape, dims in cases:
        a = _view(shape, 1)
        oshape = tuple(1 if d in dims else s for d, s in enumerate(shape))
        out = _view(oshape, 2)
        rows.append(
            (
                shape,
                dims,
                routing.route("reduce", "sum", (a,), out, dims=dims)[0],
                _best(number, repeat, nb.reduce, "sum", a, dims, out),
                _best(number, repeat, np_.reduce, "sum", a, dims, out),
            )
        )
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--number", type=int, default=2000, help="calls per run")
    p.add_argument("--repeat", type=int, default=5, help="runs (the best is reported)")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="values per op")
    args = p.parse_args(argv)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # one thread, as the numpy side (restored: the tests call main)
    try:
        _print(args)
    finally:
        numba.set_num_threads(threads)


def _print(args) -> None:
    print("| op | values | numba route | µs numba | µs numpy | µs packed kernel |")
    print("|---|---:|---|---:|---:|---:|")
    for op, n, route, t_nb, t_np, t_k in elementwise(args.number, args.repeat, args.sizes):
        print(f"| {op} | {n} | `{route}` | {t_nb:.2f} | {t_np:.2f} | {t_k:.2f} |")
    print()
    print("| sum of shape | dims | numba route | µs numba | µs numpy |")
    print("|---|---|---|---:|---:|")
    for shape, dims, route, t_nb, t_np in sums(args.number, args.repeat):
        print(f"| {shape} | {dims} | `{route}` | {t_nb:.2f} | {t_np:.2f} |")


if __name__ == "__main__":
    main()
