"""``python -m torchlight.compat [-m module | script.py] args...``: run a PyTorch program on torchlight.

The program runs as ``__main__`` through :mod:`runpy`, with ``sys.argv`` and ``sys.path[0]`` set as
``python script.py args...`` would set them, after :func:`~torchlight.compat.aliases.install`.
"""

import importlib.machinery
import os
import runpy
import sys
import types
import zipfile
from typing import cast

from .aliases import install

__all__ = ["run", "main", "SCRIPT_VARIABLE"]

#: The module spawned children import as their ``__main__`` (see :mod:`torchlight.compat.spawned`).
SPAWNED = "torchlight.compat.spawned"
#: The environment variable through which the runner tells spawned children the script's path.
SCRIPT_VARIABLE = "TORCHLIGHT_COMPAT_SCRIPT"

USAGE = """usage: python -m torchlight.compat script.py [args ...]
       python -m torchlight.compat -m module [args ...]

Runs a PyTorch program unchanged on torchlight: `import torch` imports torchlight
(torch.nn -> torchlight.nn, torch.utils.data -> torchlight.data, ...).
The device is torchlight's default: set TORCHLIGHT_DEVICE to any installed backend
(`python -m torchlight` lists them)."""


def run(target: str, args=(), *, module: bool = False) -> dict:
    """Run the script at path ``target`` (or the module named ``target`` when ``module``) as
    ``__main__`` with the torch aliases installed and ``sys.argv = [target, *args]``.

    Returns the program's globals. Exceptions, ``SystemExit`` included, propagate.
    """
    install()
    sys.argv = [target, *args]
    if module:
        return runpy.run_module(target, run_name="__main__", alter_sys=True)
    # As `python script.py` does: the script's folder (not the current one) is first on the path.
    sys.path[0] = os.path.dirname(os.path.abspath(target))
    if not os.path.isfile(target) or zipfile.is_zipfile(target):  # a folder or zip with __main__.py
        return runpy.run_path(target, run_name="__main__")
    return _run_file_as_main(target)


def _run_file_as_main(path: str) -> dict:
    """``runpy.run_path(path, run_name="__main__")``, except for ``__main__.__spec__``: it names
    :mod:`torchlight.compat.spawned`, which is how a process that ``multiprocessing`` spawns
    (DataLoader workers) re-creates this ``__main__`` with the aliases installed."""
    os.environ[SCRIPT_VARIABLE] = os.path.abspath(path)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__spec__ = importlib.machinery.ModuleSpec(SPAWNED, None)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, main.__dict__)
    finally:
        # restored as it was (an absent __main__ leaves None, which sys.modules accepts)
        sys.modules["__main__"] = cast(types.ModuleType, saved)
    return main.__dict__


def main(argv=None) -> int:
    """Command-line entry point; returns the exit status (the program's own, or 2 on bad usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    module = argv[0] == "-m"
    if module:
        argv = argv[1:]
        if not argv:
            print(USAGE, file=sys.stderr)
            return 2
    elif not os.path.exists(argv[0]):
        print(f"torchlight.compat: can't open file {argv[0]!r}: no such file", file=sys.stderr)
        return 2
    run(argv[0], argv[1:], module=module)
    return 0
