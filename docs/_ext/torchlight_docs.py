"""Sphinx extension of the torchlight docs: the generated API reference and three guards.

API reference
    On every build, for every distribution under ``packages/`` that is *installed*, one page per
    public module (a module whose dotted path has no ``_``-prefixed part) listing every name of its
    ``__all__`` (or, without ``__all__``, the classes and functions it defines). Each object is
    documented once, at its *canonical* name: the shallowest public module of the distribution
    that defines it which exports it under its own name (``torchlight.Tensor``, not
    ``torchlight.tensor.tensor.Tensor``); every other module that exports it links there. That
    keeps cross-references unambiguous. Distributions that are not installed are listed as such,
    so a partial checkout still builds. The pages go to ``reference/api/`` (git-ignored).

Guards (each a Sphinx warning, so ``-W`` fails the build)
    * a public module that fails to import, or an ``__all__`` naming something that is missing;
    * a plain ``python`` code fence in ``tutorials/``, the quickstart or the landing page: they use
      ``{doctest}`` / ``{testcode}`` so that ``sphinx-build -b doctest`` executes every block;
    * a CDN address in the built HTML, JavaScript or CSS (the site must work offline: MathJax is
      served locally).

Rendering fixes
    * a class whose only base is ``object`` gets no ``:show-inheritance:`` (no empty "Bases:");
    * viewcode's ``[docs]`` links from a source page back to the reference are re-pointed at the
      anchor that exists (viewcode names them all after the first module documenting any object
      of that file); ``tests-integration/test_docs_site.py`` checks every such link.
"""

from __future__ import annotations

import importlib
import inspect
import posixpath
import re
import shutil
import sys
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path

from sphinx.errors import ConfigError
from sphinx.util import logging
from sphinx.util.docstrings import prepare_docstring

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Sphinx depends on tomli on 3.10
    import tomli as tomllib

logger = logging.getLogger(__name__)

API_DIR = "reference/api"
CDN = re.compile(
    r"https?://(?:[\w.-]*\.)?(?:jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com|"
    r"cdn\.[\w.-]+|polyfill\.io|fonts\.googleapis\.com|fonts\.gstatic\.com|mathjax\.org/mathjax)"
)
EXECUTED_PAGES = {"quickstart", "index"}  # besides tutorials/: pages whose code must all run
PY_FENCE = re.compile(r"^\s*(```+|~~~+)\s*(python3?|py|pycon|ipython3?)\s*$", re.M)


@dataclass
class Dist:
    name: str
    path: Path
    description: str = ""
    requires: list = field(default_factory=list)
    entry_points: dict = field(default_factory=dict)
    version: str | None = None  # None: not installed
    modules: list = field(default_factory=list)  # dotted names, public only


@dataclass
class Entry:
    dist: Dist
    module: str
    name: str
    obj: object


# --- discovery ---------------------------------------------------------------------------------
def discover(root: Path) -> list[Dist]:
    dists = []
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        meta = tomllib.loads(pyproject.read_text())
        project = meta.get("project", {})
        src = pyproject.parent / "src" / "torchlight"
        if not src.is_dir():  # the code-less meta-package
            continue
        d = Dist(
            name=project.get("name", pyproject.parent.name),
            path=pyproject.parent,
            description=project.get("description", ""),
            requires=list(project.get("dependencies", [])),
            entry_points=project.get("entry-points", {}),
        )
        try:
            d.version = dist_version(d.name)
        except PackageNotFoundError:
            d.version = None
        d.modules = _public_modules(src)
        dists.append(d)
    return dists


def _public_modules(src: Path) -> list[str]:
    mods = []
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        # a module inside a directory without __init__.py is importable only below a namespace
        # level such as torchlight/backends/; anything else is not a package module
        mods.append(".".join(parts))
    return sorted(set(mods), key=lambda m: (m.count("."), m))


def _public_names(mod) -> list[str]:
    names = getattr(mod, "__all__", None)
    if names is not None:
        return list(names)
    return [
        n
        for n, v in vars(mod).items()
        if not n.startswith("_")
        and (inspect.isclass(v) or inspect.isfunction(v))
        and getattr(v, "__module__", None) == mod.__name__
    ]


def _is_code_object(obj) -> bool:
    return inspect.isclass(obj) or inspect.isroutine(obj)


