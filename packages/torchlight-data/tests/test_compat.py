"""The torch.utils.data surface: lazy RandomSampler, PyTorch-only DataLoader arguments, import paths."""

import multiprocessing
import os
import resource
import time

import numpy as np
import pytest

import torchlight as tl
import torchlight.data as data
from torchlight.data import DataLoader, RandomSampler, TensorDataset, random_split


def test_random_sampler_huge_num_samples_is_lazy():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    sampler = RandomSampler(range(7), replacement=True, num_samples=10**10, seed=0)
    it = iter(sampler)
    head = [next(it) for _ in range(10_000)]
    elapsed = time.perf_counter() - start
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert len(sampler) == 10**10
    assert elapsed < 2.0 and grown_kb < 50_000  # 10**10 indices would need 80 GB
    assert set(head) == set(range(7))
    counts = np.bincount(head, minlength=7) / len(head)
    assert np.abs(counts - 1 / 7).max() < 0.02  # uniform draws
    loader = DataLoader(TensorDataset(tl.arange(7)), batch_size=3, sampler=sampler)
    assert len(loader) == -(-(10**10) // 3)
    assert next(iter(loader))[0].shape == (3,)


def test_random_sampler_lazy_orders_are_reproducible_and_chain_permutations():
    a = list(RandomSampler(range(5), num_samples=12, seed=3))
    b = list(RandomSampler(range(5), num_samples=12, seed=3))
    assert a == b and len(a) == 12
    assert sorted(a[:5]) == list(range(5)) and sorted(a[5:10]) == list(range(5))
    s = RandomSampler(range(100), replacement=True, num_samples=9000, seed=1)
    e0, e1 = list(s), list(s)
    assert len(e0) == 9000 and e0 != e1  # a new epoch each iter()
    assert min(e0) >= 0 and max(e0) < 100
    s.set_epoch(0)
    assert list(s) == e0  # set_epoch replays an epoch, chunk boundaries included


def test_dataloader_accepts_pytorch_arguments():
    ds = TensorDataset(tl.arange(10))
    seen = []
    loader = DataLoader(
        ds,
        batch_size=4,
        shuffle=False,
        pin_memory=True,
        timeout=0,
        worker_init_fn=seen.append,
        generator=tl.Generator().manual_seed(0),
        pin_memory_device="",
    )
    assert [b[0].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert loader.pin_memory
    for ctx in ("spawn", multiprocessing.get_context("spawn")):
        loader = DataLoader(
            ds,
            batch_size=5,
            num_workers=1,
            multiprocessing_context=ctx,
            persistent_workers=True,
            prefetch_factor=4,
        )
        assert (
            loader.multiprocessing_context.get_start_method() == "spawn"
            and loader.persistent_workers
        )
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="teleport")
    with pytest.raises(TypeError, match="multiprocessing_context"):
        DataLoader(ds, num_workers=1, multiprocessing_context=3)


def test_random_split_generator_positional_and_fractions():
    ds = list(range(10))
    a, b, c = random_split(ds, [0.5, 0.3, 0.2], tl.Generator().manual_seed(0))
    assert (len(a), len(b), len(c)) == (5, 3, 2)
    assert sorted(list(a) + list(b) + list(c)) == ds
    x, y = random_split(ds, [0.34, 0.66], tl.Generator().manual_seed(0))
    assert (len(x), len(y)) == (4, 6)  # floor(3.4)=3, floor(6.6)=6, remainder to the first
    again = random_split(ds, [0.5, 0.3, 0.2], generator=tl.Generator().manual_seed(0))
    assert list(again[0]) == list(a)


def test_torch_utils_data_names_and_module_paths():
    for name in (
        "Dataset",
        "IterableDataset",
        "TensorDataset",
        "Subset",
        "ConcatDataset",
        "random_split",
        "DataLoader",
        "Sampler",
        "SequentialSampler",
        "RandomSampler",
        "SubsetRandomSampler",
        "BatchSampler",
        "WeightedRandomSampler",
        "default_collate",
        "get_worker_info",
    ):
        assert name in data.__all__ and getattr(data, name) is not None
    from torchlight.data.dataloader import DataLoader as DL
    from torchlight.data.dataloader import default_collate, get_worker_info

    assert (
        DL is DataLoader and default_collate is data.default_collate and get_worker_info() is None
    )


def test_distributed_sampler_is_resolved_lazily():
    import subprocess
    import sys

    code = (
        "import sys, torchlight.data, torchlight.data.distributed; "
        "print(any(m.startswith('torchlight.distributed') for m in sys.modules))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
        == "False"
    )
    pytest.importorskip("torchlight.distributed")
    from torchlight.data.distributed import DistributedSampler
    from torchlight.distributed import DistributedSampler as Original

    assert DistributedSampler is Original and data.DistributedSampler is Original
    shard = list(DistributedSampler(list(range(10)), num_replicas=2, rank=1, shuffle=False))
    assert shard == [1, 3, 5, 7, 9]
    with pytest.raises(AttributeError):
        data.NoSuchThing  # noqa: B018


@pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)
def test_workers_are_forked_from_one_fork_server_by_default(helpers):
    """Not from this process (a fork would carry numba's and BLAS's thread pools into the
    workers), and not a fresh interpreter per worker (spawn: ~1 s of imports at every epoch):
    every epoch's worker is a child of the same fork server."""
    loader = DataLoader(helpers.ParentReport(), batch_size=2, num_workers=1)
    assert loader.multiprocessing_context.get_start_method() == "forkserver"
    parents = {int(pid) for _ in range(2) for batch in loader for pid in batch}
    assert len(parents) == 1 and os.getpid() not in parents


def test_the_fork_server_preloads_torchlight_not_the_script():
    from torchlight.data.loader import _preload

    names = _preload()
    assert "torchlight" in names and "torchlight.data" in names
    assert all(n == "torchlight" or n.startswith("torchlight.") for n in names)
    assert "__main__" not in names
