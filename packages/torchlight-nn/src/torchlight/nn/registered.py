"""Reading a module's registered entries as attributes: ``module.weight``, ``self.fc``.

A :class:`~torchlight.nn.Module` keeps its parameters, child modules and buffers in three
registries (``_parameters``, ``_modules``, ``_buffers``), not in its ``__dict__``, so that
``parameters()`` and ``state_dict()`` can walk them. ``module.weight`` therefore reaches
``Module.__getattr__``, which Python calls only after its normal lookup (the instance
``__dict__``, then the class and its bases) has failed and raised an ``AttributeError``
internally. That read costs about 5.9k machine instructions, where a plain attribute costs 0.4k
(PyTorch pays the same). A layer reads its parameters and children at every call: a ``Linear``
two, a transformer block about two dozen, the name classifier's step 57.

:class:`Registered` is a non-data descriptor that ``Module.__getattr__`` puts on the module's
class the first time it serves a name there (:func:`learn`). From then on Python's normal lookup
finds it on the class, and it reads the registries directly (about 2.8k instructions). What a
read returns does not change:

* a non-data descriptor comes after the instance ``__dict__``, so a plain attribute of that
  name on some instance still wins, as before;
* on an instance where the name is not registered it raises ``AttributeError``, and Python
  then calls ``__getattr__``, which raises the usual message;
* it is added only where the class and its bases have no attribute of that name, so it never
  hides one, and only to classes that keep ``Module``'s own ``__getattr__`` (a subclass that
  overrides it may do more than read the registries).

:func:`lookup` is the one place that says where a registered name is found, for both paths.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Registered", "lookup", "learn", "MISSING"]

MISSING: Any = object()
"""What :func:`lookup` returns for a name that no registry of the module holds."""


def lookup(d: dict, name: str) -> Any:
    """The entry ``name`` of the module whose ``__dict__`` is ``d``: its parameter, else its child
    module, else its buffer (PyTorch's order); :data:`MISSING` if none holds it (or
    ``Module.__init__`` has not run yet, as while unpickling)."""
    params = d.get("_parameters")
    if params is None:
        return MISSING
    if name in params:
        return params[name]
    modules = d["_modules"]
    if name in modules:
        return modules[name]
    buffers = d["_buffers"]
    if name in buffers:
        return buffers[name]
    return MISSING


class Registered:
    """The class-level shortcut to the registered entry ``name`` of each instance (see the module
    docstring). Read on the class itself, it is the descriptor.

    >>> import torchlight.nn as nn
    >>> lin = nn.Linear(2, 3)
    >>> lin.weight is lin._parameters["weight"]
    True
    >>> type(nn.Linear.__dict__["weight"]).__name__
    'Registered'
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        value = lookup(obj.__dict__, self.name)
        if value is MISSING:
            raise AttributeError(self.name)  # Python goes on to Module.__getattr__
        return value

    def __repr__(self) -> str:
        return f"Registered({self.name!r})"


def learn(cls: type, name: str, base_getattr: Any) -> None:
    """Put a :class:`Registered` for ``name`` on ``cls`` if that is safe: ``cls`` uses
    ``base_getattr`` (``Module.__getattr__``) as its own, ``name`` is a plain identifier, and
    neither ``cls`` nor a base has an attribute ``name``."""
    if (
        getattr(cls, "__getattr__", None) is not base_getattr
        or not name.isidentifier()
        or name.startswith("__")
        or hasattr(cls, name)
    ):
        return
    try:
        setattr(cls, name, Registered(name))
    except (TypeError, AttributeError):  # a class that refuses new attributes keeps the slow path
        pass
