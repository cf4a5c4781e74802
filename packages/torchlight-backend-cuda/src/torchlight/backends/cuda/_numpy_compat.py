"""Names numba-cuda expects of numpy that the installed numpy may no longer have.

numba-cuda registers device implementations for numpy functions by name when it compiles its
first kernel. numba-cuda 0.30.4 names ``numpy.row_stack``, which numpy 2.5 removed (it had been
an alias of ``numpy.vstack``, deprecated since numpy 2.0). With that pair installed, every kernel
launch fails deep inside numba-cuda with ``AttributeError: module 'numpy' has no attribute
'row_stack'`` (seen on a real GPU: numba-cuda 0.30.4, numpy 2.5.2). ``restore_numpy_aliases``
puts each removed alias back as the function it named, before numba-cuda looks, and changes
nothing where numpy still has the name. ``REMOVED_ALIASES`` is the one list of such names.
"""

import numpy as np

__all__ = ["REMOVED_ALIASES", "restore_numpy_aliases"]

# alias -> the name of the numpy function it stood for (numpy's own deprecation notes)
REMOVED_ALIASES = {"row_stack": "vstack"}


def restore_numpy_aliases(module=np):
    """Give ``module`` (numpy) back each alias of ``REMOVED_ALIASES`` it lacks; returns the names
    restored (empty where numpy still has them all)."""
    restored = []
    for alias, target in REMOVED_ALIASES.items():
        if not hasattr(module, alias):
            setattr(module, alias, getattr(module, target))
            restored.append(alias)
    return restored