def _key(obj, name):
    if inspect.ismodule(obj):
        return ("module", obj.__name__)
    if _is_code_object(obj):
        return ("code", id(obj))
    return ("data", id(obj), name)


# --- generation --------------------------------------------------------------------------------
def build_reference(root: Path, out: Path) -> tuple[list[Dist], list[str]]:
    """Write the API pages under ``out``; return the distributions and the problems found."""
    problems: list[str] = []
    dists = discover(root)
    module_dist: dict[str, Dist] = {}
    modules: dict[str, object] = {}
    entries: list[Entry] = []
    for d in dists:
        if d.version is None:
            continue
        for modname in d.modules:
            try:
                mod = importlib.import_module(modname)
            except Exception as exc:  # noqa: BLE001 - reported as a build warning
                problems.append(
                    f"API reference: {modname} (distribution {d.name}) failed to import: "
                    f"{type(exc).__name__}: {exc}"
                )
                continue
            modules[modname] = mod
            module_dist[modname] = d
            for name in _public_names(mod):
                if not hasattr(mod, name):
                    problems.append(
                        f"API reference: {modname}.__all__ names {name!r}, which does not exist"
                    )
                    continue
                entries.append(Entry(d, modname, name, getattr(mod, name)))

    # canonical location of each object
    groups: dict = {}
    for e in entries:
        groups.setdefault(_key(e.obj, e.name), []).append(e)
    canonical: dict = {}
    for key, group in groups.items():
        if key[0] == "module":
            continue
        obj = group[0].obj
        cands = [e for e in group if f"{e.module}.{e.name}" not in modules]
        if not cands:
            cands = group
        if key[0] == "code":
            home = module_dist.get(_home_module(obj, modules))
            in_home = [e for e in cands if e.dist is home]
            cands = in_home or cands
            own_name = [e for e in cands if e.name == getattr(obj, "__name__", None)]
            cands = own_name or cands
        best = min(cands, key=lambda e: (e.module.count("."), e.module))
        canonical[key] = best

    written: set[Path] = set()
    for d in dists:
        if d.version is None:
            continue
        written.add(_write(out / f"{d.name}.rst", _dist_page(d, modules)))
        for modname in d.modules:
            if modname not in modules:
                continue
            mine = [e for e in entries if e.module == modname]
            text = _module_page(d, modname, mine, canonical, modules)
            written.add(_write(out / d.name / f"{modname}.rst", text))
    written.add(_write(out / "_status.inc", _status(dists, entries)))
    for stale in list(out.rglob("*")):
        if stale.is_file() and stale not in written:
            stale.unlink()
    return dists, problems


def _home_module(obj, modules) -> str | None:
    mod = getattr(obj, "__module__", None)
    while mod and mod not in modules:
        mod = mod.rpartition(".")[0]
    return mod


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _title(text: str, ch: str = "=") -> str:
    return f"{text}\n{ch * len(text)}\n"


def _dist_page(d: Dist, modules) -> str:
    lines = [_title(d.name), ""]
    lines.append(f"*version {d.version}* — {d.description}\n")
    deps = ", ".join(f"``{r}``" for r in d.requires) or "nothing (pure Python)"
    lines.append(f"**Depends on:** {deps}\n")
    for group, eps in d.entry_points.items():
        items = ", ".join(f"``{k} = {v}``" for k, v in eps.items())
        lines.append(f"**Entry points** (group ``{group}``): {items}\n")
    lines.append(f"**Source:** ``packages/{d.path.name}/src/``\n")
    lines += [".. toctree::", "   :maxdepth: 1", "   :caption: Modules", ""]
    for modname in d.modules:
        if modname in modules:
            lines.append(f"   {modname} <{d.name}/{modname}>")
    return "\n".join(lines) + "\n"


