"""Random draws made alike in the two runs of oracle_runner.py (test-side only).

A program that takes its data from a random number generator (batches at random offsets, a
random train/test split, a sampler with replacement, a random initial hidden state) sees other
numbers under PyTorch than under torchlight even with the same seed: the generators differ. So
the torchlight run records the draws and the PyTorch run replays them:

* **the program's own calls** of the framework's random functions (``torch.randn``,
  ``torch.randint``, ``torch.randperm``, ``torch.multinomial``, ...), recognised by the
  caller's file lying in the program's folder. Calls the framework makes for itself (a layer's
  initialisation, a sampler's permutation) are left alone: the weights are shared by
  oracle_runner.py, and samplers are recorded whole, next;
* **every iterator of a** ``RandomSampler``: the indices it yielded, as the data loader took them;
* **Python's** ``random`` is seeded alike in both runs (the dynamic-net tutorial draws from it
  without a seed).

Draws are kept per function in call order (``randn-0``, ``randn-1``, ..., ``sampler-0``), so the
runs see the same numbers as long as the program makes the same calls in the same order, which
it does when the frameworks agree. The PyTorch run still makes each call (its result gives the
shape, dtype and ``requires_grad`` the program asked for) and overwrites the values; a replay
that runs out, or whose shape differs, stops the run with a message instead of drifting —
unless the environment sets ``PAST_RECORD_ENV`` to ``"own"``: a case that compares only its first
losses (``ORACLE_STEPS``) lets the two runs part later, so a PyTorch run that outlives
torchlight's record goes on with its own draws there.
"""

import importlib
import os
import random
import sys

import numpy as np

__all__ = ["Draws"]

#: the framework functions whose calls by the program are recorded and replayed
FUNCTIONS = (
    "rand",
    "randn",
    "randint",
    "randperm",
    "multinomial",
    "normal",
    "bernoulli",
    "poisson",
    "rand_like",
    "randn_like",
    "randint_like",
)
#: the seed of Python's ``random`` in both runs
PYTHON_SEED = 0
#: set to "own": past the recorded draws, the PyTorch run keeps its own instead of stopping
PAST_RECORD_ENV = "TORCHLIGHT_ORACLE_PAST_RECORD"


class Draws:
    """Record (``framework == "torchlight"``) or replay (``"torch"``) the random draws of the
    program in ``program_dir``; :meth:`install` patches ``torch``, :meth:`save` writes the
    record to ``path`` (an ``.npz`` file)."""

    def __init__(self, framework: str, path: str, program_dir: str):
        self.recording = framework == "torchlight"
        self.path = path
        self.program_dir = os.path.abspath(program_dir) + os.sep
        self.streams: dict = {}
        self.used: dict = {}
        self.own_past_record = os.environ.get(PAST_RECORD_ENV) == "own"
        if not self.recording:
            with np.load(path) as stored:
                self.streams = {key: stored[key] for key in stored.files}

    def install(self, torch) -> None:
        self.torch = torch
        random.seed(PYTHON_SEED)
        for name in FUNCTIONS:
            if hasattr(torch, name):
                setattr(torch, name, self._wrap(name, getattr(torch, name)))
        sampler = importlib.import_module("torch.utils.data").RandomSampler
        sampler.__iter__ = self._wrap_sampler(sampler.__iter__)

    def save(self) -> None:
        if self.recording:
            np.savez(self.path, **{k: np.asarray(v) for k, v in self.streams.items()})

    def _next_key(self, name: str) -> str:
        k = self.used.get(name, 0)
        self.used[name] = k + 1
        return f"{name}-{k}"

    def _wrap(self, name, original):
        def draw(*args, **kwargs):
            result = original(*args, **kwargs)
            caller = sys._getframe(1).f_code.co_filename
            if not os.path.abspath(caller).startswith(self.program_dir):
                return result
            key = self._next_key(name)
            if self.recording:
                self.streams[key] = result.detach().cpu().numpy().copy()
                return result
            if key not in self.streams and self.own_past_record:
                return result  # past torchlight's record, where no loss is compared any more
            value = self._stored(key)
            if tuple(value.shape) != tuple(result.shape):
                raise SystemExit(
                    f"oracle: draw {key} has shape {tuple(result.shape)} under PyTorch and "
                    f"{value.shape} under torchlight"
                )
            with self.torch.no_grad():
                result.copy_(self.torch.from_numpy(value))
            return result

        return draw

    def _wrap_sampler(self, original):
        draws = self

        def record(self):
            stream = draws.streams.setdefault(draws._next_key("sampler"), [])
            for index in original(self):
                stream.append(index)
                yield index

        def replay(self):
            key = draws._next_key("sampler")
            yield from draws._stored(key).astype(np.int64).tolist()
            raise RuntimeError(f"oracle: {key} ran out: PyTorch took more indices than torchlight")

        return record if self.recording else replay

    def _stored(self, key: str):
        if key not in self.streams:
            raise SystemExit(f"oracle: PyTorch made draw {key}, which torchlight never made")
        return self.streams[key]
