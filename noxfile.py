"""The one entry point of the monorepo: ``nox -s tests``, ``wheels``, ``lint``, ``demo``, ``bench``.

Distributions are *discovered* (every ``packages/*/pyproject.toml``), never listed, so adding a
distribution needs no change here and a session never breaks on one that does not exist yet.
The meta-package ``packages/torchlight`` is special: it has no code and pins exact versions of
distributions that may not all exist yet, so it is installed last, with ``--no-deps``, unless
every distribution it names was built alongside it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import zipfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint"]

ROOT = Path(__file__).resolve().parent
PACKAGES = ROOT / "packages"
META = PACKAGES / "torchlight"
TEST_TOOLS = ["pytest", "hypothesis", "tqdm", "matplotlib"]


def distributions() -> list[Path]:
    """Every distribution directory except the meta-package, in a stable order."""
    return sorted(p.parent for p in PACKAGES.glob("*/pyproject.toml") if p.parent != META)


def dist_name(path: Path) -> str:
    return nox.project.load_toml(path / "pyproject.toml")["project"]["name"]


def install_editable(session: nox.Session) -> None:
    """All distributions editable in one resolver call (siblings satisfy each other's pins),
    then the code-less meta-package without its dependencies or extras."""
    args = []
    for dist in distributions():
        args += ["-e", str(dist)]
    session.install(*args)
    if (META / "pyproject.toml").exists():
        session.install("--no-deps", str(META))


def set_test_env(session: nox.Session) -> None:
    if "TORCHLIGHT_DATA" not in os.environ:
        session.env["TORCHLIGHT_DATA"] = str(ROOT.parent / "shared" / "data")
    if os.environ.get("CI") and "TORCHLIGHT_HYPOTHESIS_PROFILE" not in os.environ:
        session.env["TORCHLIGHT_HYPOTHESIS_PROFILE"] = "ci"


@nox.session
def tests(session: nox.Session) -> None:
    """Every distribution editable + tests-integration. ``nox -s tests -- <pytest args>``."""
    session.install(*TEST_TOOLS)
    install_editable(session)
    set_test_env(session)
    paths = [str(p.relative_to(ROOT)) for p in sorted(PACKAGES.glob("*/tests"))]
    if (ROOT / "tests-integration").is_dir():
        paths.append("tests-integration")
    # explicit posargs replace the default paths (pytest then falls back to `testpaths` when the
    # posargs hold only options)
    args = session.posargs or paths
    session.run("pytest", "--import-mode=importlib", *args)


def _requirements_of(wheel: Path) -> list[str]:
    """The Requires-Dist entries of a wheel that are not torchlight distributions or extras."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode()
    reqs = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = line.split(":", 1)[1].strip()
        name = re.split(r"[\s;\[<>=!~(]", req, maxsplit=1)[0].lower().replace("_", "-")
        if name.startswith("torchlight") or "extra ==" in req:
            continue
        reqs.append(req)
    return reqs


@nox.session
def wheels(session: nox.Session) -> None:
    """Build every wheel, install them (not editable) into a fresh venv, import everything.

    Editable installs put ``src/`` directories on ``sys.path``; a wheel contains only what the
    build config selects. This session catches what editable installs hide: a namespace
    ``__init__.py`` shipped twice, a module left out of the wheel, a missing entry point.
    """
    tmp = Path(session.create_tmp()).resolve()
    wheelhouse = tmp / "wheelhouse"
    venv = tmp / "fresh-venv"
    shutil.rmtree(wheelhouse, ignore_errors=True)
    shutil.rmtree(venv, ignore_errors=True)

    built = {}
    for dist in [*distributions(), META]:
        if (dist / "pyproject.toml").exists():
            session.run("uv", "build", "--wheel", "--quiet", "--out-dir", str(wheelhouse), str(dist))
            built[dist_name(dist)] = dist
    whls = sorted(wheelhouse.glob("*.whl"))
    session.log("built: " + ", ".join(w.name for w in whls))

    session.run("uv", "venv", "--quiet", str(venv), "--python", sys.executable)
    py = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    pip = ["uv", "pip", "install", "--python", py]

    # third-party requirements come from the index; torchlight distributions only from the
    # wheelhouse (--no-index), so nothing named torchlight* can be fetched from PyPI
    third_party = {"numpy", "tqdm"}
    for w in whls:
        third_party.update(_requirements_of(w))
    session.run(*pip, *sorted(third_party))

    # --no-cache: every build is version 0.1.0, and uv would otherwise install a cached wheel
    # of the same name and version from an earlier run instead of the one just built
    local = [*pip, "--no-cache", "--no-index", "--find-links", str(wheelhouse)]
    names = [n for n in built if n != "torchlight"]
    session.run(*local, *names)
    if "torchlight" in built:
        meta_deps = nox.project.load_toml(META / "pyproject.toml")["project"]["dependencies"]
        missing = [d for d in meta_deps if re.split(r"[=<>!~ ]", d, maxsplit=1)[0] not in built]
        if missing:
            session.log(f"meta-package installed with --no-deps; not built yet: {missing}")
            session.run(*local, "--no-deps", "torchlight")
        else:
            session.run(*local, "torchlight")

    # run from a directory outside the repo so the checkout cannot shadow site-packages
    with session.chdir(tmp):
        session.run(py, str(ROOT / "tests-integration" / "smoke_wheels.py"), external=True)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, configured in the root pyproject.toml."""
    session.install("ruff")
    session.run("ruff", "check", *(session.posargs or ["."]))


@nox.session
def demo(session: nox.Session) -> None:
    """The headline demo: today a small MLP on a synthetic dataset; later the mini-GPT."""
    install_editable(session)
    session.install("tqdm")
    set_test_env(session)
    session.run("python", "projects/demo_mlp.py", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Side-by-side benchmarks (PyTorch too, when it is installed)."""
    script = ROOT / "tests-integration" / "benchmarks" / "run_all.py"
    if not script.exists():
        session.skip(f"{script.relative_to(ROOT)} does not exist yet")
    install_editable(session)
    session.run("python", str(script), *session.posargs)