def _module_page(d: Dist, modname: str, mine: list[Entry], canonical, modules) -> str:
    lines = [_title(modname), "", f".. automodule:: {modname}", ""]
    lines.append(f"*Distribution* :doc:`{d.name} <../{d.name}>`\n")
    rows, notes, here = [], [], []
    for e in mine:
        if inspect.ismodule(e.obj):
            target = e.obj.__name__
            ref = f":py:mod:`{target}`" if target in modules else f"``{target}``"
            notes.append(f"* ``{e.name}`` — the module {ref}")
            continue
        c = canonical[_key(e.obj, e.name)]
        full = f"{c.module}.{c.name}"
        if c is e:
            here.append(e)
        if c.name == e.name:
            rows.append((f":py:obj:`~{full}`", _summary(c)))
        else:
            notes.append(f"* ``{e.name}`` — another name for :py:obj:`{full}`")
    # every name below is fully qualified: leave the module context automodule set
    lines += [".. currentmodule:: None", ""]
    if rows or notes:
        lines.append(f".. rubric:: Public names ({len(mine)})\n")
    if rows:
        lines += [".. list-table::", "   :widths: 30 70", "   :class: tl-summary", ""]
        for ref, summary in rows:
            lines += [f"   * - {ref}", f"     - {summary}" if summary else "     -"]
        lines.append("")
    if notes:
        lines += notes + [""]
    for e in here:
        full = f"{e.module}.{e.name}"
        if inspect.isclass(e.obj) and issubclass(e.obj, BaseException):
            lines += [f".. autoexception:: {full}", "   :members:", "   :show-inheritance:", ""]
        elif inspect.isclass(e.obj):
            # a class whose only base is ``object`` would print an empty "Bases:" line
            inherits = [""] if e.obj.__bases__ == (object,) else ["   :show-inheritance:", ""]
            lines += [f".. autoclass:: {full}", "   :members:", "   :undoc-members:", *inherits]
        elif inspect.isroutine(e.obj):
            lines += [f".. autofunction:: {full}", ""]
        else:
            lines += [f".. autodata:: {full}", ""]
    return "\n".join(lines) + "\n"


_SENTENCE_END = re.compile(r"\.(?=\s|$)")


def _summary(e: Entry) -> str:
    """The first sentence of an object's own docstring, as reST that is safe on its own line.

    (autosummary's extraction can cut a sentence inside ``literal`` text: ``0 .. n``.) The cut is
    made only where inline markup is balanced; a trailing ``::`` becomes ``:``.
    """
    obj = e.obj
    if inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    else:
        doc = _attribute_doc(e)
    if not isinstance(doc, str) or not doc.strip():
        return ""
    para = []
    for line in inspect.cleandoc(doc).splitlines():
        if not line.strip():
            if para:
                break
            continue
        para.append(line.strip())
    text = " ".join(para)
    for m in _SENTENCE_END.finditer(text):
        head = text[: m.end()]
        if (
            head.count("``") % 2 == 0
            and head.replace("``", "").count("`") % 2 == 0
            and head.count("(") == head.count(")")
        ):
            text = head
            break
    if text.endswith("::"):
        text = text[:-1]
    return text


