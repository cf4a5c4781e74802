"""Check built distributions against the release rules: ``python release_check.py dist/``.

Run by ``nox -s release`` (and so by the release workflow) after ``twine check --strict``. For
every sdist and wheel in the directory: the version is the repository's VERSION, every
requirement on another torchlight distribution pins that same version, the license text ships,
the project URLs and the Python-version classifiers are there, and an sdist carries its tests.
Exits non-zero listing every problem at once.
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHONS = ("3.10", "3.11", "3.12", "3.13")


def metadata_of(path: Path) -> tuple[str, list[str]]:
    """(core metadata text, member names) of a wheel or an sdist."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
            return zf.read(meta).decode(), names
    with tarfile.open(path) as tar:
        names = tar.getnames()
        pkg_info = next(n for n in names if n.count("/") == 1 and n.endswith("/PKG-INFO"))
        return tar.extractfile(pkg_info).read().decode(), names


def problems_of(path: Path, version: str) -> list[str]:
    text, names = metadata_of(path)
    meta = Parser().parsestr(text)
    name, found = meta["Name"], []
    if meta["Version"] != version:
        found.append(f"version {meta['Version']}, VERSION says {version}")
    for req in meta.get_all("Requires-Dist") or []:
        m = re.match(r"(torchlight-[a-z-]+)(?:\[[^\]]*\])?\s*(.*?)\s*(?:;|$)", req)
        if m and m.group(2) not in ("", f"=={version}"):
            found.append(f"requires {req!r}: other torchlight distributions must be =={version}")
        elif m and not m.group(2) and not m.group(1) == name:
            found.append(f"requires {req!r} without a version")
    if meta["License-Expression"] != "MIT":
        found.append(f"License-Expression is {meta['License-Expression']!r}, expected 'MIT'")
    if not any(n.endswith("LICENSE") for n in names):
        found.append("no LICENSE file inside")
    urls = meta.get_all("Project-URL") or []
    if not any(u.startswith("Source") for u in urls):
        found.append(f"no Source project URL (has {urls})")
    classifiers = set(meta.get_all("Classifier") or [])
    missing = [p for p in PYTHONS if f"Programming Language :: Python :: {p}" not in classifiers]
    if missing:
        found.append(f"no classifier for Python {', '.join(missing)}")
    if meta["Requires-Python"] != ">=3.10":
        found.append(f"Requires-Python {meta['Requires-Python']!r}, expected '>=3.10'")
    if path.suffix != ".whl" and name != "torchlight-framework":
        src = ROOT / "packages" / name
        if (src / "tests").is_dir() and not any("/tests/" in n for n in names):
            found.append("the sdist does not carry tests/")
    return [f"{path.name}: {p}" for p in found]


def main(argv: list[str]) -> int:
    dist = Path(argv[1] if len(argv) > 1 else ROOT / "dist")
    version = (ROOT / "VERSION").read_text().strip()
    files = sorted([*dist.glob("*.whl"), *dist.glob("*.tar.gz")])
    if not files:
        print(f"no wheels or sdists in {dist}", file=sys.stderr)
        return 2
    problems = [p for f in files for p in problems_of(f, version)]
    for f in files:
        print(f"  {f.name}")
    if problems:
        print("\n".join(["release check failed:", *problems]), file=sys.stderr)
        return 1
    print(f"release check: {len(files)} files, version {version}, all rules hold")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
