"""Random fills on the device (the ``random`` capability): ``rand``/``randn`` without a host upload.

numba-cuda's xoroshiro128+ generator keeps one 128-bit state per thread in a device array. The
backend keeps one such array, sized for the largest grid ``grid_1d`` launches (``MAX_BLOCKS ×
BLOCK`` threads), and every fill re-derives it on the device: thread ``t`` seeds its state with
SplitMix64 (numba's ``init_xoroshiro128p_state``) from ``base + t·φ``, where ``base`` mixes the
generator's seed and the fill's number ``k`` since seeding (``torchlight.tensor.random.
device_stream``). So a fill is a function of ``(seed, k, size)`` and the launch configuration
alone — ``tl.manual_seed`` repeats it, whatever other generators did in between — and nothing is
copied from the host: numba's ``create_xoroshiro128p_states`` initialises on the CPU and uploads,
which would be a transfer per reseed. Each thread then draws its grid-stride share of elements:
``uniform`` in [0, 1) (numba's 53/24-bit conversions), ``normal`` by Box–Muller.
"""

from numba import cuda, uint64
from numba.cuda.random import (
    init_xoroshiro128p_state,
    xoroshiro128p_normal_float32,
    xoroshiro128p_normal_float64,
    xoroshiro128p_uniform_float32,
    xoroshiro128p_uniform_float64,
)

from torchlight.tensor.random import GOLDEN, stream_base

__all__ = ["GOLDEN", "stream_base", "random_kernel"]

_DRAW = {
    ("uniform", "float32"): xoroshiro128p_uniform_float32,
    ("uniform", "float64"): xoroshiro128p_uniform_float64,
    ("normal", "float32"): xoroshiro128p_normal_float32,
    ("normal", "float64"): xoroshiro128p_normal_float64,
}


def random_kernel(kind, dtype_name):
    """The fill kernel for ``kind`` ("uniform"/"normal") into storage of ``dtype_name``."""
    draw = _DRAW[(kind, dtype_name)]

    @cuda.jit
    def k(states, base, out, off, n):
        t = cuda.grid(1)
        init_xoroshiro128p_state(states, t, base + uint64(t) * uint64(GOLDEN))
        i = t
        while i < n:
            out[off + i] = draw(states, t)
            i += cuda.gridsize(1)

    return k
