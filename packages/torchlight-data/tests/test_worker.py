"""DataLoader worker processes (forked from a fork server): identical results, errors, shutdown.

The first loader iteration with workers in a process starts the fork server (~1 s on a slow
machine), so the tests keep to two workers and few iterations.
"""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import torchlight as tl
from torchlight.data import DataLoader, DataLoaderError, TensorDataset, get_worker_info


def as_lists(batches):
    """A comparable, process-independent form of a list of (nested) batches."""

    def conv(b):
        if isinstance(b, tl.Tensor):
            return (str(b.dtype), b.shape, b.tolist())
        if isinstance(b, dict):
            return {k: conv(v) for k, v in b.items()}
        if isinstance(b, (list, tuple)):
            return [conv(v) for v in b]
        return b

    return [conv(b) for b in batches]


def test_workers_give_exactly_the_single_process_batches(helpers):
    ds = helpers.Squares(23)
    kwargs = dict(batch_size=4, shuffle=True, seed=7)
    single = DataLoader(ds, **kwargs)
    multi = DataLoader(ds, num_workers=2, prefetch_factor=3, **kwargs)
    for _ in range(2):  # two epochs: different orders, still identical between the loaders
        a = as_lists(single)
        b = as_lists(multi)
        assert a == b and len(b) == len(multi) == 6
    assert a[0]["x"][0] == "torchlight.float32" and len(a[0]["name"]) == 4  # nested dict survived


def test_workers_with_tensor_dataset_and_drop_last():
    ds = TensorDataset(tl.from_numpy(np.arange(40, dtype=np.float32).reshape(20, 2)), tl.arange(20))
    kwargs = dict(batch_size=6, shuffle=True, seed=1, drop_last=True)
    assert as_lists(DataLoader(ds, num_workers=2, **kwargs)) == as_lists(DataLoader(ds, **kwargs))


def test_iterable_dataset_sharded_by_worker_info(helpers):
    assert get_worker_info() is None  # in the main process
    loader = DataLoader(helpers.ShardedRange(11), batch_size=2, num_workers=2)
    got = [b.tolist() for b in loader]
    # worker 0 yields 0,2,4,..., worker 1 yields 1,3,5,...; batches alternate between workers
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]


def test_worker_seeds_and_init_fn(helpers):
    loader = DataLoader(
        helpers.WorkerReport(),
        batch_size=None,
        num_workers=2,
        seed=3,
        worker_init_fn=helpers.init_fn,
    )
    first = list(loader)
    ids = [s[0] for s in first]
    assert ids == [0, 1, 0, 1]  # tasks are dealt round-robin
    seeds = {s[0]: s[1] for s in first}
    assert seeds[1] == seeds[0] + 1
    assert [s[4] for s in first] == ["init0", "init1", "init0", "init1"]
    assert first[0][2] != first[1][2]  # each worker's random module seeded differently
    second = list(loader)
    assert second[0][1] != first[0][1]  # a new base seed each epoch
    replay = DataLoader(
        helpers.WorkerReport(),
        batch_size=None,
        num_workers=2,
        seed=3,
        worker_init_fn=helpers.init_fn,
    )
    assert list(replay) == first  # ... reproducible with the loader's seed


def test_worker_exception_is_reraised_with_its_traceback(helpers):
    loader = DataLoader(helpers.Failing(20, bad=9), batch_size=4, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1, 2, 3] and next(it).tolist() == [4, 5, 6, 7]
    with pytest.raises(ValueError, match="boom at index 9") as info:
        next(it)
    assert "DataLoader worker process" in str(info.value) and "tldata_helpers.py" in str(info.value)
    assert not any(w.is_alive() for w in it._workers)
    with pytest.raises(StopIteration):
        next(it)


def test_init_fn_failure_is_reported(helpers):
    loader = DataLoader(helpers.Squares(4), num_workers=1, worker_init_fn=helpers.failing_init_fn)
    with pytest.raises(RuntimeError, match="init failed in worker 0"):
        list(loader)


def test_dead_worker_is_detected(helpers):
    it = iter(DataLoader(helpers.Crashing(8, bad=2), batch_size=1, num_workers=2))
    with pytest.raises(DataLoaderError, match="exited unexpectedly with exit code 3"):
        list(it)
    assert not any(w.is_alive() for w in it._workers)


def test_unpicklable_collate_fn_fails_clearly(helpers):
    loader = DataLoader(helpers.Squares(4), num_workers=1, collate_fn=lambda b: b)
    with pytest.raises(DataLoaderError, match="picklable"):
        iter(loader)


def test_timeout(helpers):
    loader = DataLoader(helpers.Slow(4, delay=1.5), num_workers=1, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(DataLoaderError, match="timed out after 0.3 s"):
        next(iter(loader))
    assert time.monotonic() - start < 10.0  # start-up + timeout + one item, not all four items


def test_break_and_garbage_collection_stop_the_workers(helpers):
    it = iter(DataLoader(helpers.Squares(100), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    del it
    gc.collect()
    assert not any(w.is_alive() for w in workers)


def test_keyboard_interrupt_in_the_main_process_shuts_down(helpers, monkeypatch):
    it = iter(DataLoader(helpers.Slow(50, delay=0.05), batch_size=1, num_workers=2))
    next(it)

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(it, "_get", interrupted)
    with pytest.raises(KeyboardInterrupt):
        for _ in range(100):
            next(it)
    assert not any(w.is_alive() for w in it._workers)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_real_sigint_leaves_no_worker_behind(helpers):
    script = textwrap.dedent(f"""
        import multiprocessing, sys, time
        sys.path.insert(0, {str(helpers.__file__.rsplit(os.sep, 1)[0])!r})
        import tldata_helpers
        from torchlight.data import DataLoader
        if __name__ == "__main__":
            loader = DataLoader(tldata_helpers.Slow(1000, 0.05), batch_size=1, num_workers=2)
            try:
                for i, _ in enumerate(loader):
                    if i == 0:
                        print("RUNNING", flush=True)
            except KeyboardInterrupt:
                time.sleep(0.2)
                print("CLEAN" if not multiprocessing.active_children() else "LEFTOVER", flush=True)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout.readline().strip() == "RUNNING"
        os.killpg(proc.pid, signal.SIGINT)  # like Ctrl-C: the whole process group
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert out.strip() == "CLEAN", err
    assert "Traceback" not in err  # workers ignore SIGINT: no traceback per worker
