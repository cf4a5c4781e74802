"""The built documentation site typesets its maths offline.

``nox -s docs`` builds the site into ``docs/_build/html`` and then runs this file. It opens a maths
page in headless Chromium with every host name unresolvable (so nothing can come from a CDN),
lets MathJax run, dumps the DOM and checks that the formulas became MathJax output
(``mjx-container`` elements) with no raw ``$$`` left. A second test scans every built page for
scripts or stylesheets loaded from the network.

Both skip, with the reason, when the site has not been built or Chromium is missing, unless
``TORCHLIGHT_DOCS_STRICT=1`` (set by ``.ci/run``), which turns those skips into failures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"
MATHS_PAGE = SITE / "tutorials" / "02-autograd.html"
STRICT = os.environ.get("TORCHLIGHT_DOCS_STRICT") == "1"

pytestmark = pytest.mark.slow


def _skip_or_fail(reason: str):
    if STRICT:
        pytest.fail(f"{reason} (TORCHLIGHT_DOCS_STRICT=1)")
    pytest.skip(reason)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _site():
    if not (SITE / "index.html").is_file():
        _skip_or_fail(f"the docs site is not built ({SITE} has no index.html): run `nox -s docs`")
    return SITE


def test_maths_is_typeset_offline_in_chromium():
    _site()
    browser = _chromium()
    if browser is None:
        _skip_or_fail("Chromium is not installed (Debian: apt-get install -y chromium)")
    assert MATHS_PAGE.is_file(), f"{MATHS_PAGE} was not built"
    raw = MATHS_PAGE.read_text()
    assert "$$" not in raw.replace("\\$", ""), "dollarmath left a raw $$ in the HTML"
    assert raw.count('class="math') >= 3, "the maths page should hold several formulas"
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            # every host name fails to resolve: anything not served from the site cannot load
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--virtual-time-budget=10000",
            "--dump-dom",
            MATHS_PAGE.as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    dom = proc.stdout
    assert proc.returncode == 0 and dom.strip(), (
        f"chromium failed (exit {proc.returncode}): {proc.stderr[-2000:]}"
    )
    containers = dom.count("<mjx-container")
    assert containers >= 3, (
        f"MathJax did not typeset {MATHS_PAGE.name}: {containers} mjx-container elements in the DOM"
    )
    assert "$$" not in dom, "raw $$ left in the typeset page"
    assert "<mjx-merror" not in dom, "MathJax reported a TeX error on the page"
    # the display formulas themselves were replaced: no \[ ... \] left in a math block
    leftover = re.findall(r'<div class="math[^"]*">\s*\\\[', dom)
    assert not leftover, f"{len(leftover)} display formulas were not typeset"


def test_every_public_name_is_in_the_reference():
    """Each module page of the generated API reference shows every name of the module's
    ``__all__`` (documented there, or linked to where it is documented)."""
    import importlib

    site = _site()
    pages = sorted((site / "reference" / "api").glob("*/*.html"))
    if not pages:
        pytest.fail("the API reference has no module pages")
    missing = []
    for page in pages:
        modname = page.stem
        try:
            mod = importlib.import_module(modname)
        except ImportError as exc:
            missing.append(f"{modname}: not importable here ({exc})")
            continue
        text = re.sub(r"<[^>]+>", " ", page.read_text())
        for name in getattr(mod, "__all__", ()):
            if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text):
                missing.append(f"{modname}.{name}")
    assert not missing, "names missing from the API reference: " + ", ".join(missing[:30])


NETWORK_ASSET = re.compile(
    r"""<(?:script[^>]*\ssrc|link[^>]*\shref|img[^>]*\ssrc)\s*=\s*["'](?:https?:)?//""", re.I
)
CDN = re.compile(r"jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com|//cdn\.|fonts\.googleapis", re.I)


def test_nothing_is_loaded_from_the_network():
    site = _site()
    pages = sorted(site.rglob("*.html"))
    assert pages
    bad = []
    for page in pages:
        text = page.read_text(errors="replace")
        for m in NETWORK_ASSET.finditer(text):
            bad.append(f"{page.relative_to(site)}: {m.group(0)}")
        if CDN.search(text):
            bad.append(f"{page.relative_to(site)}: mentions a CDN ({CDN.search(text).group(0)})")
    assert not bad, "pages load assets from the network:\n" + "\n".join(bad[:20])
    shipped = [*site.rglob("*.js"), *site.rglob("*.css")]
    cdn_in_assets = [
        str(f.relative_to(site)) for f in shipped if CDN.search(f.read_text(errors="replace"))
    ]
    assert not cdn_in_assets, f"CDN addresses in shipped assets: {cdn_in_assets[:10]}"
    mathjax = site / "_static" / "mathjax" / "es5" / "tex-mml-chtml.js"
    assert mathjax.is_file(), "MathJax is not shipped inside the site"
    assert 'src="../_static/mathjax/es5/tex-mml-chtml.js' in MATHS_PAGE.read_text()


_HREF_WITH_ANCHOR = re.compile(r'href="([^"#:]+\.html)#([^"]+)"')
_ID = re.compile(r'\sid="([^"]+)"')


def test_source_and_docs_links_point_at_existing_anchors():
    """viewcode's links both ways: ``[source]`` from the reference into ``_modules/`` and
    ``[docs]`` from a source page back to the reference land on an anchor that exists."""
    import html

    site = _site()
    ids: dict = {}

    def anchors(page: Path):
        if page not in ids:
            ids[page] = set(_ID.findall(page.read_text())) if page.is_file() else None
        return ids[page]

    checked, broken = 0, []
    for page in sorted(site.rglob("*.html")):
        in_source = "_modules" in page.relative_to(site).parts
        for href, anchor in _HREF_WITH_ANCHOR.findall(page.read_text()):
            target = (page.parent / href).resolve()
            if in_source == ("_modules" in target.relative_to(site.resolve()).parts):
                continue  # only links between the reference and the source pages
            checked += 1
            found = anchors(target)
            if found is None or html.unescape(anchor) not in found:
                broken.append(f"{page.relative_to(site)} -> {href}#{anchor}")
    assert checked > 100, f"only {checked} links between the reference and the source pages"
    assert not broken, f"{len(broken)} links to missing anchors:\n" + "\n".join(broken[:40])


def test_no_empty_bases_line():
    """A class that only derives from ``object`` shows no "Bases:" line at all."""
    site = _site()
    empty = [
        str(page.relative_to(site))
        for page in sorted((site / "reference").rglob("*.html"))
        if re.search(r"<p>Bases:\s*</p>", page.read_text())
    ]
    assert not empty, f"{len(empty)} pages print an empty 'Bases:' line: {empty[:20]}"
