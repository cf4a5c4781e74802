"""The thread pools a benchmark sizes: one list of their variables for every script here.

numpy's BLAS (OpenBLAS or MKL), OpenMP and numba each start a pool of worker threads, sized by
an environment variable that is read once, when the library loads. A benchmark that compares
frameworks at one thread (or two) must set all of them before the first import, in its own
process (:func:`default_threads`) or in a child's environment (:func:`thread_env`).

>>> thread_env(2)["NUMBA_NUM_THREADS"]
'2'
"""

from __future__ import annotations

import os

__all__ = ["THREAD_VARS", "thread_env", "default_threads"]

#: the environment variables that size the thread pools a run of numpy, numba or PyTorch starts
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def thread_env(threads: int) -> dict[str, str]:
    """The variables that give every pool ``threads`` threads, for a child's environment:
    ``env.update(thread_env(1))``."""
    return dict.fromkeys(THREAD_VARS, str(threads))


def default_threads(threads: int) -> None:
    """Give this process's pools ``threads`` threads unless its environment already sizes them;
    call it before numpy, numba or torch is imported (the pools read the variables at load)."""
    for var in THREAD_VARS:
        os.environ.setdefault(var, str(threads))
