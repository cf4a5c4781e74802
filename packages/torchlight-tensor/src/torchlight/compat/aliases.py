"""The ``torch`` → ``torchlight`` module aliases: one table and the import hook that applies it.

While :func:`install` is in effect, ``import torch``, ``import torch.nn.functional as F`` or
``from torch.utils.data import DataLoader`` give torchlight's modules themselves (the same
objects, so ``torch.nn.Module is torchlight.nn.Module``). Nothing here adds behaviour: a name
PyTorch has and torchlight lacks is missing under the alias too, and belongs in torchlight.

The rule: a module name is mapped by the longest entry of :data:`ALIASES` that is a prefix of it
(on dot boundaries), keeping the rest of the name, so ``torch.nn.modules.linear`` becomes
``torchlight.nn.modules.linear`` through the ``torch.nn`` entry and ``torch.utils.data.sampler``
becomes ``torchlight.data.sampler`` through ``torch.utils.data``. A target that does not exist
raises an :class:`ImportError` naming both modules (and the distribution to install, when the
target lives in one that is not installed).
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

__all__ = [
    "ALIASES",
    "NAMESPACES",
    "TorchAliasFinder",
    "resolve",
    "install",
    "uninstall",
    "is_installed",
]

#: PyTorch module → torchlight module. Names under an entry map to the same-named submodule of its
#: target. Entries that merely restate that rule are listed anyway, as the map of what exists.
ALIASES = {
    "torch": "torchlight",
    "torch.autograd": "torchlight.autograd",
    "torch.nn": "torchlight.nn",
    "torch.nn.functional": "torchlight.nn.functional",
    "torch.nn.init": "torchlight.nn.init",
    "torch.nn.utils": "torchlight.nn.utils",
    "torch.nn.modules": "torchlight.nn.modules",
    "torch.nn.parallel": "torchlight.nn.parallel",
    "torch.optim": "torchlight.optim",
    "torch.optim.lr_scheduler": "torchlight.optim.lr_scheduler",
    "torch.utils.data": "torchlight.data",
    "torch.utils.data.dataloader": "torchlight.data.dataloader",
    "torch.utils.data.distributed": "torchlight.data.distributed",
    "torch.utils.tensorboard": "torchlight.tensorboard",
    "torch.distributed": "torchlight.distributed",
    "torch.cuda": "torchlight.cuda",
    "torch.amp": "torchlight.amp",
    "torch.accelerator": "torchlight.accelerator",
    "torch.distributions": "torchlight.distributions",
    "torch.onnx": "torchlight.onnx",
    "torch.serialization": "torchlight.serialization",
    "torch.jit": "torchlight.jit",
    "torch.compiler": "torchlight.compiler",
}

#: PyTorch packages that only group mapped modules (``torch.utils`` holds ``torch.utils.data``);
#: importing one gives an empty namespace module whose attributes are the mapped children.
NAMESPACES = ("torch.utils",)


def _distribution_of(target: str) -> tuple[str, str] | None:
    """(portion, distribution) of the torchlight portion that provides module ``target``, for the
    install hint: torchlight's own table of lazily imported portions, and the plugin naming rule
    ``torchlight.backends.<name>`` -> ``torchlight-backend-<name>``."""
    import torchlight

    for module, dist in torchlight._LAZY.values():
        if _is_under(target, module):
            return module, dist
    parts = target.split(".")
    if parts[:2] == ["torchlight", "backends"] and len(parts) > 2:
        return ".".join(parts[:3]), f"torchlight-backend-{parts[2]}"
    return None


def _is_under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def resolve(name: str):
    """The torchlight module name that PyTorch module ``name`` aliases; ``None`` when ``name`` is
    not under ``torch`` (or is one of :data:`NAMESPACES`, which have no torchlight module).

    >>> from torchlight.compat.aliases import resolve
    >>> resolve("torch.nn.functional")
    'torchlight.nn.functional'
    >>> resolve("torch.utils.data.sampler")
    'torchlight.data.sampler'
    >>> resolve("torchvision") is None
    True
    """
    if name in NAMESPACES:
        return None
    best = max((k for k in ALIASES if _is_under(name, k)), key=len, default=None)
    if best is None:
        return None
    return ALIASES[best] + name[len(best) :]


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _missing(alias: str, target: str, exc: ImportError) -> ImportError:
    """The error for an alias whose target cannot be imported: the distribution to install when
    the target's torchlight portion is absent, otherwise the module torchlight lacks."""
    found = _distribution_of(target)
    if found is not None and not _importable(found[0]):
        dist = found[1]
        return ImportError(
            f"{alias} is aliased to {target}, which is provided by the distribution {dist!r}; "
            f"it is not installed: install {dist} (see the installation page of the docs)",
            name=alias,
        )
    return ImportError(
        f"{alias} is aliased to {target}, which does not exist ({exc.name or target} is missing): "
        f"torchlight has no counterpart of this PyTorch module; see the porting guide "
        f"(docs/porting-from-pytorch.md) for the supported surface",
        name=alias,
    )


