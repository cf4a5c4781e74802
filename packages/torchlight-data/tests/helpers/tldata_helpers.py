"""Datasets and functions for the DataLoader worker tests.

They live in an importable module (not in a test file) because workers unpickle them by module
name in a fresh interpreter (a fork server's child, or a spawned one), and pytest's importlib
mode gives test files names that no other process can import.
"""

import os
import random
import time

import numpy as np

from torchlight.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    """A nested sample per index: a dict with an array, an int and a string."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.array([i, i * i], dtype=np.float32), "i": i, "name": f"s{i}"}


class Failing(Dataset):
    def __init__(self, n, bad):
        self.n, self.bad = n, bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"boom at index {i}")
        return i


class Crashing(Failing):
    """Kills its worker process outright at index ``bad`` (a segfault stand-in)."""

    def __getitem__(self, i):
        if i == self.bad:
            os._exit(3)
        return i


class Slow(Dataset):
    def __init__(self, n, delay):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return i


class ShardedRange(IterableDataset):
    """``range(n)``, split between workers by ``get_worker_info`` (each worker a strided shard)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class WorkerReport(Dataset):
    """Each sample says which worker made it and what the seeded global generators gave."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return (
            info.id,
            info.seed,
            random.random(),
            float(np.random.random()),
            os.environ.get("TLDATA_INIT", ""),
        )


class ParentReport(Dataset):
    """Each sample is the id of the worker's parent process."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return os.getppid()


def init_fn(worker_id):
    os.environ["TLDATA_INIT"] = f"init{worker_id}"


def failing_init_fn(worker_id):
    raise RuntimeError(f"init failed in worker {worker_id}")
