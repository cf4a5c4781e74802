"""The release rules, checked on the source tree (``nox -s release`` checks the built files).

One version for every distribution (the repository's VERSION), every inter-distribution
requirement pinned to it, the license text beside every pyproject (so it ships in each sdist and
wheel), a ``py.typed`` marker in every distribution, and no document suggesting the unrelated
``torchlight`` distribution of the package index.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python >= 3.11")

ROOT = Path(__file__).resolve().parents[1]
VERSION = (ROOT / "VERSION").read_text().strip()
PYPROJECTS = sorted(ROOT.glob("packages/*/pyproject.toml"))
IDS = [p.parent.name for p in PYPROJECTS]


def test_version_is_a_release_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?", VERSION), VERSION


def test_changelog_has_a_section_for_the_version():
    assert re.search(rf"^## \[?{re.escape(VERSION)}\]?", (ROOT / "CHANGELOG.md").read_text(), re.M)


@pytest.mark.parametrize("pyproject", PYPROJECTS, ids=IDS)
def test_version_comes_from_the_version_file(pyproject):
    config = tomllib.loads(pyproject.read_text())
    assert "version" not in config["project"], "the version is typed here: use VERSION"
    assert config["project"]["dynamic"] == ["version"]
    assert config["tool"]["hatch"]["version"]["path"] == "../../VERSION"


@pytest.mark.parametrize("pyproject", PYPROJECTS, ids=IDS)
def test_inter_distribution_requirements_pin_the_version(pyproject):
    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    for req in reqs:
        m = re.match(r"(torchlight-[a-z-]+)(\[[^\]]*\])?(.*)", req)
        if m is None or m.group(1) == project["name"]:
            continue  # third party, or the meta-package's extras naming itself
        assert m.group(3) == f"=={VERSION}", f"{project['name']}: {req!r} must be =={VERSION}"


@pytest.mark.parametrize("pyproject", PYPROJECTS, ids=IDS)
def test_license_text_ships_with_every_distribution(pyproject):
    license_file = pyproject.parent / "LICENSE"
    assert license_file.read_text() == (ROOT / "LICENSE").read_text(), (
        f"{license_file} must be a copy of the repository's LICENSE"
    )
    assert tomllib.loads(pyproject.read_text())["project"]["license-files"] == ["LICENSE"]


@pytest.mark.parametrize(
    "pyproject",
    [p for p in PYPROJECTS if p.parent.name != "torchlight"],
    ids=[i for i in IDS if i != "torchlight"],
)
def test_every_distribution_is_typed(pyproject):
    markers = list((pyproject.parent / "src").glob("torchlight/**/py.typed"))
    assert markers, f"{pyproject.parent.name} ships no py.typed"
    assert "Typing :: Typed" in tomllib.loads(pyproject.read_text())["project"]["classifiers"]


def test_meta_package_is_not_named_like_the_unrelated_project():
    meta = tomllib.loads((ROOT / "packages/torchlight/pyproject.toml").read_text())["project"]
    assert meta["name"] == "torchlight-framework"


# `pip install torchlight` / `torchlight[...]` / "the meta-package `torchlight`" would fetch the
# unrelated project from the package index
_WRONG = re.compile(
    r"pip install (?:\S+ )*?['\"]?torchlight(?:\[|['\"]?(?:\s|$))|meta-package `torchlight`"
)


def test_no_document_or_message_suggests_the_unrelated_distribution():
    files = [
        *ROOT.glob("*.md"),
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("packages/*/README.md"),
        *ROOT.glob("packages/*/src/**/*.py"),
        *ROOT.glob("projects/**/*.md"),
        *ROOT.glob("projects/**/*.py"),
    ]
    offenders = []
    for f in files:
        if "_build" in f.parts:
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if _WRONG.search(line) and "never" not in line.lower() and "unrelated" not in line:
                offenders.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