def _import_target(alias: str, target: str) -> types.ModuleType:
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        # A module that exists only as an attribute of its parent (``torchlight.cuda`` may be an
        # object made in ``torchlight/__init__.py``) is still that module's counterpart.
        if exc.name == target and "." in target:
            parent, _, child = target.rpartition(".")
            try:
                value = getattr(importlib.import_module(parent), child)
            except (ImportError, AttributeError):
                value = None
            if isinstance(value, types.ModuleType):
                return value
        if exc.name is not None and _is_under(target, exc.name):
            raise _missing(alias, target, exc) from None
        raise


class _AliasLoader(importlib.abc.Loader):
    """Puts the torchlight module itself in ``sys.modules`` under the PyTorch name.

    The import system creates a throwaway module for the spec and, after :meth:`exec_module`,
    returns whatever ``sys.modules`` then holds under the name: the torchlight module, whose own
    ``__spec__`` and ``__name__`` stay untouched."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        alias = module.__name__
        if self.target is None:  # a namespace: empty, its children arrive as attributes
            module.__doc__ = (
                f"{alias}: a namespace holding the torchlight aliases of its submodules"
            )
            return
        sys.modules[alias] = _import_target(alias, self.target)


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Meta-path finder that answers every ``torch`` / ``torch.*`` import from :data:`ALIASES`."""

    def find_spec(self, fullname, path=None, target=None):
        """The import system's question "who loads ``fullname``?": for ``torch`` and every ``torch.*``
        name, a spec whose loader returns the torchlight module that :data:`ALIASES` maps it to
        (``resolve(fullname)``); ``None`` for any other name, so other finders are asked.
        """
        if not _is_under(fullname, "torch"):
            return None
        mapped = resolve(fullname)
        loader = _AliasLoader(mapped)
        is_package = mapped is None or fullname in ALIASES or fullname == "torch"
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=is_package)


_finder = None
_aliased: set = set()  # names this hook put into sys.modules


def is_installed() -> bool:
    """Whether :func:`install` is in effect."""
    return _finder is not None


def install() -> TorchAliasFinder:
    """Make ``import torch...`` import torchlight (the hook goes first in ``sys.meta_path``).

    Refuses when a real ``torch`` is already imported in this process, since its objects and
    torchlight's would then be mixed. Idempotent; undo with :func:`uninstall`.
    """
    global _finder
    if _finder is not None:
        return _finder
    real = sys.modules.get("torch")
    if real is not None and not getattr(real, "__name__", "").startswith("torchlight"):
        raise ImportError(
            "PyTorch is already imported in this process; the torch -> torchlight aliases must be "
            "installed before anything imports torch (run the script with python -m torchlight.compat)"
        )
    _finder = TorchAliasFinder()
    sys.meta_path.insert(0, _finder)
    return _finder


def uninstall() -> None:
    """Remove the hook and forget the ``torch*`` names it put in ``sys.modules``."""
    global _finder
    if _finder is None:
        return
    sys.meta_path[:] = [f for f in sys.meta_path if f is not _finder]
    _finder = None
    removed = {n: sys.modules.pop(n) for n in [n for n in sys.modules if _is_under(n, "torch")]}
    # The import system also set each alias as an attribute of its parent; where that parent is a
    # torchlight module and the attribute is not its own submodule (torchlight.utils, say), undo it.
    for name, module in removed.items():
        parent_name, _, child = name.rpartition(".")
        parent = removed.get(parent_name)
        if parent is not None and getattr(parent, child, None) is module:
            if getattr(module, "__name__", None) != f"{parent.__name__}.{child}":
                delattr(parent, child)
