"""Smoke test of the *installed wheels* (run by ``nox -s wheels`` inside a fresh venv).

Checks what editable installs hide:

- every torchlight distribution is installed from a wheel (no ``direct_url.json`` marking it
  editable) and its files live under site-packages;
- ``torchlight`` itself and every module found by walking the namespace (namespace levels included) imports, and each
  comes from site-packages, not from a ``src/`` directory of the checkout;
- exactly one distribution ships ``torchlight/__init__.py`` (the namespace rule);
- the pieces that exist work: the autograd engine on ``Scalar``, and — once torchlight-tensor
  provides it — the headline example.

It discovers what is installed instead of listing it, so distributions that do not exist yet
do not make it fail. Exits non-zero with a list of problems.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import importlib.util
import json
import sys
import sysconfig
import traceback
from pathlib import Path

problems: list[str] = []
SITE = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}


def in_site_packages(path: str | Path | None) -> bool:
    if path is None:
        return False
    p = Path(path).resolve()
    return any(p.is_relative_to(s) for s in SITE)


def check_distributions() -> list[str]:
    dists = sorted(
        {
            d.metadata["Name"].lower(): d
            for d in md.distributions()
            if d.metadata["Name"].lower().startswith("torchlight")
        }.items()
    )
    init_owners = []
    for name, dist in dists:
        direct = dist.read_text("direct_url.json")
        if direct and json.loads(direct).get("dir_info", {}).get("editable"):
            problems.append(f"{name} is an editable install, expected a wheel")
        for f in dist.files or []:
            if str(f).replace("\\", "/") == "torchlight/__init__.py":
                init_owners.append(name)
            if f.suffix == ".pth":
                problems.append(f"{name} installs a .pth file ({f}): editable-style install?")
        print(f"  {name} {dist.version}")
    names = [n for n, _ in dists]
    if init_owners != ["torchlight-tensor"] and (init_owners or "torchlight-tensor" in names):
        problems.append(
            f"torchlight/__init__.py must come from torchlight-tensor only: {init_owners}"
        )
    return names


def submodules(package: str, paths) -> list[str]:
    """Every module below ``package``, including namespace levels such as ``torchlight.backends``
    (which have no ``__init__.py``, so ``pkgutil.walk_packages`` would silently skip them)."""
    found = []
    for base in paths:
        base = Path(base)
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            if entry.name.startswith((".", "__pycache__")) or entry.name == "__init__.py":
                continue
            if entry.suffix == ".py" and entry.stem != "__main__":
                found.append(f"{package}.{entry.stem}")
            elif entry.is_dir() and "." not in entry.name and any(entry.glob("**/*.py")):
                found.append(f"{package}.{entry.name}")
    return sorted(set(found))


def check_imports() -> list[str]:
    import torchlight

    if not in_site_packages(getattr(torchlight, "__file__", None) or list(torchlight.__path__)[0]):
        problems.append(f"torchlight imported from {torchlight.__file__}, not site-packages")
    for portion in torchlight.__path__:
        if not in_site_packages(portion):
            problems.append(f"torchlight.__path__ entry outside site-packages: {portion}")

    names = []
    todo = submodules("torchlight", torchlight.__path__)  # __main__ is left out: it runs the CLI
    while todo:
        name = todo.pop(0)
        names.append(name)
        try:
            mod = importlib.import_module(name)
        except Exception:  # a module that does not import is exactly what this script catches
            problems.append(f"import {name} failed:\n{traceback.format_exc()}")
            continue
        where = getattr(mod, "__file__", None) or next(iter(getattr(mod, "__path__", [])), None)
        if not in_site_packages(where):
            problems.append(f"{name} imported from {where}, not site-packages")
        if hasattr(mod, "__path__"):
            todo += submodules(name, mod.__path__)
    return names


def check_autograd() -> None:
    from torchlight.autograd import Scalar, gradcheck

    x = Scalar(3.0, requires_grad=True)
    (x * x + x).backward()
    if x.grad != 7.0:
        problems.append(f"autograd smoke: d(x^2+x)/dx at 3 = {x.grad}, expected 7")
    gradcheck(lambda a: (a * a).tanh(), (Scalar(0.4, requires_grad=True),))


def check_tensor() -> None:
    import torchlight as tl

    if not callable(getattr(tl, "tensor", None)):  # (the subpackage torchlight.tensor is not)
        print("  (torchlight.tensor API not present yet: headline example skipped)")
        return
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    t = x.T
    m = x @ t
    y = (x**2).sum()
    y.backward()
    if x.grad.tolist() != [[2.0, 4.0], [6.0, 8.0]]:
        problems.append(f"headline example: x.grad = {x.grad.tolist()}")
    if m.tolist() != [[5.0, 11.0], [11.0, 25.0]]:
        problems.append(f"headline example: x @ x.T = {m.tolist()}")


def check_cli() -> None:
    import subprocess

    if importlib.util.find_spec("torchlight.__main__") is None:
        return
    r = subprocess.run([sys.executable, "-m", "torchlight"], capture_output=True, text=True)
    print("  python -m torchlight:", (r.stdout.strip().splitlines() or ["(no output)"])[0])
    if r.returncode != 0:
        problems.append(f"python -m torchlight exited {r.returncode}:\n{r.stderr}")


def main() -> int:
    print("installed torchlight distributions:")
    dists = check_distributions()
    if not dists:
        problems.append("no torchlight distribution is installed")
    else:
        names = check_imports()
        print(f"imported {len(names)} modules: {', '.join(names)}")
        for check in (check_autograd, check_tensor, check_cli):
            try:
                check()
            except Exception:
                problems.append(f"{check.__name__} raised:\n{traceback.format_exc()}")
    if problems:
        print(f"\nFAILED: {len(problems)} problem(s)")
        for p in problems:
            print(" -", p)
        return 1
    print("wheels smoke test OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
