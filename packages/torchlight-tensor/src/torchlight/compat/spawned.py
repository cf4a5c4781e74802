"""The ``__main__`` of a process that ``multiprocessing`` spawns from a program run by the runner.

``spawn`` (how :class:`~torchlight.data.DataLoader` starts its workers) gives the child a fresh
interpreter that re-creates the parent's ``__main__`` before it unpickles anything, so that
classes defined in the script (a ``Dataset``, a ``collate_fn``) can be found. The runner names
this module as the script's ``__spec__``, so the child imports it as ``__mp_main__``: it installs
the ``torch`` aliases, then executes the script (``sys.argv[0]``, restored from the parent) in
this module's namespace — as ``__mp_main__``, so the script's ``if __name__ == "__main__":``
block does not run again. The script's path comes from ``$TORCHLIGHT_COMPAT_SCRIPT``, which the
runner sets (``sys.argv[0]`` is this module's file while it runs).
"""

import os

from .aliases import install
from .runner import SCRIPT_VARIABLE

__all__ = ["run_script_here"]


def run_script_here(namespace: dict, path: str) -> None:
    """Execute the script at ``path`` in ``namespace`` (a module's globals) with the aliases on."""
    install()
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    namespace["__file__"] = path
    exec(code, namespace)


if __name__ == "__mp_main__":  # imported by multiprocessing.spawn to re-create the parent's main
    run_script_here(globals(), os.environ[SCRIPT_VARIABLE])
