"""Every public name of every installed torchlight distribution has a docstring of its own.

The API reference is generated from docstrings, so a name without one is a bare signature there
(and ``help(nn.ReLU)`` would print ``Module``'s text). The walk covers:

* every public module (no ``_``-prefixed part in its dotted path) of every distribution under
  ``packages/`` that is installed, and each name of its ``__all__``;
* every public class found that way (``Tensor``, ``Module`` and each ``nn`` layer, optimizers,
  schedulers, datasets, samplers, backends' classes, exceptions): each public method, property,
  classmethod and staticmethod it defines *in torchlight*.

"Of its own" means: a class's ``__doc__`` is in its own ``__dict__`` (not inherited from a base
class or ``object``); a method counts where it is defined, so a subclass that merely inherits a
documented ``forward`` passes, but a subclass that *overrides* it needs its own text (or the
override is documented on the torchlight base that defines the method). The test collects every
missing name and reports them all at once.

A second test asks more of the ops and layers (the functions of ``torchlight`` and
``torchlight.nn.functional``, the modules of ``torchlight.nn``): a ``>>>`` example, which the docs
build executes.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _installed_public_modules() -> list[str]:
    mods: set[str] = set()
    for pyproject in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        src = pyproject.parent / "src" / "torchlight"
        if not src.is_dir():
            continue
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        try:
            dist_version(name)
        except PackageNotFoundError:
            continue
        for path in src.rglob("*.py"):
            parts = path.relative_to(src.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if not any(p.startswith("_") for p in parts):
                mods.add(".".join(parts))
    return sorted(mods)


def _has_own_doc(obj) -> bool:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return isinstance(doc, str) and bool(doc.strip())


def _is_torchlight(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "torchlight"


def _member_doc_ok(cls, name, attr) -> bool:
    """``attr`` is ``cls.__dict__[name]``: documented here, or an override of a method that a
    torchlight base class documents (the base's text is what the reference shows)."""
    if isinstance(attr, property):
        doc = attr.__doc__  # the getter's docstring, unless the property was given another
    else:
        doc = getattr(getattr(attr, "__func__", attr), "__doc__", None)  # unwrap static/class
    if isinstance(doc, str) and doc.strip():
        return True
    for base in cls.__mro__[1:]:
        if not _is_torchlight(base) or name not in base.__dict__:
            continue
        return _member_doc_ok(base, name, base.__dict__[name])
    return False


def _public_members(cls):
    for name, attr in vars(cls).items():
        if name.startswith("_"):
            continue
        if not isinstance(attr, (property, staticmethod, classmethod)) and not inspect.isfunction(
            attr
        ):
            continue
        func = attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)
        if func is not None and not _is_torchlight(func):
            continue  # a method borrowed from a third-party library
        yield name, attr


def _missing() -> tuple[list[str], int]:
    mods = []
    for modname in _installed_public_modules():
        try:
            mods.append(importlib.import_module(modname))
        except ImportError:
            continue  # an optional dependency is absent (the docs build reports real failures)
    return _missing_in(mods)


def _missing_in(mods) -> tuple[list[str], int]:
    missing: list[str] = []
    seen_obj: set[int] = set()
    checked = 0
    for mod in mods:
        modname = mod.__name__
        checked += 1
        if not (mod.__doc__ or "").strip():
            missing.append(f"{modname} (module)")
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if obj is None or inspect.ismodule(obj) or id(obj) in seen_obj:
                continue
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue  # constants: the reference shows their value; a doc-comment is optional
            if not _is_torchlight(obj):
                continue
            seen_obj.add(id(obj))
            checked += 1
            if not _has_own_doc(obj):
                missing.append(f"{modname}.{name}")
            if inspect.isclass(obj):
                for mname, attr in _public_members(obj):
                    checked += 1
                    if not _member_doc_ok(obj, mname, attr):
                        missing.append(f"{obj.__module__}.{obj.__qualname__}.{mname}")
    return sorted(set(missing)), checked


def test_every_public_name_has_its_own_docstring():
    missing, checked = _missing()
    assert checked > 100, f"only {checked} names found: is torchlight installed?"
    assert not missing, (
        f"{len(missing)} of {checked} public names have no docstring of their own "
        "(say what it computes, the shapes, the maths, and a short >>> example for ops and "
        "layers):\n  " + "\n  ".join(missing)
    )


def test_the_check_finds_what_is_missing():
    """The checker itself: a module with undocumented names is reported name by name, and
    inherited documentation counts only where the brief says it does."""
    import types

    from torchlight.nn import Module

    mod = types.ModuleType("torchlight._docstring_selftest")

    class Documented(Module):
        """A layer with its own docstring."""

        def forward(self, x):  # Module.forward documents the override
            return x

        def helper(self):  # a new public method without a docstring
            return 1

    class Bare(Module):
        def forward(self, x):
            return x

    def undocumented_function(x):
        return x

    def documented_function(x):
        """Returns ``x``."""
        return x

    for obj in (Documented, Bare, undocumented_function, documented_function):
        obj.__module__ = mod.__name__
        setattr(mod, obj.__name__, obj)
    for f in (Documented.forward, Documented.helper, Bare.forward):
        f.__module__ = mod.__name__
    mod.__all__ = ["Documented", "Bare", "undocumented_function", "documented_function"]

    missing, checked = _missing_in([mod])
    prefix = "test_the_check_finds_what_is_missing.<locals>"
    assert missing == sorted(
        [
            "torchlight._docstring_selftest (module)",
            "torchlight._docstring_selftest.Bare",
            f"torchlight._docstring_selftest.{prefix}.Documented.helper",
            "torchlight._docstring_selftest.undocumented_function",
        ]
    ), missing
    assert checked == 1 + 4 + 3  # the module, its four names, the three methods


def _has_example(obj) -> bool:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    return isinstance(doc, str) and ">>>" in doc


def test_ops_and_layers_have_an_example():
    """Every function of ``torchlight`` and ``torchlight.nn.functional`` and every layer of
    ``torchlight.nn`` shows a ``>>>`` example (the docs build runs them, so they stay true)."""
    import torchlight as tl

    missing, checked = [], 0
    for modname in ("torchlight", "torchlight.nn.functional", "torchlight.nn"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue  # torchlight-nn is not installed
        for name in mod.__all__:
            obj = getattr(mod, name)
            is_op = inspect.isroutine(obj) and modname != "torchlight.nn"
            is_layer = (
                modname == "torchlight.nn"
                and inspect.isclass(obj)
                and issubclass(obj, tl.nn.Module)
            )
            if not (is_op or is_layer) or not _is_torchlight(obj):
                continue
            checked += 1
            if not _has_example(obj):
                missing.append(f"{modname}.{name}")
    assert checked > 50, f"only {checked} ops and layers found"
    assert not missing, f"{len(missing)} ops/layers without a >>> example:\n  " + "\n  ".join(
        missing
    )
