"""torchlight's random number generator: seeded, reproducible, independent of numpy's global state.

Random tensors are drawn on the host from a PCG64 stream and moved to the tensor's backend. A
backend with the ``"random"`` capability (the numba and CUDA backends) fills ``rand``/``randn``
tensors itself instead, from numbers keyed by ``(seed, k)`` — the generator's seed and the number
of such fills drawn since it was seeded (:func:`device_stream`, :func:`stream_base`) — so
``manual_seed`` makes those reproducible too, with numbers that differ from the host stream's (as
PyTorch's CPU and CUDA streams differ). ``uniform_``, ``normal_``, ``randint`` and the rest always
draw from the host stream.

A captured training step (``torchlight.jit.capture_step``) draws afresh at every replay, from the
same streams in the same order as the eager step would: every draw goes through
:func:`host_drawn` or :func:`device_stream`, which tell the step's recorder
(:data:`torchlight.tensor.recorders.active`) how to repeat it: its ``host_fill(view, draw)``
makes each replay refill the tensor's storage from a new ``draw()``, and its
``device_fill(take)`` returns a device fill's ``(seed, k)`` as numbers each replay takes anew
from ``take()``.
"""

import math
from typing import cast

import numpy as np

from . import recorders

__all__ = [
    "Generator",
    "manual_seed",
    "default_generator",
    "seed",
    "initial_seed",
    "device_stream",
    "stream_base",
    "uniform_ints",
    "MODULO_SPAN",
    "uniform_floats",
    "normal_floats",
    "NORMAL_PAIRS_MIN",
    "GOLDEN",
    "host_drawn",
]


class Generator:
    """A seedable stream (``tl.Generator().manual_seed(0)``), like ``torch.Generator``.

    >>> g = tl.Generator().manual_seed(1)
    >>> a = tl.randn(3, generator=g)
    >>> b = tl.randn(3, generator=tl.Generator().manual_seed(1))
    >>> bool((a == b).all())
    True
    """

    def __init__(self, seed: int = 0, *, device=None):
        # torch.Generator(device="cpu") / torch.Generator("cuda"): one host stream serves every
        # device here, so a device argument (keyword, or in the seed's place) is accepted and unused
        if not isinstance(seed, int) or isinstance(seed, bool):
            seed = 0
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream from ``seed``; returns the generator.

        >>> g = tl.Generator().manual_seed(42)
        >>> a = tl.rand(3, generator=g)
        >>> b = tl.rand(3, generator=g.manual_seed(42))
        >>> bool((a == b).all())
        True
        """
        self._seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        self._device_draws = 0  # device random fills since seeding (see device_stream)
        return self

    def initial_seed(self) -> int:
        """The seed this stream was last (re)started from."""
        return self._seed

    def get_state(self) -> dict:
        """A snapshot of the stream's state (a dict), to pass to :meth:`set_state` later."""
        return cast(dict, self.rng.bit_generator.state)  # numpy types it as a Mapping

    def set_state(self, state: dict) -> None:
        """Rewind or forward the stream to a state from :meth:`get_state`."""
        self.rng.bit_generator.state = state


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: every later random factory is reproducible.

    >>> _ = tl.manual_seed(0)
    >>> a = tl.rand(2)
    >>> _ = tl.manual_seed(0)
    >>> bool((tl.rand(2) == a).all())
    True
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator non-deterministically; return the seed used.

    >>> s = tl.seed()
    >>> tl.initial_seed() == s
    True
    """
    entropy = cast(int, np.random.SeedSequence().entropy)  # an int when no entropy is given
    s = int(entropy % (2**63))
    default_generator.manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed the default generator was last seeded with (see :func:`manual_seed`).

    >>> _ = tl.manual_seed(7)
    >>> tl.initial_seed()
    7
    """
    return default_generator.initial_seed()


def rng_of(generator) -> np.random.Generator:
    return (generator or default_generator).rng


MODULO_SPAN = 1 << 32
"""The widest span ``high - low`` that :func:`uniform_ints` draws as raw 64-bit words modulo the
span: each value then has probability within ``span / 2⁶⁴ ≤ 2⁻³²`` (relative) of exactly uniform
(PyTorch's CPU ``randint`` takes 32-bit words modulo the span, a bias up to ``span / 2³²``).
Wider spans take numpy's exactly uniform ``Generator.integers``."""


def uniform_ints(generator, low: int, high: int, shape: tuple) -> np.ndarray:
    """An int64 array of ``shape``, uniform on ``[low, high)``, from ``generator`` (the default
    one when ``None``): what ``randint`` draws.

    numpy's ``Generator.integers`` spends ~6 µs preparing any call (nanoGPT and a CNN's batch
    loop call ``randint`` every step for a handful of values), so spans up to
    :data:`MODULO_SPAN` take the bit generator's raw words modulo the span instead (~1 µs).

    >>> from torchlight.tensor.random import uniform_ints
    >>> v = uniform_ints(tl.Generator().manual_seed(0), -3, 4, (1000,))
    >>> int(v.min()), int(v.max()), v.dtype
    (-3, 3, dtype('int64'))
    """
    span = high - low
    if span <= 0:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    if low < -(1 << 63) or high > 1 << 63:
        raise ValueError(
            f"randint: [{low}, {high}) does not fit int64; low and high - 1 must lie in "
            f"[-2**63, 2**63 - 1]"
        )
    rng = rng_of(generator)
    if span > MODULO_SPAN:
        return rng.integers(low, high, size=shape, dtype=np.int64)
    raw = rng.bit_generator.random_raw(math.prod(shape))
    np.remainder(raw, span, out=raw)
    values = raw.view(np.int64)  # each below 2³²: the same bits as uint64
    if low:
        values += low
    return values.reshape(shape)


