"""The one entry point of the monorepo: ``nox -s tests``, ``minimal``, ``oracle``, ``wheels``, ``lint``,
``demo``, ``reproduce``, ``bench``, ``docs``, ``doctest``, ``conformance``, ``gpu``.

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
import tarfile
import zipfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint"]

ROOT = Path(__file__).resolve().parent
PACKAGES = ROOT / "packages"
META = PACKAGES / "torchlight"
# mpich: MPICH's binary wheel (libmpi + mpiexec) for the 2-rank tests of torchlight-distributed;
# mpi4py comes in as that distribution's dependency and finds this MPI through the MPI ABI.
# scikit-learn: the bundled datasets of projects/sklearn-examples (smoke-tested in tests-integration)
# pytest-xdist: the CUDA-simulator run of the conformance kit, one worker per core
TEST_TOOLS = ["pytest", "pytest-xdist", "hypothesis", "tqdm", "matplotlib", "sacrebleu", "mpich", "scikit-learn"]


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
    shared = ROOT.parent / "shared" / "data"  # beside the checkout (when it exists; else cache/download)
    if "TORCHLIGHT_DATA" not in os.environ and shared.is_dir():
        session.env["TORCHLIGHT_DATA"] = str(shared)
    # Multi-threaded OpenBLAS on a busy 2-core machine makes small matmuls ~1000x slower.
    session.env.setdefault("OPENBLAS_NUM_THREADS", "1")
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


@nox.session
def minimal(session: nox.Session) -> None:
    """torchlight-tensor's tests with only what ``pip install torchlight-tensor`` brings (autograd,
    numpy) plus pytest and hypothesis: no scipy, no other distribution. A test that needs more
    skips with a reason naming the distribution to install."""
    session.install("pytest", "hypothesis")
    session.install("-e", str(PACKAGES / "torchlight-autograd"), "-e", str(PACKAGES / "torchlight-tensor"))
    set_test_env(session)
    session.run("python", "-c", "import importlib.util, sys; sys.exit("
                "'scipy is installed: this session must run without it' "
                "if importlib.util.find_spec('scipy') else 0)")
    session.run("pytest", "--import-mode=importlib", "-p", "no:cacheprovider", "-q",
                *(session.posargs or ["packages/torchlight-tensor/tests"]))


TORCH = "torch==2.13.0"  # the PyTorch the oracle tests and the benchmarks compare with (CPU wheel)


def install_torch(session: nox.Session) -> bool:
    """Install PyTorch CPU 2.13.0 if it can be; ``False`` (logged) when it cannot. pip's
    ``PIP_FIND_LINKS`` (a local wheel directory) is passed on to uv, which does not read it."""
    links = os.environ.get("PIP_FIND_LINKS")
    try:
        session.install(TORCH, *(["--find-links", links] if links else []))
    except nox.command.CommandFailed:
        session.log(f"{TORCH} is not installable here")
        return False
    return True


#: the tests that compare with PyTorch (they skip where it is missing): the ``oracle``-marked tests
#: of the distributions, and every test under tests-integration/compat
ORACLE_DIRS = ["tests-integration/compat"]


@nox.session
def oracle(session: nox.Session) -> None:
    """The tests that use PyTorch as an oracle, with PyTorch installed so that they run instead of
    skipping. Fails if PyTorch cannot be installed."""
    session.install(*TEST_TOOLS)
    install_editable(session)
    if not install_torch(session):
        session.error(f"{TORCH} could not be installed: the oracle tests would only skip")
    set_test_env(session)
    pytest = ["pytest", "--import-mode=importlib", "-p", "no:cacheprovider", "-q", *session.posargs]
    marked = [str(p.relative_to(ROOT)) for p in sorted(PACKAGES.glob("*/tests"))]
    session.run(*pytest, "-m", "oracle", *marked)
    dirs = [d for d in ORACLE_DIRS if (ROOT / d).is_dir()]
    if dirs:
        session.run(*pytest, *dirs)


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
    """The demo: the mini-GPT trains ~3 minutes on tiny Shakespeare and writes a sample
    (``nox -s demo -- --minutes 1`` for a shorter run)."""
    install_editable(session)
    session.install("tqdm", "threadpoolctl", "matplotlib")
    set_test_env(session)
    session.run("python", "projects/mini-gpt/demo.py", *session.posargs)


@nox.session
def reproduce(session: nox.Session) -> None:
    """One headline result: ``nox -s reproduce -- <project> [train.py flags]`` with <project> one of
    mini-gpt, sentiment, translation, sklearn. Trains the project's headline configuration, evaluates
    it and prints the metric beside the README's (``projects/reproduce.py``)."""
    if not session.posargs:
        session.error("name a project: nox -s reproduce -- mini-gpt|sentiment|translation|sklearn")
    install_editable(session)
    session.install("tqdm", "threadpoolctl", "matplotlib", "sacrebleu", "scikit-learn")
    set_test_env(session)
    session.run("python", "projects/reproduce.py", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """The backends side by side: ``bench_backends.py`` (numpy backend, numba backend, PyTorch CPU
    in one process), then the GPT step's phases (``bench_gpt_phases.py``). PyTorch 2.13.0 is
    installed when it can be (pip's ``PIP_FIND_LINKS`` is passed on to uv); otherwise its columns
    stay empty. ``nox -s bench -- --threads 2 [--quick]``: ``--threads N`` goes to both scripts,
    the rest to ``bench_backends.py``."""
    install_editable(session)
    if not install_torch(session):
        session.log("the benchmarks run without PyTorch")
    scripts = ROOT / "tests-integration" / "benchmarks"
    args = list(session.posargs)
    threads = args[args.index("--threads"):args.index("--threads") + 2] if "--threads" in args else []
    session.run("python", str(scripts / "bench_backends.py"), *args)
    session.run("python", str(scripts / "bench_gpt_phases.py"), *threads)


@nox.session
def conformance(session: nox.Session) -> None:
    """The conformance kit against every backend, one pytest process per execution model: numpy
    and numba (JIT), numba with ``NUMBA_DISABLE_JIT=1`` (``tiny`` inputs), cuda under numba's CUDA
    simulator (``NUMBA_ENABLE_CUDASIM=1`` must be set before numba is imported). Then every cuda
    kernel is compiled to PTX for a real GPU (needs NVVM from ``numba-cuda[cu13]``, not a GPU)."""
    session.install(*TEST_TOOLS)  # the `tests` environment (scipy included: the numpy backend's erf)
    install_editable(session)
    set_test_env(session)
    pytest = ["pytest", "--import-mode=importlib", "-p", "no:cacheprovider", "-q", *session.posargs]
    kits = [str(f.relative_to(ROOT)) for f in sorted(PACKAGES.glob("*/tests/test_conformance_*.py"))]
    session.run(*pytest, *[k for k in kits if "backend-cuda" not in k])
    numba_kit = [k for k in kits if k.endswith("test_conformance_numba.py")]
    if numba_kit:
        session.run(*pytest, *numba_kit, env={"NUMBA_DISABLE_JIT": "1", "TORCHLIGHT_CONFORMANCE_PROFILE": "tiny"})
    cuda_tests = PACKAGES / "torchlight-backend-cuda" / "tests"
    if cuda_tests.is_dir():
        # The simulator interprets every GPU thread in Python: one pytest worker per core
        # (measured: ~6 min of CPU for the cuda kit, half the wall time on 2 cores).
        session.run(*pytest, "-n", str(min(os.cpu_count() or 1, 4)), str(cuda_tests.relative_to(ROOT)),
                    env={"NUMBA_ENABLE_CUDASIM": "1"})
        session.install("numba-cuda[cu13]")
        session.run(*pytest, str((cuda_tests / "test_ptx.py").relative_to(ROOT)))


@nox.session
def gpu(session: nox.Session) -> None:
    """The real-GPU check, on a machine with an NVIDIA GPU: the conformance kit on the device, then
    the GPT training step and 4096x4096 matmul benchmarks (PyTorch beside when installed), all
    figures in one JSON file. ``nox -s gpu -- --out gpu_check.json``; the CUDA wheels are
    ``numba-cuda[$TORCHLIGHT_CUDA_EXTRA]`` (``cu12`` by default, ``cu13`` for newer drivers)."""
    extra = os.environ.get("TORCHLIGHT_CUDA_EXTRA", "cu12")
    session.install("pytest", "hypothesis", f"numba-cuda[{extra}]")
    install_editable(session)
    session.run("python", "tests-integration/gpu_check.py", *session.posargs)


# --- documentation ---------------------------------------------------------------------------
DOCS = ROOT / "docs"
DOCS_TOOLS = ["sphinx>=7.2,<9", "myst-parser>=3", "furo>=2024.1", "sphinx-copybutton>=0.5"]
MATHJAX = "mathjax@3.2.2"  # 3.x: its es5/tex-mml-chtml.js is what Sphinx's mathjax_path loads
MATHJAX_CACHE = DOCS / "_build" / "_cache" / (MATHJAX.replace("@", "-") + "-local")
# combined MathJax bundles we do not load (only es5/tex-mml-chtml.js is), plus the CDN redirector
_MATHJAX_SKIP = {"latest.js", "node-main.js", "tex-chtml.js", "tex-chtml-full.js", "tex-svg.js",
                 "tex-svg-full.js", "tex-mml-svg.js", "mml-chtml.js", "mml-svg.js",
                 "tex-chtml-full-speech.js"}


def _require_dot(session: nox.Session) -> None:
    if shutil.which("dot") is None:
        session.error(
            "Graphviz's `dot` is not on PATH: the docs render their diagrams with it at build "
            "time (sphinx.ext.graphviz -> SVG). Install Graphviz: `apt-get install -y graphviz` "
            "(Debian/Ubuntu), `brew install graphviz` (macOS), `conda install graphviz`."
        )


def _mathjax(session: nox.Session) -> Path:
    """A local MathJax (the npm package, fetched once with `npm pack`), so the built site typesets
    maths offline. Returns the directory to add to Sphinx's html_static_path (holds mathjax/es5)."""
    static = MATHJAX_CACHE / "static"
    if (static / "mathjax" / "es5" / "tex-mml-chtml.js").exists():
        return static
    if shutil.which("npm") is None:
        session.error(f"npm is needed once to fetch {MATHJAX} (the docs serve MathJax locally)")
    tmp = Path(session.create_tmp()).resolve()
    session.run("npm", "pack", MATHJAX, "--silent", "--pack-destination", str(tmp), external=True)
    tgz = tmp / (MATHJAX.replace("@", "-") + ".tgz")
    dest = static / "mathjax"
    shutil.rmtree(MATHJAX_CACHE, ignore_errors=True)
    with tarfile.open(tgz) as tar:
        for member in tar.getmembers():
            rel = Path(member.name).relative_to("package")
            if not member.isfile() or rel.parts[0] not in ("es5", "LICENSE"):
                continue
            if len(rel.parts) == 2 and rel.parts[1] in _MATHJAX_SKIP:
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = tar.extractfile(member).read()
            if rel.suffix == ".js":
                # speech-rule-engine's defaults name jsdelivr (mathmaps for node, an XPath polyfill
                # for old browsers). In the browser MathJax loads its maps from its own sre/ path,
                # so these are never fetched; make them relative so that no CDN address ships.
                data = data.replace(b"https://cdn.jsdelivr.net/npm/", b"./")
            target.write_bytes(data)
    return static


def _docs_env(session: nox.Session) -> None:
    _require_dot(session)
    session.env["TORCHLIGHT_MATHJAX_STATIC"] = str(_mathjax(session))
    session.install(*DOCS_TOOLS, "pytest", "hypothesis")
    install_editable(session)
    set_test_env(session)


@nox.session
def docs(session: nox.Session) -> None:
    """The Sphinx site into docs/_build/html (warnings fail), its tutorial code blocks run as
    doctests, then the site opened in headless Chromium to check the maths was typeset.

    Needs Graphviz's `dot` and npm (once, to fetch MathJax); Chromium for the last step (the
    check skips without it unless TORCHLIGHT_DOCS_STRICT=1, as in CI).
    """
    _docs_env(session)
    build, doctrees = DOCS / "_build", DOCS / "_build" / "doctrees"
    common = ["-W", "--keep-going", "-q", "-d", str(doctrees)]
    # -E: a fresh environment every time (autodoc cannot see that a docstring changed)
    session.run("sphinx-build", "-b", "html", "-E", "-j", "auto", *common, str(DOCS), str(build / "html"))
    session.run("sphinx-build", "-b", "doctest", *common, str(DOCS), str(build / "doctest"))
    session.run("pytest", "-m", "slow", "-p", "no:cacheprovider", "tests-integration/test_docs_site.py")


@nox.session
def doctest(session: nox.Session) -> None:
    """Only run the docs' code blocks (``{doctest}``/``{testcode}``) against the installed code."""
    _docs_env(session)
    build = DOCS / "_build"
    session.run("sphinx-build", "-b", "doctest", "-W", "--keep-going", "-q", "-d",
                str(build / "doctrees"), str(DOCS), str(build / "doctest"), *session.posargs)
