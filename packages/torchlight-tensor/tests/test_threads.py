"""``set_num_threads`` / ``get_num_threads``: PyTorch's names, the count checked, every loaded
backend with the ``"threads"`` capability told now and every later one when it loads."""

import sys

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.backend import threads
from torchlight.tensor.backend.threads import ThreadCountError


class Recorder:
    """A backend stand-in that records what it was told (the registry takes any object)."""

    def __init__(self, capabilities=("threads",)):
        self.capabilities = frozenset(capabilities)
        self.told = []
        self.from_numpy = np.asarray

    def set_num_threads(self, n):
        self.told.append(n)


@pytest.fixture
def fresh_count(monkeypatch):
    """No set_num_threads made yet; the BLAS library's threads put back afterwards."""
    monkeypatch.setattr(threads, "_CHOSEN", [])
    yield from _blas_restored()
    threads._LOADED[:] = [b for b in threads._LOADED if not isinstance(b, Recorder)]


def _blas_restored():
    try:
        import threadpoolctl
    except ImportError:
        yield
        return
    before = threadpoolctl.threadpool_info()
    yield
    for pool in before:
        if pool["user_api"] == "blas":
            threadpoolctl.threadpool_limits(pool["num_threads"], user_api="blas")


def test_default_follows_omp_num_threads_then_the_cores(fresh_count, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert tl.get_num_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "zero")  # not a count: the cores
    assert tl.get_num_threads() == threads._cores() >= 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert tl.get_num_threads() == threads._cores()


def test_set_then_get(fresh_count):
    tl.set_num_threads(1)
    assert tl.get_num_threads() == 1
    tl.set_num_threads(np.int64(2))  # an integer of numpy's is an integer
    assert tl.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_anything_but_a_positive_integer_is_refused(fresh_count, bad):
    with pytest.raises(ThreadCountError, match="positive integer") as info:
        tl.set_num_threads(bad)
    assert isinstance(info.value, ValueError) and isinstance(info.value, tl.TorchlightError)
    assert threads._CHOSEN == []  # nothing was changed


def test_loaded_backends_are_told_now_later_ones_when_they_load(fresh_count, fresh_registry):
    early, plain = Recorder(), Recorder(capabilities=())
    fresh_registry.register_backend("early", early)
    fresh_registry.register_backend("plain", plain)
    tl.get_backend("early"), tl.get_backend("plain")
    assert early.told == []  # loading alone tells nothing: the count was never set
    tl.set_num_threads(2)
    assert early.told == [2]
    late = Recorder()
    fresh_registry.register_backend("late", late)
    tl.get_backend("late")
    assert late.told == [2]
    tl.set_num_threads(1)
    assert early.told == [2, 1] and late.told == [2, 1]
    assert not hasattr(plain, "told") or plain.told == []  # no capability: never asked


def test_numpy_backend_caps_the_blas_library(fresh_count):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    tl.get_backend("cpu")  # loaded before: told now (one loaded after is told as it loads)
    tl.set_num_threads(1)
    blas = threadpoolctl.threadpool_info()
    assert all(p["num_threads"] == 1 for p in blas if p["user_api"] == "blas")
    a = tl.tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_allclose(
        (a @ a.T).numpy(), np.arange(12.0).reshape(3, 4) @ np.arange(12.0).reshape(3, 4).T
    )


def test_without_threadpoolctl_the_numpy_backend_says_how_to_size_blas(fresh_count, monkeypatch):
    tl.get_backend("cpu")
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "threadpoolctl", None)  # its import fails
        with pytest.warns(RuntimeWarning, match="OMP_NUM_THREADS=2"):
            tl.set_num_threads(2)
    assert tl.get_num_threads() == 2