def uniform_floats(generator, shape: tuple, dtype) -> np.ndarray:
    """Samples of the uniform distribution on ``[0, 1)``, of ``shape`` and the numpy float
    ``dtype``, from ``generator`` (the default one when ``None``): what ``rand`` draws. Drawn at
    ``dtype``'s own precision (a float32 value from 24 random bits): a float64 draw rounded to
    float32 would be 1.0 about once in 3·10⁷.

    >>> from torchlight.tensor.random import uniform_floats
    >>> uniform_floats(tl.Generator().manual_seed(0), (2,), np.float32).dtype
    dtype('float32')
    """
    return rng_of(generator).random(shape, dtype=dtype)


NORMAL_PAIRS_MIN = 1024
"""From this many float32 values on, :func:`normal_floats` takes the Box–Muller transform
(about 3.3 ns a value against the ziggurat's 8.5: 16k values, a CNN's batch of noise, in 54
against 139 µs); below it, four numpy calls cost more than the ziggurat's draws."""


def normal_floats(generator, shape: tuple, dtype) -> np.ndarray:
    r"""Samples of the standard normal distribution, of ``shape`` and the numpy float ``dtype``,
    from ``generator`` (the default one when ``None``): what ``randn`` draws on the host.

    float64, and float32 below :data:`NORMAL_PAIRS_MIN` values: numpy's ziggurat at that
    precision. Larger float32 draws are Box–Muller pairs of float32 uniforms ``u₁, u₂`` — the
    method of PyTorch's CPU ``randn`` for float32:

    .. math::

        z_1 = \sqrt{-2 \ln(1 - u_1)}\, \cos 2\pi u_2, \qquad
        z_2 = \sqrt{-2 \ln(1 - u_1)}\, \sin 2\pi u_2

    (``1 - u₁`` lies in ``(0, 1]``, so the logarithm is finite). With 24-bit uniforms no value
    exceeds :math:`\sqrt{-2 \ln 2^{-24}} \approx 5.77` in magnitude, where a normal value does
    with probability 8·10⁻⁹.

    >>> from torchlight.tensor.random import normal_floats
    >>> z = normal_floats(tl.Generator().manual_seed(0), (100000,), np.float32)
    >>> z.dtype, abs(float(z.mean())) < 0.01, abs(float(z.std()) - 1) < 0.01
    (dtype('float32'), True, True)
    """
    rng = rng_of(generator)
    n = math.prod(shape)
    if dtype != np.float32 or n < NORMAL_PAIRS_MIN:
        return rng.standard_normal(shape, dtype=dtype)
    half = (n + 1) // 2
    u = rng.random(2 * half, dtype=np.float32)
    radius, angle = u[:half], u[half:]
    np.subtract(np.float32(1), radius, out=radius)
    np.log(radius, out=radius)
    radius *= np.float32(-2)
    np.sqrt(radius, out=radius)
    angle *= np.float32(2 * math.pi)
    out = np.empty(2 * half, np.float32)
    np.cos(angle, out=out[:half])
    np.sin(angle, out=out[half:])
    out[:half] *= radius
    out[half:] *= radius
    return out[:n].reshape(shape)


def device_stream(generator=None) -> tuple:
    """``(seed, k)`` for the next random fill on a device backend, and count it.

    ``k`` is the number of device fills drawn from ``generator`` (default: the default generator)
    since it was last seeded; a backend derives its device random state from the pair, so a
    re-seeded generator repeats its device numbers. Host draws are not affected.

    >>> from torchlight.tensor.random import device_stream
    >>> g = tl.Generator().manual_seed(5)
    >>> device_stream(g), device_stream(g), device_stream(g.manual_seed(5))
    ((5, 0), (5, 1), (5, 0))
    """
    gen = generator or default_generator

    def take() -> tuple:
        k = gen._device_draws
        gen._device_draws = k + 1
        return gen._seed, k

    if recorders.active:  # a replay takes the next fill's numbers, not this one's
        return recorders.active[-1].device_fill(take)
    return take()


def host_drawn(draw, make):
    """``make(draw())``: a tensor made (by ``make``, from a numpy array) of random numbers that
    ``draw()`` takes from a host stream. Every random factory that draws on the host goes through
    here, so that a captured step redraws: while a step is being recorded, the recorder learns
    that each replay refills the tensor from a new ``draw()``. ``draw`` must look its generator up
    when called (``manual_seed`` replaces the stream).

    >>> from torchlight.tensor.random import host_drawn, rng_of
    >>> t = host_drawn(lambda: rng_of(None).random(3), tl.tensor)
    >>> t.shape, t.dtype
    ((3,), torchlight.float64)
    """
    t = make(draw())
    if recorders.active:
        recorders.active[-1].host_fill(t._td, draw)
    return t


GOLDEN = 0x9E3779B97F4A7C15
"""2⁶⁴/φ, SplitMix64's increment: consecutive multiples of it are far apart modulo 2⁶⁴."""

_MASK = (1 << 64) - 1


def stream_base(seed: int, k: int) -> int:
    """The 64-bit number from which a backend's fill ``k`` after seeding with ``seed`` derives all
    its draws (``seed`` any Python int): the one place the pair is mixed, so every backend with
    the ``random`` capability keys its fills alike.

    >>> from torchlight.tensor.random import stream_base
    >>> stream_base(0, 0) != stream_base(0, 1) != stream_base(1, 0)
    True
    >>> 0 <= stream_base(-5, 3) < 2**64
    True
    """
    return ((seed & _MASK) * GOLDEN + (k + 1) * (GOLDEN ^ 0xBF58476D1CE4E5B9)) & _MASK
