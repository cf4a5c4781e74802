"""What runs inside a DataLoader worker process, and the batch fetchers shared with the main process.

A worker is forked from a fork server (or spawned, where the platform has none): a fresh
interpreter with torchlight imported, which unpickles the dataset and ``collate_fn``, then loops:
take ``(task_id, indices)`` from its index queue, build the batch, put ``(task_id, pickled
result)`` on the shared result queue. ``None`` on the index queue means "exit". The main process
(``loader.py``) reorders results by ``task_id``; see there for why no worker is forked from the
main process, and how shutdown works.
"""

from __future__ import annotations

import pickle
import queue
import random
import signal
import traceback
from dataclasses import dataclass
from typing import cast

import numpy as np

__all__ = [
    "WorkerInfo",
    "get_worker_info",
    "MapFetcher",
    "IterableFetcher",
    "ExceptionWrapper",
    "Exhausted",
    "worker_loop",
]

_POLL_S = 0.5  # how often an idle worker checks that its parent is still alive

_worker_info: WorkerInfo | None = None


@dataclass(frozen=True)
class WorkerInfo:
    """Describes the current worker: ``id`` in ``range(num_workers)``, its ``seed``, its copy of
    the ``dataset``. An IterableDataset uses it to read only its shard."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """The :class:`WorkerInfo` inside a DataLoader worker process, ``None`` in the main process."""
    return _worker_info


class MapFetcher:
    """Builds a batch from a map-style dataset and a list of indices (or one index, unbatched)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        from .collate import default_collate
        from .dataset import gathers_batches

        # Fast path: a TensorDataset batch (or a Subset's) under default collation is one gather
        # per tensor, the same values as stacking the rows (the list matches default_collate's).
        self._gather = auto_collation and collate_fn is default_collate and gathers_batches(dataset)

    def fetch(self, indices):
        """Load the samples at ``indices`` from the map-style dataset and collate them into a batch."""
        if not self.auto_collation:
            return self.collate_fn(self.dataset[indices])
        if self._gather:
            return list(self.dataset.gather(indices))
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(indices) if getitems is not None else [self.dataset[i] for i in indices]
        return self.collate_fn(samples)


class IterableFetcher:
    """Pulls batches from an IterableDataset's iterator; raises StopIteration when it ends."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, batch_size, drop_last: bool):
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.batch_size = batch_size
        self.drop_last = drop_last

    def fetch(self, _indices=None):
        """Take the next ``batch_size`` samples from the iterable dataset and collate them (raises
        ``StopIteration`` at the end).
        """
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        samples = []
        for sample in self.iterator:
            samples.append(sample)
            if len(samples) == self.batch_size:
                break
        if not samples or (self.drop_last and len(samples) < self.batch_size):
            raise StopIteration
        return self.collate_fn(samples)


class Exhausted:
    """Result marker: this worker's IterableDataset copy has no more batches."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class _VerbatimStr(str):
    def __repr__(self):
        return str(self)


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback text.

    The exception *type* travels by its import path, not by pickle, so an exception class the main
    process cannot import (or construct from one message) degrades to ``DataLoaderError``.
    """

    def __init__(self, where: str):
        exc_type, exc, tb = __import__("sys").exc_info()
        self.type_module = exc_type.__module__
        self.type_name = exc_type.__qualname__
        self.message = (
            f"Caught {exc_type.__name__} {where}.\nOriginal traceback (in the worker):\n"
            + "".join(traceback.format_exception(exc_type, exc, tb))
        )

    def reraise(self):
        """Raise the worker's exception again in this process, its message holding the worker's
        traceback.
        """
        from .errors import DataLoaderError

        exc_type = None
        try:
            import importlib

            obj = importlib.import_module(self.type_module)
            for part in self.type_name.split("."):
                obj = getattr(obj, part)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                exc_type = obj
        except Exception:  # noqa: BLE001 - fall back to a generic error below
            exc_type = None
        message = self.message
        if exc_type is not None and issubclass(exc_type, KeyError):
            message = _VerbatimStr(message)  # KeyError prints repr(arg): keep newlines readable
        try:
            exc = exc_type(message) if exc_type is not None else None
        except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs five arguments
            exc = None
        raise exc if exc is not None else DataLoaderError(self.message)


def _seed_worker(seed: int) -> None:
    """Seed every global generator a dataset might use, differently in each worker."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torchlight as tl

        tl.manual_seed(seed)
    except Exception:  # noqa: BLE001 - no torchlight global state to seed
        pass


def worker_loop(
    dataset,
    iterable: bool,
    index_queue,
    result_queue,
    done_event,
    auto_collation: bool,
    collate_fn,
    batch_size,
    drop_last: bool,
    seed: int,
    worker_init_fn,
    worker_id: int,
    num_workers: int,
) -> None:
    """The body of a worker process (module-level so that ``spawn`` can find it by name)."""
    global _worker_info
    # Ctrl-C reaches the whole process group; the main process turns it into an orderly shutdown
    # of every worker, so workers ignore it instead of each dumping a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import multiprocessing

    parent = multiprocessing.parent_process()
    try:
        _seed_worker(seed)
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        init_error = None
        fetcher: MapFetcher | IterableFetcher | None = None
        try:
            if worker_init_fn is not None:
                worker_init_fn(worker_id)
            if iterable:
                fetcher = IterableFetcher(
                    dataset, auto_collation, collate_fn, batch_size, drop_last
                )
            else:
                fetcher = MapFetcher(dataset, auto_collation, collate_fn)
        except Exception:  # noqa: BLE001 - reported with the first batch instead of a silent death
            init_error = ExceptionWrapper(f"while starting DataLoader worker process {worker_id}")
        exhausted = False
        while True:
            try:
                task = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if parent is not None and not parent.is_alive():
                    break  # the main process died without telling us: do not linger as an orphan
                continue
            if task is None:
                break
            if done_event.is_set():
                continue  # shutting down: drain queued tasks without computing them
            task_id, indices = task
            result: object
            if init_error is not None:
                result = init_error
            elif exhausted:
                result = Exhausted(worker_id)
            else:
                try:
                    result = cast("MapFetcher | IterableFetcher", fetcher).fetch(indices)
                except StopIteration:
                    exhausted = True
                    result = Exhausted(worker_id)
                except Exception:  # noqa: BLE001 - every failure goes back to the main process
                    result = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
            # Pickle here, not in the queue's feeder thread: there a pickling error is only printed
            # and the batch silently lost, leaving the main process waiting forever.
            try:
                payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001
                payload = pickle.dumps(
                    ExceptionWrapper(
                        f"while sending a batch from DataLoader worker process {worker_id} (the batch "
                        "could not be pickled)"
                    )
                )
            result_queue.put((task_id, payload))
    except KeyboardInterrupt:
        pass
    finally:
        # Let the process exit even if the main process stopped reading results.
        result_queue.cancel_join_thread()
        result_queue.close()
