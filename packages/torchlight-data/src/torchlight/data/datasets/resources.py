"""Finding a data file: explicit root, ``$TORCHLIGHT_DATA``, the cache, then a verified download.

Resolution order for a :class:`Resource` (first hit wins):

1. ``root=`` passed by the caller — ``<root>/<resource.path>``;
2. the directory in ``$TORCHLIGHT_DATA`` (CI points it at the shared data folder);
3. the cache, ``$TORCHLIGHT_CACHE`` or else ``~/.cache/torchlight``;
4. a download from the resource's URLs (tried in order) into the cache, with a tqdm progress bar.
   A zip download is kept under ``<cache>/downloads/`` and the member is extracted from it, so the
   sibling files of one archive cost one download. ``TORCHLIGHT_OFFLINE=1`` disables this step.

Every file found or downloaded is checked against the published SHA-256 (``verify=False`` opts
out, for a different release of a corpus). A mismatch raises :class:`ChecksumError` naming the
file and both digests; the file is never used silently. With ``verify`` on and the resource's
``size`` known, a download or archive entry larger than that size is refused as soon as the size
shows (the zip directory's declared size first, then the bytes actually written), so a hostile
archive or server cannot fill the disk. When nothing works,
:class:`DataNotFoundError` lists every place searched, every download error, and how to provide the
file by hand.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.request import urlopen  # looked up at call time, so tests can monkeypatch it

from ..errors import ChecksumError, DataNotFoundError

__all__ = [
    "Resource",
    "fetch",
    "cache_dir",
    "checkout_data_root",
    "sha256_file",
    "DOWNLOAD_TIMEOUT",
]

DOWNLOAD_TIMEOUT = 30.0  # seconds without progress before a mirror counts as unreachable
_BLOCK = 1 << 16


@dataclass(frozen=True)
class Resource:
    """One data file: where it lives under a data root, its digest, and where to download it.

    ``member`` set means the ``urls`` are zip archives and the file is the archive entry whose
    name ends with ``member`` (``__MACOSX/`` entries ignored).
    """

    path: str
    sha256: str
    urls: tuple[str, ...] = ()
    member: str | None = None
    size: int | None = None

    def __post_init__(self):
        if Path(self.path).is_absolute() or ".." in Path(self.path).parts:
            raise ValueError(
                f"Resource.path must be relative and stay inside the root: {self.path!r}"
            )


def cache_dir() -> Path:
    """``$TORCHLIGHT_CACHE`` if set, else ``~/.cache/torchlight``."""
    env = os.environ.get("TORCHLIGHT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "torchlight"


def checkout_data_root(anchor: str | os.PathLike) -> Path | None:
    """The ``root=`` a program inside a source checkout passes to the corpus functions.

    The projects of the torchlight repository call ``tiny_shakespeare(root=checkout_data_root(
    __file__))`` so that they all find their data the same way: ``$TORCHLIGHT_DATA`` when it is set
    (``None`` is returned and :func:`fetch` reads the variable itself), else the directory
    ``shared/data`` *beside* the checkout (``<checkout>/../shared/data``) when it exists, else
    ``None`` — and :func:`fetch` goes on to the cache and a verified download. The checkout is the
    nearest directory above ``anchor`` (a file or directory) that holds a ``.git`` entry (a
    directory in a clone, a file in a ``git worktree``).
    """
    if os.environ.get("TORCHLIGHT_DATA"):
        return None
    here = Path(anchor).resolve()
    for directory in [here, *here.parents]:
        if (directory / ".git").exists():
            candidate = directory.parent / "shared" / "data"
            return candidate if candidate.is_dir() else None
    return None


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of the file at ``path`` (read in 1 MiB blocks), as checked after a
    download.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _check(path: Path, resource: Resource, origin: str) -> None:
    actual = sha256_file(path)
    if actual != resource.sha256:
        raise ChecksumError(
            f"{path} ({origin}) has SHA-256 {actual}, but {resource.path} should have "
            f"{resource.sha256}. The file is corrupt, truncated or a different release; it was not "
            "used. Replace it with the published file (or delete it to let torchlight download "
            "it again), or pass verify=False to use it anyway."
        )


def _candidates(root) -> list[tuple[str, Path | None]]:
    env = os.environ.get("TORCHLIGHT_DATA")
    return [
        ("root= argument", Path(root).expanduser() if root is not None else None),
        ("$TORCHLIGHT_DATA", Path(env).expanduser() if env else None),
        ("cache", cache_dir()),
    ]


def fetch(
    resource: Resource,
    root: str | os.PathLike | None = None,
    *,
    download: bool = True,
    verify: bool = True,
    progress: bool = True,
) -> Path:
    """The local path of ``resource``, downloading it into the cache if needed (see module doc)."""
    searched: list[str] = []
    for label, base in _candidates(root):
        if base is None:
            searched.append(
                f"  {label}: not given" if label.startswith("root") else f"  {label}: not set"
            )
            continue
        path = base / resource.path
        if path.is_file():
            if verify:
                _check(path, resource, f"found via {label}")
            return path
        state = "missing" if base.is_dir() else "directory does not exist"
        searched.append(f"  {label}: {path} ({state})")

    target = cache_dir() / resource.path
    failures: list[str] = []
    if not download:
        failures.append("  downloading was disabled (download=False)")
    elif os.environ.get("TORCHLIGHT_OFFLINE", "") not in ("", "0"):
        failures.append("  downloading was disabled ($TORCHLIGHT_OFFLINE is set)")
    elif not resource.urls:
        failures.append("  this resource has no download URL")
    else:
        mismatches: list[str] = []
        for url in resource.urls:
            try:
                _download(resource, url, target, progress, verify)
                return target
            except ChecksumError as exc:
                mismatches.append(f"  {url}: {exc}")
            except (OSError, http.client.HTTPException, zipfile.BadZipFile, KeyError) as exc:
                failures.append(f"  {url}: {type(exc).__name__}: {exc}")
        if mismatches:
            raise ChecksumError(
                f"downloaded {resource.path} but its SHA-256 is not the published "
                f"{resource.sha256}; nothing was saved.\n" + "\n".join(mismatches + failures)
            )
    raise DataNotFoundError(_not_found_message(resource, searched, failures, target))


def _not_found_message(resource: Resource, searched, failures, target: Path) -> str:
    if resource.urls:
        source = resource.urls[0]
        how = (
            f"download {source} and extract the entry ending in {resource.member!r}"
            if resource.member
            else f"download {source}"
        )
        how += f" to {target}, or"
    else:
        how = "place it"
    return (
        f"data file {resource.path!r} was not found and could not be downloaded.\n"
        "Searched:\n" + "\n".join(searched) + "\n"
        "Download:\n" + "\n".join(failures) + "\n"
        f"To provide it: {how} set TORCHLIGHT_DATA (or pass root=) to a directory that contains "
        f"{resource.path} (expected SHA-256 {resource.sha256})."
    )


def _download(resource: Resource, url: str, target: Path, progress: bool, verify: bool) -> None:
    """Download ``url`` (or the archive it names) and install ``resource`` at ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    try:
        if resource.member is None:
            _stream(url, part, progress, resource.path, resource.size if verify else None)
        else:
            archive = cache_dir() / "downloads" / _archive_name(url)
            if not archive.is_file():
                archive.parent.mkdir(parents=True, exist_ok=True)
                archive_part = archive.with_name(archive.name + ".part")
                _stream(url, archive_part, progress, archive.name)
                os.replace(archive_part, archive)
            try:
                _extract(archive, resource.member, part, resource.size if verify else None)
            except (zipfile.BadZipFile, KeyError):
                archive.unlink(missing_ok=True)  # a broken archive must not block the next try
                raise
        if verify:
            try:
                _check(part, resource, f"downloaded from {url}")
            except ChecksumError:
                if resource.member is not None:
                    (cache_dir() / "downloads" / _archive_name(url)).unlink(missing_ok=True)
                raise
        os.replace(part, target)  # atomic: a crash never leaves a half file under the real name
    finally:
        part.unlink(missing_ok=True)


def _archive_name(url: str) -> str:
    name = url.rstrip("/").rsplit("/", 1)[-1].replace("%20", " ") or "archive.zip"
    # Two mirrors may use one file name for different bytes; prefix a short hash of the URL.
    return hashlib.sha256(url.encode()).hexdigest()[:8] + "-" + name


def _stream(url: str, dest: Path, progress: bool, desc: str, limit: int | None = None) -> None:
    from tqdm.auto import tqdm  # imported here: nothing else in torchlight.data needs it

    with urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
        status = getattr(response, "status", 200)
        if status is not None and status >= 400:
            raise OSError(f"HTTP status {status}")
        length = response.headers.get("Content-Length") if response.headers else None
        total = int(length) if length and length.isdigit() else None
        received = 0
        with (
            open(dest, "wb") as out,
            tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=desc,
                disable=not progress,
                leave=False,
            ) as bar,
        ):
            while block := response.read(_BLOCK):
                received += len(block)
                if limit is not None and received > limit:
                    raise ChecksumError(
                        f"{url} sends more than the {limit} bytes of the published "
                        f"{desc}; the download was stopped (a different release?)"
                    )
                out.write(block)
                bar.update(len(block))
    if total is not None and received != total:
        raise OSError(f"connection closed after {received} of {total} bytes")


def _extract(archive: Path, member: str, dest: Path, size: int | None = None) -> None:
    """Copy ``archive``'s entry ending in ``member`` to ``dest`` (never to a path named by the
    archive); with ``size``, an entry of any other size is refused before or while copying."""
    with zipfile.ZipFile(archive) as zf:
        names = [
            n
            for n in zf.namelist()
            if not n.startswith("__MACOSX/") and (n == member or n.endswith("/" + member))
        ]
        if not names:
            raise KeyError(f"{archive.name} has no entry named {member!r}")
        info = zf.getinfo(sorted(names, key=len)[0])
        if size is not None and info.file_size != size:
            raise _size_mismatch(archive, info.filename, f"declares {info.file_size} bytes", size)
        copied = 0
        with zf.open(info) as src, open(dest, "wb") as out:
            while block := src.read(_BLOCK):
                copied += len(block)
                if size is not None and copied > size:
                    raise _size_mismatch(archive, info.filename, "inflates beyond that", size)
                out.write(block)


def _size_mismatch(archive: Path, name: str, what: str, size: int) -> ChecksumError:
    return ChecksumError(
        f"{archive} entry {name!r} {what}, but the published file has {size} "
        "bytes; it was not extracted (a different release, a corrupt download, or "
        "a zip bomb). Delete the archive to download it again, or pass "
        "verify=False to use another release."
    )
