"""DataLoader: batches from a dataset, optionally built by worker processes.

``DataLoader(dataset, batch_size=32, shuffle=True, seed=0)`` is the common case. The pieces:
a *sampler* orders indices (``SequentialSampler``, or ``RandomSampler`` with ``shuffle``), a
*batch sampler* groups them (``BatchSampler``), a *collate_fn* turns a list of samples into a batch
(``default_collate``). Each ``iter(loader)`` is one epoch; with ``seed=`` the epochs have
different, reproducible orders (:mod:`torchlight.data.seeding`).

Workers (``num_workers > 0``) are forked from a fork server (``forkserver``; ``spawn`` where the
platform has none), never from the main process itself: numba's OpenMP runtime (and CUDA, and many
BLAS builds) cannot survive a fork of a process that already used it, while the fork server is a
fresh interpreter that only imported torchlight's packages. So the dataset, ``collate_fn`` and
``worker_init_fn`` must be picklable (module-level classes and functions, no lambdas), scripts
need the ``if __name__ == "__main__":`` guard, and the first epoch pays the server's start-up
(about a second); later workers start in milliseconds. Batches come back in sampler order, so a
map-style dataset gives exactly the batches of ``num_workers=0``. A worker exception is re-raised
in the main process with the worker's traceback; an error, a KeyboardInterrupt, ``break`` or
garbage collection of the iterator shuts every worker down (politely, then by terminate).
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
import sys
import time
from typing import cast

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .errors import DataLoaderError
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .seeding import EpochRandomness
from .worker import ExceptionWrapper, Exhausted, IterableFetcher, MapFetcher, worker_loop

__all__ = ["DataLoader"]

_POLL_S = 0.2  # result-queue wait between liveness checks of the workers
_JOIN_TIMEOUT_S = 5.0  # grace period for a worker to exit before it is terminated
_DEFAULT_PREFETCH = (
    2  # batches in flight per worker when prefetch_factor is None (PyTorch's default)
)


def _preload() -> list:
    """What the fork server imports once, so that every worker forked from it starts with them
    loaded: the torchlight modules this process has imported, a backend's kernels included
    (importing one starts no thread pool: kernels compile at their first call, and a thread pool
    starts at the first parallel kernel, which the fork server never runs). Not the user's
    ``__main__`` (multiprocessing's default preload): a script's top level may run kernels, and
    the thread pools they start cannot be carried across a fork, so each worker re-creates
    ``__main__`` itself, as a spawned one does."""
    return sorted(name for name in list(sys.modules) if name.split(".")[0] == "torchlight")


def _default_context():
    """``forkserver`` where the platform has it, else ``spawn``.

    A fork server is one fresh interpreter, started (and given :func:`_preload`) at the first
    use; each worker is then a fork of it: no thread pool of this process is inherited (why
    torchlight never forks this process itself), and no worker pays an interpreter start-up and
    the imports again (most of a second on a small machine, at every epoch without
    ``persistent_workers``).
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    return multiprocessing.get_context("forkserver")


def _before_start(context) -> None:
    """Give the default fork server its preload list, as late as possible (just before workers
    start: the modules imported by then, a backend's among them, are those the workers need).
    It takes effect when the server starts, at the first worker of the process, and replaces a
    list set with ``multiprocessing.set_forkserver_preload`` (pass a ``spawn`` context to keep
    multiprocessing's own server to yourself)."""
    if context is _default_context() and context.get_start_method() == "forkserver":
        context.set_forkserver_preload(_preload())


def _as_context(context):
    """The multiprocessing context workers start with: :func:`_default_context` unless the
    caller chose one."""
    if context is None:
        return _default_context()
    if isinstance(context, str):
        if context not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"multiprocessing_context {context!r} is not a start method of this platform "
                f"(available: {multiprocessing.get_all_start_methods()})"
            )
        return multiprocessing.get_context(context)
    if not hasattr(context, "Process") or not hasattr(context, "Queue"):
        raise TypeError(
            "multiprocessing_context must be a start method name or a multiprocessing context, "
            f"got {type(context).__name__}"
        )
    return context


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Arguments follow PyTorch: ``batch_size`` (``None`` disables batching: samples are yielded one
    by one through :func:`default_convert`), ``shuffle``, ``sampler`` (ordering of indices),
    ``batch_sampler`` (yields lists of indices; excludes ``batch_size``/``shuffle``/``sampler``/
    ``drop_last``), ``num_workers``, ``collate_fn``, ``drop_last`` (drop the final short batch),
    ``timeout`` (seconds to wait for a worker's batch, 0 = forever), ``worker_init_fn`` (called with
    the worker id in each worker), ``prefetch_factor`` (batches in flight per worker), and the
    randomness source ``seed=`` (int) or ``generator=`` (``tl.Generator``/numpy ``Generator``).

    Accepted for PyTorch compatibility, with these meanings here:

    * ``pin_memory`` (and ``pin_memory_device``): page-locked host memory speeds up copies to a
      CUDA device in PyTorch; torchlight's batches are ordinary host arrays, so this changes
      nothing. Move batches with ``.to(device)`` as usual.
    * ``persistent_workers=True`` (needs ``num_workers > 0``, as in PyTorch): accepted, but the
      workers are still started afresh each epoch; batches and seeds are the same as PyTorch's
      would be, only the per-epoch start-up cost remains.
    * ``multiprocessing_context``: ``"forkserver"`` (the default where the platform has it,
      else ``"spawn"``), ``"spawn"``, ``"fork"`` or a
      context object from :func:`multiprocessing.get_context`; the workers are started with it.
      ``"fork"`` is only safe when no thread pool (numba, OpenBLAS) has started in the parent.
    * ``prefetch_factor``: ``None`` means 2; with ``num_workers=0`` it must be left ``None``.
    * ``in_order``: only ``True`` (batches in sampler order) is supported.

    >>> from torchlight.data import DataLoader, TensorDataset
    >>> loader = DataLoader(TensorDataset(tl.arange(10)), batch_size=4, pin_memory=True)
    >>> [b[0].tolist() for b in loader]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]

    Each worker seeds Python's ``random``, numpy's global state and ``tl.manual_seed`` with
    ``base_seed + worker_id``, where ``base_seed`` is drawn per epoch from the loader's randomness
    (so random augmentations differ between workers and epochs, and repeat with ``seed=``).

    >>> from torchlight.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(tl.randn(5, 3), tl.tensor([0, 1, 0, 1, 1]))
    >>> loader = DataLoader(ds, batch_size=2, shuffle=True, seed=0)
    >>> len(loader)
    3
    >>> [(x.shape, y.shape) for x, y in loader]
    [((2, 3), (2,)), ((2, 3), (2,)), ((1, 3), (1,))]
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        seed: int | None = None,
    ):
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"num_workers must be a non-negative int, got {num_workers!r}")
        if timeout < 0:
            raise ValueError(f"timeout must be non-negative, got {timeout}")
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing. Let "
                "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if not in_order:
            raise ValueError(
                "DataLoader: in_order=False is not supported; batches always come in sampler order"
            )
        prefetch_factor = _DEFAULT_PREFETCH if prefetch_factor is None else prefetch_factor
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise ValueError(f"prefetch_factor must be a positive int, got {prefetch_factor!r}")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError(
                "an IterableDataset decides its own order: shuffle, sampler and "
                "batch_sampler must be left unset"
            )
        if batch_sampler is not None and (
            batch_size != 1 or shuffle or sampler is not None or drop_last
        ):
            raise ValueError(
                "batch_sampler is mutually exclusive with batch_size, shuffle, "
                "sampler and drop_last"
            )
        if sampler is not None and shuffle:
            raise ValueError(
                "sampler is mutually exclusive with shuffle (the sampler decides the order)"
            )
        if batch_size is None and drop_last:
            raise ValueError("drop_last requires batching (batch_size=None disables it)")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")

        self.dataset = dataset
        self.batch_size = batch_size if batch_sampler is None else None
        self.drop_last = drop_last
        self.num_workers = num_workers
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.pin_memory, self.pin_memory_device = bool(pin_memory), pin_memory_device
        self.persistent_workers = bool(persistent_workers)
        self.multiprocessing_context = _as_context(multiprocessing_context)
        self.generator = generator
        self._randomness = EpochRandomness(seed, generator)  # worker seeds, one draw per epoch
        if self._iterable:
            self.sampler = None
        elif sampler is not None:
            self.sampler = sampler
        elif shuffle:
            self.sampler = RandomSampler(dataset, seed=seed, generator=generator)
        else:
            self.sampler = SequentialSampler(dataset)
        if batch_sampler is None and batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(cast(Sampler, self.sampler), batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self._auto_collation = batch_sampler is not None or (
            self._iterable and batch_size is not None
        )
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._iterable:
            try:
                n = len(self.dataset)
            except TypeError:
                raise TypeError(
                    f"{type(self.dataset).__name__} has no __len__, so neither has the "
                    "DataLoader over it"
                ) from None
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` produce epoch ``epoch`` (with ``seed=``: a resumed run sees
        the same orders as an uninterrupted one)."""
        self._randomness.set_epoch(epoch)
        for s in (self.sampler, self.batch_sampler):
            if s is not None and hasattr(s, "set_epoch"):
                s.set_epoch(epoch)

    def __iter__(self):
        if self.num_workers == 0:
            # Keep the epoch count in step without drawing: no worker needs a seed, and drawing
            # would needlessly advance torchlight's global random state.
            self._randomness.epoch += 1
            return _SingleProcessIter(self)
        base_seed = int(self._randomness.next_epoch(stream=1).integers(0, 2**62))
        return _MultiProcessIter(self, base_seed)

    def __repr__(self):
        return (
            f"DataLoader({type(self.dataset).__name__}, batch_size={self.batch_size}, "
            f"num_workers={self.num_workers})"
        )


class _SingleProcessIter:
    def __init__(self, loader: DataLoader):
        self._indices = None if loader._iterable else iter(loader._index_sampler)
        self._fetcher: IterableFetcher | MapFetcher
        if loader._iterable:
            self._fetcher = IterableFetcher(
                loader.dataset,
                loader._auto_collation,
                loader.collate_fn,
                loader.batch_size,
                loader.drop_last,
            )
        else:
            self._fetcher = MapFetcher(loader.dataset, loader._auto_collation, loader.collate_fn)

    def __iter__(self):
        return self

    def __next__(self):
        indices = None if self._indices is None else next(self._indices)
        return self._fetcher.fetch(indices)


class _MultiProcessIter:
    """Keeps ``prefetch_factor * num_workers`` tasks in flight and yields results in task order."""

    def __init__(self, loader: DataLoader, base_seed: int):
        self._loader = loader
        self._shutdown = True  # until the workers exist, there is nothing to shut down
        self._workers: list = []
        self._index_queues: list = []
        n = loader.num_workers
        ctx = loader.multiprocessing_context
        _before_start(ctx)
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()  # tells busy workers to skip their queued tasks
        self._indices = None if loader._iterable else iter(loader._index_sampler)
        self._active = [True] * n  # False once an iterable worker reported exhaustion
        self._cycle = itertools.cycle(range(n))
        self._send_idx = 0  # next task id to hand out
        self._rcvd_idx = 0  # next task id to yield
        self._tasks: dict[int, list] = {}  # task id -> [worker id] or [worker id, result]
        self._shutdown = False
        try:
            for wid in range(n):
                iq = ctx.Queue()
                w = ctx.Process(
                    target=worker_loop,
                    daemon=True,
                    name=f"torchlight-data-worker-{wid}",
                    args=(
                        loader.dataset,
                        loader._iterable,
                        iq,
                        self._result_queue,
                        self._done_event,
                        loader._auto_collation,
                        loader.collate_fn,
                        loader.batch_size,
                        loader.drop_last,
                        base_seed + wid,
                        loader.worker_init_fn,
                        wid,
                        n,
                    ),
                )
                self._index_queues.append(iq)
                w.start()  # the arguments are pickled here
                self._workers.append(w)
        except Exception as exc:
            self._shutdown_workers()
            raise DataLoaderError(
                f"could not start DataLoader worker processes ({type(exc).__name__}: {exc}). Workers "
                "start in a fresh interpreter, so the dataset, collate_fn and worker_init_fn must be "
                "picklable: module-level classes and functions, no lambdas or local closures."
            ) from exc
        for _ in range(loader.prefetch_factor * n):
            self._put_task()

    def __iter__(self):
        return self

    def _put_task(self) -> None:
        if self._shutdown:
            return
        if self._indices is not None:
            try:
                indices = next(self._indices)
            except StopIteration:
                return
        else:
            indices = None  # an iterable worker produces its own next batch
        for _ in range(len(self._workers)):
            wid = next(self._cycle)
            if self._active[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, indices))
        self._tasks[self._send_idx] = [wid]
        self._send_idx += 1

    def _get(self):
        """The next ``(task_id, result)`` from any worker, checking that the workers live on."""
        deadline = time.monotonic() + self._loader.timeout if self._loader.timeout > 0 else None
        while True:
            wait = (
                _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            )
            try:
                task_id, payload = self._result_queue.get(timeout=wait)
                return task_id, pickle.loads(payload)
            except queue.Empty:
                pass
            for wid, w in enumerate(self._workers):
                if not w.is_alive():
                    raise DataLoaderError(
                        f"DataLoader worker {wid} (pid {w.pid}) exited unexpectedly with exit code "
                        f"{w.exitcode}. If it failed while starting, check that the dataset's "
                        "class is importable by a fresh interpreter (spawn) and that scripts "
                        "guard their entry point with if __name__ == '__main__':"
                    )
            if deadline is not None and time.monotonic() >= deadline:
                raise DataLoaderError(
                    f"DataLoader timed out after {self._loader.timeout} s waiting for a batch"
                )

    def __next__(self):
        try:
            return self._next()
        except StopIteration:
            self._shutdown_workers()
            raise
        except BaseException:  # errors, KeyboardInterrupt: no worker may outlive the iteration
            self._shutdown_workers()
            raise

    def _next(self):
        while True:
            if self._shutdown:
                raise StopIteration
            # Skip tasks that went to an exhausted iterable worker and will never carry data.
            while self._rcvd_idx < self._send_idx:
                info = self._tasks[self._rcvd_idx]
                if len(info) == 2 or self._active[info[0]]:
                    break
                del self._tasks[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                raise StopIteration
            info = self._tasks[self._rcvd_idx]
            if len(info) == 2:  # arrived earlier, out of order
                del self._tasks[self._rcvd_idx]
                self._rcvd_idx += 1
                self._put_task()
                return self._unwrap(info[1])
            task_id, result = self._get()
            if task_id not in self._tasks:
                continue  # a task already skipped
            if isinstance(result, Exhausted):
                self._active[result.worker_id] = False
                self._put_task()  # keep the pipeline of the remaining workers full
                continue
            if task_id != self._rcvd_idx:
                self._tasks[task_id].append(result)
                continue
            del self._tasks[task_id]
            self._rcvd_idx += 1
            self._put_task()
            return self._unwrap(result)

    @staticmethod
    def _unwrap(result):
        if isinstance(result, ExceptionWrapper):
            result.reraise()
        return result

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for q in self._index_queues:
                try:
                    q.put(None)
                except Exception:  # noqa: BLE001 - a closed queue: the worker is gone anyway
                    pass
            deadline = time.monotonic() + _JOIN_TIMEOUT_S
            for w in self._workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for w in self._workers:
                if w.is_alive():  # stuck in a long __getitem__: no more waiting
                    w.terminate()
                    w.join(timeout=1.0)
        finally:
            for q in [*self._index_queues, self._result_queue]:
                q.cancel_join_thread()
                q.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass
