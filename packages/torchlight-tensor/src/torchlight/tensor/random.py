"""torchlight's random number generator: seeded, reproducible, independent of numpy's global state.

Random tensors are drawn on the host from a PCG64 stream and moved to the tensor's backend, so the
same seed gives the same numbers on every backend.
"""

import numpy as np

__all__ = ["Generator", "manual_seed", "default_generator", "seed", "initial_seed"]


class Generator:
    """A seedable stream (``tl.Generator().manual_seed(0)``), like ``torch.Generator``."""

    def __init__(self, seed: int = 0, *, device=None):
        # torch.Generator(device="cpu") / torch.Generator("cuda"): one host stream serves every
        # device here, so a device argument (keyword, or in the seed's place) is accepted and unused
        if not isinstance(seed, int) or isinstance(seed, bool):
            seed = 0
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: every later random factory is reproducible."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator non-deterministically; return the seed used."""
    s = int(np.random.SeedSequence().entropy % (2**63))
    default_generator.manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator.initial_seed()


def rng_of(generator) -> np.random.Generator:
    return (generator or default_generator).rng
