"""numba-cuda 0.30.4 needs ``numpy.row_stack``, which numpy 2.5 removed: the backend restores it."""

import os
import subprocess
import sys

import numpy as np
import pytest

from torchlight.backends.cuda import _numpy_compat


class _FakeNumpy:
    """A stand-in module with ``vstack`` but no ``row_stack`` (numpy >= 2.5)."""

    @staticmethod
    def vstack(arrays):
        return np.vstack(arrays)


def test_restores_a_removed_alias_as_the_function_it_named():
    fake = _FakeNumpy()
    assert _numpy_compat.restore_numpy_aliases(fake) == ["row_stack"]
    assert fake.row_stack is fake.vstack
    got = fake.row_stack([np.array([1, 2]), np.array([3, 4])])
    np.testing.assert_array_equal(got, [[1, 2], [3, 4]])


def test_changes_nothing_where_the_alias_exists():
    fake = _FakeNumpy()
    fake.row_stack = sentinel = object()
    assert _numpy_compat.restore_numpy_aliases(fake) == []
    assert fake.row_stack is sentinel


def test_the_backend_restores_it_before_numba_cuda_loads():
    # a fresh process whose numpy lacks the alias (numpy >= 2.5): importing the launcher, which
    # every kernel goes through, must put it back before numba-cuda is imported
    code = (
        "import numpy as np\n"
        "if hasattr(np, 'row_stack'): del np.row_stack\n"
        "import torchlight.backends.cuda._launch\n"
        "assert np.row_stack is np.vstack, np.row_stack\n"
    )
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("alias", sorted(_numpy_compat.REMOVED_ALIASES))
def test_each_target_exists_in_numpy(alias):
    assert callable(getattr(np, _numpy_compat.REMOVED_ALIASES[alias]))