def _attribute_doc(e: Entry) -> str | None:
    """The doc-comment of a module-level constant (the string literal after the assignment)."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        docs = ModuleAnalyzer.for_module(e.module).find_attr_docs()
    except Exception:  # noqa: BLE001 - no source: no summary
        return None
    lines = docs.get(("", e.name))
    return "\n".join(lines) if lines else None


def _status(dists: list[Dist], entries: list[Entry]) -> str:
    rows = [
        "| distribution | version | public modules | exported names (all modules) |",
        "|---|---|---|---|",
    ]
    for d in dists:
        if d.version is None:
            rows.append(f"| {d.name} | *not installed* | — | — |")
            continue
        n = sum(1 for e in entries if e.dist is d)
        rows.append(
            f"| {{doc}}`{d.name} </reference/api/{d.name}>` | {d.version} | {len(d.modules)} | {n} |"
        )
    return "\n".join(rows) + "\n"


# --- Sphinx hooks ------------------------------------------------------------------------------
def _on_config_inited(app, config):
    static = Path(config.torchlight_mathjax_static)
    if not (static / "mathjax" / "es5" / "tex-mml-chtml.js").is_file():
        raise ConfigError(
            f"MathJax is not at {static}/mathjax/es5/tex-mml-chtml.js. The site serves MathJax "
            "itself (no CDN): build with `nox -s docs`, which fetches the npm package "
            "mathjax@3.2.2, or point $TORCHLIGHT_MATHJAX_STATIC at a directory holding mathjax/es5/."
        )


def _on_builder_inited(app):
    root = Path(app.confdir).parent
    if app.builder.format == "html":
        # viewcode skips a source page that is newer than its module, so a page written by an
        # older build would keep its old links: start the source pages afresh
        shutil.rmtree(Path(app.outdir) / "_modules", ignore_errors=True)
    _, problems = build_reference(root, Path(app.srcdir) / API_DIR)
    problems += _write_tape_diagram(Path(app.srcdir) / TAPE_DOT)
    _write_results(Path(app.srcdir), root)
    for p in problems:
        logger.warning(p, type="torchlight", subtype="apiref")


TAPE_DOT = "tutorials/_generated/mlp_tape.dot"

# project pages include the "## Results" section of their project's README, when it has one
RESULTS = {  # docs page -> project directory
    "projects/sentiment": "projects/sentiment-classifier",
    "projects/translation": "projects/machine-translation",
    "projects/mini-gpt": "projects/mini-gpt",
    "examples/sklearn": "projects/sklearn-examples",
}
_MD_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})(\s)", re.M)


def _write_results(srcdir: Path, root: Path) -> None:
    """``<page>-results.inc`` beside each project page: the README's measured results, or a
    pointer to the README while it has none (a placeholder does not count)."""
    for page, project in RESULTS.items():
        out = srcdir / Path(page).parent / "_generated" / f"{Path(page).name}-results.inc"
        text = _readme_results(root, project)
        if text is None:
            text = (
                f"See the project README (`{project}/README.md`) for how to run it and the "
                "measured results: this page does not repeat numbers it cannot regenerate.\n"
            )
        _write(out, text)


def _readme_results(root: Path, project: str) -> str | None:
    readme = root / project / "README.md"
    if not readme.is_file():
        return None
    lines = readme.read_text().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if re.match(r"##\s+Results?\b", l))
    except StopIteration:
        return None
    qualifier = re.sub(r"^##\s+Results?\b\s*", "", lines[start]).strip()
    body, fence = [], None
    for line in lines[start + 1 :]:
        marker = re.match(r"\s*(```+|~~~+)", line)
        if marker and (fence is None or marker.group(1).startswith(fence)):
            fence = None if fence else marker.group(1)[:3]
        elif fence is None and re.match(r"##\s", line):
            break
        body.append(line)
    if not "\n".join(body).strip() or any("PLACEHOLDER" in l or "TODO" in l for l in body):
        return None
    # headings (outside code fences): the section's subsections start at level 3 on the page
    levels, fence = [], None
    for line in body:
        marker = re.match(r"\s*(```+|~~~+)", line)
        if marker:
            fence = None if fence else marker.group(1)[:3]
        elif fence is None and _HEADING.match(line):
            levels.append(len(_HEADING.match(line).group(1)))
    shift = 3 - min(levels) if levels else 0
    out, fence = [], None
    for line in body:
        marker = re.match(r"\s*(```+|~~~+)", line)
        if marker:
            fence = None if fence else marker.group(1)[:3]
        elif fence is None and shift:
            line = _HEADING.sub(
                lambda m: "#" * max(1, min(6, len(m.group(1)) + shift)) + m.group(2), line
            )
        out.append(line)
    text = "\n".join(out).strip()

    def link(m):
        bang, label, target = m.groups()
        if re.match(r"https?://", target):
            return m.group(0)
        path = (root / project / target).resolve()
        if bang:  # an image: re-point it from the docs page's directory, drop it if missing
            if not path.is_file() or root.resolve() not in path.parents:
                return ""
            rel = Path("../..") / path.relative_to(root.resolve())
            return f"![{label}]({rel.as_posix()})"
        return label  # a repository file or an anchor of the README: keep the words only

    intro = (
        f"*Measured, from `{project}/README.md`" + (f" — {qualifier}" if qualifier else "") + ":*"
    )
    return intro + "\n\n" + _MD_LINK.sub(link, text) + "\n"


def _write_tape_diagram(path: Path) -> list[str]:
    """The jit tutorial's diagram, traced from a real model at build time (``tape.to_dot()``)."""
    try:
        import torchlight as tl
        import torchlight.jit  # noqa: F401
        import torchlight.nn as nn
    except ImportError as exc:
        _write(
            path,
            f'digraph tape {{ note [shape=note, label="not drawn: {exc.name} is not installed"]; }}\n',
        )
        return []
    try:
        tl.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
        dot = tl.jit.trace(net, tl.randn(3, 4)).to_dot()
    except Exception as exc:  # noqa: BLE001 - the tutorial would show a stale picture
        _write(path, 'digraph tape { note [shape=note, label="tracing failed"]; }\n')
        return [f"jit tutorial diagram: tracing a small MLP failed: {type(exc).__name__}: {exc}"]
    _write(path, dot if dot.endswith("\n") else dot + "\n")
    return []


def _on_process_docstring(app, what, name, obj, options, lines):
    """A module constant (``MAP_OPS``, a dict of resources) has no docstring of its own: autodoc
    would show its *type's* (``tuple``, ``dict``), which is noise (and not valid reST)."""
    if what not in ("data", "attribute") or inspect.isclass(obj) or inspect.isroutine(obj):
        return
    type_doc = getattr(type(obj), "__doc__", None)
    if (
        isinstance(type_doc, str)
        and " ".join(lines).split() == " ".join(prepare_docstring(type_doc)).split()
    ):
        lines[:] = []


def _on_process_bases(app, name, obj, options, bases):
    """``Bases: object`` says nothing; drop it (other bases are kept)."""
    bases[:] = [b for b in bases if b is not object]


_BACKLINK = re.compile(r'(<a class="viewcode-back" href=")([^"#]*)#([^"]+)(")')


def _on_html_page_context(app, pagename, templatename, context, doctree):
    """Point viewcode's ``[docs]`` links at the anchors that exist.

    viewcode builds every back-link of a source page as ``<first documenting module>.<name>``,
    but the objects of one source file may be documented under different modules
    (``nn.MSELoss`` in ``torchlight.nn``, ``mse_loss`` in ``torchlight.nn.functional``): each link
    is re-pointed at the Python-domain object of that name documented on the linked page."""
    if not pagename.startswith("_modules/") or "body" not in context:
        return
    objects = app.env.get_domain("py").objects
    by_page: dict = {}
    for full, entry in objects.items():
        by_page.setdefault(entry.docname, []).append((full, entry.node_id))
    base = pagename.rsplit("/", 1)[0]

    def fix(m):
        head, href, anchor, tail = m.groups()
        docname = posixpath.normpath(posixpath.join(base, href))
        docname = (
            docname[: -len(app.builder.out_suffix)]
            if docname.endswith(app.builder.out_suffix)
            else docname
        )
        here = dict(by_page.get(docname, []))
        if anchor in here.values():
            return m.group(0)
        # a reference page documents its objects as ``<page module>.<qualified name>``; the
        # qualified name is a tail of the anchor (longest first: ``Tensor.sum`` before ``sum``)
        page_module = docname.rpartition("/")[2]
        parts = anchor.split(".")
        for k in range(len(parts) - 1, 0, -1):
            full = page_module + "." + ".".join(parts[-k:])
            if full in here:
                return f"{head}{href}#{here[full]}{tail}"
        return m.group(0)

    context["body"] = _BACKLINK.sub(fix, context["body"])


def _on_source_read(app, docname, source):
    if not (docname.startswith("tutorials/") or docname in EXECUTED_PAGES):
        return
    for m in PY_FENCE.finditer(source[0]):
        line = source[0].count("\n", 0, m.start()) + 1
        logger.warning(
            f"a plain ```{m.group(2)} fence is never executed: use ```{{doctest}} (>>> prompts) "
            "or ```{testcode} so that the doctest builder runs it",
            location=(docname, line),
            type="torchlight",
            subtype="fence",
        )


def _on_build_finished(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in [*out.rglob("*.html"), *out.rglob("*.js"), *out.rglob("*.css")]:
        m = CDN.search(page.read_text(errors="replace"))
        if m:
            logger.warning(
                f"{page.relative_to(app.outdir)} references a CDN ({m.group(0)}): the site must "
                "work offline",
                type="torchlight",
                subtype="cdn",
            )


def setup(app):
    app.add_config_value("torchlight_mathjax_static", "", "env")
    app.connect("config-inited", _on_config_inited)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("source-read", _on_source_read)
    app.connect("autodoc-process-docstring", _on_process_docstring)
    app.connect("autodoc-process-bases", _on_process_bases)
    app.connect("build-finished", _on_build_finished)
    # before any handler that returns a template name (html-page-context stops at the first result)
    app.connect("html-page-context", _on_html_page_context, priority=100)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
