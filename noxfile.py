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
import shlex
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
# onnx, onnxruntime: torchlight.onnx.export's tests run the exported graphs (optional extra)
TEST_TOOLS = [
    "pytest",
    "pytest-xdist",
    "hypothesis",
    "tqdm",
    "matplotlib",
    "sacrebleu",
    "mpich",
    "scikit-learn",
    "onnx",
    "onnxruntime",
]


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
    shared = (
        ROOT.parent / "shared" / "data"
    )  # beside the checkout (when it exists; else cache/download)
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
    # one pytest-xdist worker per core; explicit posargs replace the default paths and workers
    # (pytest then falls back to `testpaths` when the posargs hold only options)
    args = session.posargs or ["-n", "auto", *paths]
    session.run("pytest", "--import-mode=importlib", *args)


@nox.session
def minimal(session: nox.Session) -> None:
    """torchlight-tensor's tests with only what ``pip install torchlight-tensor`` brings (autograd,
    numpy) plus pytest and hypothesis: no scipy, no other distribution. A test that needs more
    skips with a reason naming the distribution to install."""
    session.install("pytest", "hypothesis")
    session.install(
        "-e", str(PACKAGES / "torchlight-autograd"), "-e", str(PACKAGES / "torchlight-tensor")
    )
    set_test_env(session)
    session.run(
        "python",
        "-c",
        "import importlib.util, sys; sys.exit("
        "'scipy is installed: this session must run without it' "
        "if importlib.util.find_spec('scipy') else 0)",
    )
    session.run(
        "pytest",
        "--import-mode=importlib",
        "-p",
        "no:cacheprovider",
        "-q",
        *(session.posargs or ["packages/torchlight-tensor/tests"]),
    )


TORCH = "torch==2.13.0"  # the PyTorch the oracle tests and the benchmarks compare with (CPU wheel)


def install_torch(session: nox.Session) -> bool:
    """Install PyTorch CPU 2.13.0 if it can be, with tensorboard (makemore, a public program of
    the compatibility suite, imports ``torch.utils.tensorboard``, which needs it under PyTorch);
    ``False`` (logged) when it cannot. pip's ``PIP_FIND_LINKS`` (a local wheel directory) is
    passed on to uv, which does not read it."""
    links = os.environ.get("PIP_FIND_LINKS")
    try:
        session.install(TORCH, "tensorboard", *(["--find-links", links] if links else []))
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
    # one pytest-xdist worker per core: the compat cases are whole programs in subprocesses
    pytest = ["pytest", "--import-mode=importlib", "-p", "no:cacheprovider", "-q", "-n", "auto"]
    pytest += session.posargs
    marked = [str(p.relative_to(ROOT)) for p in sorted(PACKAGES.glob("*/tests"))]
    session.run(*pytest, "-m", "oracle", *marked)
    dirs = [d for d in ORACLE_DIRS if (ROOT / d).is_dir()]
    if dirs:
        # only what compares with PyTorch: the programs' own cpu/numba runs are in `tests`
        session.run(*pytest, "-m", "oracle", *dirs)


# --- releases: one version, built and checked distributions, the installation page -----------
VERSION_FILE = ROOT / "VERSION"
DIST_DIR = ROOT / "dist"
# a requirement on another distribution of this repository: `torchlight-xyz[extras]==1.2.3`
_PIN = re.compile(r'"(torchlight-[a-z-]+(?:\[[a-z0-9,]+\])?)==[^"]*"')


def current_version() -> str:
    """The one version of every lock-stepped distribution (the repository's VERSION file)."""
    return VERSION_FILE.read_text().strip()


def pin_distributions(text: str, version: str) -> str:
    """Rewrite every inter-distribution pin of a pyproject.toml to ``==version``. The backends,
    nn, data and distributed import internals of torchlight-tensor, so only the same release is
    known to work: the distributions move in lock-step."""
    return _PIN.sub(lambda m: f'"{m.group(1)}=={version}"', text)


@nox.session(python=False)
def version(session: nox.Session) -> None:
    """``nox -s version -- X.Y.Z``: set the version of every distribution (VERSION) and rewrite
    the inter-distribution pins to match; without an argument, print the current version."""
    if not session.posargs:
        session.log(current_version())
        return
    (new,) = session.posargs
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?", new):
        session.error(f"{new!r} is not a release version like 1.2.3 or 1.2.3rc1")
    VERSION_FILE.write_text(new + "\n")
    for pyproject in PACKAGES.glob("*/pyproject.toml"):
        pyproject.write_text(pin_distributions(pyproject.read_text(), new))
    session.log(f"version {new}: VERSION and every inter-distribution pin; add it to CHANGELOG.md")


def _requirements_of(wheel: Path, extras: tuple[str, ...] = ()) -> list[str]:
    """The Requires-Dist entries of a wheel that are not torchlight distributions, plus those of
    the named extras (``test``)."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode()
    reqs = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req, _, marker = line.split(":", 1)[1].strip().partition(";")
        name = re.split(r"[\s\[<>=!~(]", req, maxsplit=1)[0].lower().replace("_", "-")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if name.startswith("torchlight") or (extra and extra.group(1) not in extras):
            continue
        reqs.append(req.strip())
    return reqs


def build_distributions(session: nox.Session, out: Path, *, sdist: bool) -> dict[str, Path]:
    """Build every distribution (and the meta-package) into ``out``; name -> source directory.
    With ``sdist``, uv builds the sdist and then the wheel *from the sdist*, which proves the
    sdist is complete."""
    shutil.rmtree(out, ignore_errors=True)
    built = {}
    for dist in [*distributions(), META]:
        if (dist / "pyproject.toml").exists():
            kinds = [] if sdist else ["--wheel"]
            session.run("uv", "build", *kinds, "--quiet", "--out-dir", str(out), str(dist))
            built[dist_name(dist)] = dist
    session.log("built: " + ", ".join(sorted(p.name for p in out.glob("torchlight*"))))
    return built


def _fresh_venv(session: nox.Session, where: Path) -> str:
    shutil.rmtree(where, ignore_errors=True)
    session.run("uv", "venv", "--quiet", str(where), "--python", sys.executable)
    return str(where / ("Scripts" if os.name == "nt" else "bin") / "python")


def install_from_wheels(
    session: nox.Session, py: str, wheels: Path, reqs: list[str], extras: tuple[str, ...] = ()
) -> None:
    """Install torchlight requirements ``reqs`` into the venv of ``py``: their third-party
    dependencies from the index, every torchlight distribution only from ``wheels`` (--no-index),
    so nothing named torchlight* can come from PyPI."""
    pip = ["uv", "pip", "install", "--python", py]
    third_party = {r for w in wheels.glob("*.whl") for r in _requirements_of(w, extras)}
    session.run(*pip, *sorted(third_party))
    # --no-cache: a rebuilt wheel has the same name and version as the one uv cached last time
    session.run(*pip, "--no-cache", "--no-index", "--find-links", str(wheels), *reqs)


@nox.session
def wheels(session: nox.Session) -> None:
    """Build every wheel, install them all (not editable) into a fresh venv, import everything.

    Editable installs put ``src/`` directories on ``sys.path``; a wheel contains only what the
    build config selects. This session catches what editable installs hide: a namespace
    ``__init__.py`` shipped twice, a module left out of the wheel, a missing entry point.
    """
    tmp = Path(session.create_tmp()).resolve()
    wheelhouse = tmp / "wheelhouse"
    built = build_distributions(session, wheelhouse, sdist=False)
    py = _fresh_venv(session, tmp / "fresh-venv")
    install_from_wheels(session, py, wheelhouse, sorted(built))
    # run from a directory outside the repo so the checkout cannot shadow site-packages
    with session.chdir(tmp):
        session.run(py, str(ROOT / "tests-integration" / "smoke_wheels.py"), external=True)


@nox.session
def release(session: nox.Session) -> None:
    """What the release workflow publishes, built and checked: the sdist and wheel of every
    distribution into ``dist/`` (wheels built from the sdists), ``twine check --strict``, the
    metadata rules (tests-integration/release_check.py), then each distribution installed
    *alone* from ``dist/`` into a fresh venv with its ``test`` extra, and its own tests run from
    its sdist against the installed wheel. ``nox -s release -- --build-only`` stops after the
    checks of the files."""
    session.install("twine")
    built = build_distributions(session, DIST_DIR, sdist=True)
    files = sorted(str(p) for pattern in ("*.whl", "*.tar.gz") for p in DIST_DIR.glob(pattern))
    session.run("twine", "check", "--strict", *files)
    session.run("python", str(ROOT / "tests-integration" / "release_check.py"), str(DIST_DIR))
    if "--build-only" in session.posargs:
        return
    tmp = Path(session.create_tmp()).resolve()
    for name, src in built.items():
        py = _fresh_venv(session, tmp / f"venv-{name}")
        has_tests = (src / "tests").is_dir()
        install_from_wheels(
            session,
            py,
            DIST_DIR,
            [f"{name}[test]" if has_tests else name],
            extras=("test",) if has_tests else (),
        )
        if not has_tests:
            session.run(py, "-c", "import torchlight", external=True)
            continue
        unpacked = tmp / f"sdist-{name}"
        shutil.rmtree(unpacked, ignore_errors=True)
        sdist = next(DIST_DIR.glob(f"{name.replace('-', '_')}-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(unpacked, filter="data")
        tests_dir = next(unpacked.glob("*/tests"))
        # a tool of this check, not a requirement of the tests: one worker per core
        session.run("uv", "pip", "install", "--quiet", "--python", py, "pytest-xdist")
        # from outside any checkout, so `torchlight` resolves to the installed wheels only
        with session.chdir(tmp):
            session.run(
                py,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--import-mode=importlib",
                "-m",
                "not slow",
                "-x",
                "-n",
                str(os.cpu_count() or 1),
                str(tests_dir),
                external=True,
                env={"TORCHLIGHT_HYPOTHESIS_PROFILE": "ci"},
            )


# the distributions whose declared lower bounds `lowest` tests (cuda needs a GPU, distributed MPI)
LOWEST = [
    "torchlight-autograd",
    "torchlight-tensor",
    "torchlight-nn",
    "torchlight-data",
    "torchlight-backend-numba",
    "torchlight-testing",
]


def declared_minimums(names: list[str]) -> list[str]:
    """``pkg==X`` for every third-party runtime requirement ``pkg>=X`` of the named distributions
    (the oldest versions their metadata admits)."""
    pins = {}
    for name in names:
        for req in nox.project.load_toml(PACKAGES / name / "pyproject.toml")["project"][
            "dependencies"
        ]:
            m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", req.replace(" ", ""))
            if m and not m.group(1).startswith("torchlight"):
                pins[m.group(1).lower()] = f"{m.group(1).lower()}=={m.group(2)}"
            elif not m and not req.startswith("torchlight"):
                raise ValueError(f"{name}: {req!r} has no lower bound to test")
    return sorted(pins.values())


@nox.session
def lowest(session: nox.Session) -> None:
    """The test suites against the oldest third-party versions the metadata declares (numpy,
    numba, scipy, ... at their ``>=`` bounds), so a declared bound is one that was tested."""
    session.install(*declared_minimums(LOWEST), "pytest-xdist")
    session.install("--no-deps", *[x for n in LOWEST for x in ("-e", str(PACKAGES / n))])
    set_test_env(session)
    # its own numba cache: kernels compiled by another numba version must not be shared
    session.env["NUMBA_CACHE_DIR"] = str(Path(session.create_tmp()).resolve() / "numba-cache")
    session.run(
        "python",
        "-c",
        "import numpy, numba, scipy; print('numpy', numpy.__version__, "
        "'numba', numba.__version__, 'scipy', scipy.__version__)",
    )
    session.run(
        "pytest",
        "--import-mode=importlib",
        "-p",
        "no:cacheprovider",
        "-q",
        "-m",
        "not slow",
        "-n",
        str(os.cpu_count() or 1),
        *(session.posargs or [str(t) for n in LOWEST if (t := PACKAGES / n / "tests").is_dir()]),
    )


INSTALL_PAGE = ROOT / "docs" / "installation.md"
# a block of the installation page that this session runs: the marker line right before the fence
# names the scenario and the torchlight distributions the block must leave installed
_INSTALL_BLOCK = re.compile(
    r"<!-- install-check: (?P<name>[\w-]+) expects: (?P<expects>[\w, -]+) -->\n```bash\n(?P<code>.*?)```",
    re.S,
)


@nox.session
def install_check(session: nox.Session) -> None:
    """Run the installation page's commands *verbatim*, each marked block in a fresh virtual
    environment (plain ``python -m venv``, as a user would), from the root of the checkout; then
    check that exactly the torchlight distributions the block promises are installed and that
    ``python -m torchlight`` runs. Wheel scenarios find the wheels ``nox -s release`` builds in
    ``dist/`` (built here first when missing). ``nox -s install_check -- NAME`` runs one."""
    blocks = list(_INSTALL_BLOCK.finditer(INSTALL_PAGE.read_text()))
    if not blocks:
        session.error(f"no install-check blocks found in {INSTALL_PAGE}")
    # a block that installs from `dist` needs the wheels there (a clean checkout has none)
    if any(re.search(r"\bdist\b", b["code"]) for b in blocks) and not any(DIST_DIR.glob("*.whl")):
        session.install("twine")
        build_distributions(session, DIST_DIR, sdist=False)
    tmp = Path(session.create_tmp()).resolve()
    for block in blocks:
        if session.posargs and block["name"] not in session.posargs:
            continue
        venv = tmp / f"install-{block['name']}"
        shutil.rmtree(venv, ignore_errors=True)
        session.run(sys.executable, "-m", "venv", str(venv), external=True)
        bindir = venv / ("Scripts" if os.name == "nt" else "bin")
        session.log(f"[{block['name']}]\n{block['code']}")
        # activated as a user would, so `python` in the block is the fresh environment's
        script = f"source {shlex.quote(str(bindir / 'activate'))}\n{block['code']}"
        session.run("bash", "-euo", "pipefail", "-c", script, external=True)
        expected = sorted(n.strip() for n in block["expects"].split(","))
        check = (
            "import sys, importlib.metadata as md, torchlight\n"
            "got = sorted({d.metadata['Name'].lower() for d in md.distributions()\n"
            "              if d.metadata['Name'].lower().startswith('torchlight')})\n"
            "assert got == sorted(sys.argv[1:]), f'installed {got}, the page promises {sys.argv[1:]}'\n"
        )
        with session.chdir(tmp):
            session.run(str(bindir / "python"), "-c", check, *expected, external=True)
            session.run(str(bindir / "python"), "-m", "torchlight", external=True)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format) and mypy, configured in the root pyproject.toml (mypy: the public
    packages' src); and no function of a backend above cyclomatic complexity 15 (routing
    belongs in the backends' tables, not in branches)."""
    session.install("ruff", "mypy", "numpy")
    session.run("ruff", "check", *(session.posargs or ["."]))
    session.run("ruff", "format", "--check", *(session.posargs or ["."]))
    session.run("mypy")
    if not session.posargs:
        backends = [
            str(p.relative_to(ROOT)) for p in sorted(PACKAGES.glob("torchlight-backend-*/src"))
        ]
        backends += ["packages/torchlight-tensor/src/torchlight/tensor/backend"]
        session.run(
            "ruff",
            "check",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity=15",
            *backends,
        )


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
    in one process), the per-call time of common small ops (``bench_ops.py``), then the GPT
    step's phases (``bench_gpt_phases.py``), then the compatibility
    programs per training step (``bench_compat.py``, at 1 and 2 threads), the GPT step's peak
    memory (``bench_memory.py``) and the mini-GPT trained side by side to validation loss 1.50
    (``bench_gpt_race.py``: up to an hour, one core per framework). PyTorch 2.13.0 is
    installed when it can be (pip's ``PIP_FIND_LINKS`` is passed on to uv); otherwise its columns
    stay empty. ``nox -s bench -- --threads 2 [--quick]``: ``--threads N`` goes to the first
    three scripts (the last two use one thread per framework), ``--quick`` to
    ``bench_backends.py`` and ``bench_compat.py`` and makes the race 3 minutes to loss 2.5, the
    rest goes to ``bench_backends.py``."""
    install_editable(session)
    # bench_compat.py reads the compat suite's cases (which import pytest) and shows tqdm progress
    session.install("pytest", "tqdm", "matplotlib")
    if not install_torch(session):
        session.log("the benchmarks run without PyTorch")
    scripts = ROOT / "tests-integration" / "benchmarks"
    args = list(session.posargs)
    threads = (
        args[args.index("--threads") : args.index("--threads") + 2] if "--threads" in args else []
    )
    session.run("python", str(scripts / "bench_backends.py"), *args)
    session.run("python", str(scripts / "bench_ops.py"))  # single-threaded by design
    session.run("python", str(scripts / "bench_gpt_phases.py"), *threads)
    compat = [*threads, *(["--quick"] if "--quick" in args else [])]
    session.run("python", str(scripts / "bench_compat.py"), *compat)
    # one thread per framework by design; the race's full length is an hour per side (--minutes 60)
    session.run("python", str(scripts / "bench_memory.py"), "--repeat", "3")
    race = ["--minutes", "3", "--target", "2.5", "--eval-every", "25"] if "--quick" in args else []
    session.run("python", str(scripts / "bench_gpt_race.py"), *race)


@nox.session
def conformance(session: nox.Session) -> None:
    """The conformance kit against every backend, one pytest process per execution model: numpy
    and numba (JIT), numba with ``NUMBA_DISABLE_JIT=1`` (``tiny`` inputs), cuda under numba's CUDA
    simulator (``NUMBA_ENABLE_CUDASIM=1`` must be set before numba is imported). Then every cuda
    kernel is compiled to PTX for a real GPU (needs NVVM from ``numba-cuda[cu13]``, not a GPU)."""
    session.install(
        *TEST_TOOLS
    )  # the `tests` environment (scipy included: the numpy backend's erf)
    install_editable(session)
    set_test_env(session)
    # `nox -s conformance -- cuda`: only the simulator run and the PTX check (what `nox -s tests`
    # does not run: .ci/run uses it); other posargs go to pytest
    only_cuda = "cuda" in session.posargs
    extra = [a for a in session.posargs if a != "cuda"]
    pytest = ["pytest", "--import-mode=importlib", "-p", "no:cacheprovider", "-q", *extra]
    kits = [
        str(f.relative_to(ROOT)) for f in sorted(PACKAGES.glob("*/tests/test_conformance_*.py"))
    ]
    if not only_cuda:
        session.run(*pytest, *[k for k in kits if "backend-cuda" not in k])
    numba_kit = [k for k in kits if k.endswith("test_conformance_numba.py")]
    if numba_kit and not only_cuda:
        session.run(
            *pytest,
            *numba_kit,
            env={"NUMBA_DISABLE_JIT": "1", "TORCHLIGHT_CONFORMANCE_PROFILE": "tiny"},
        )
    cuda_tests = PACKAGES / "torchlight-backend-cuda" / "tests"
    if cuda_tests.is_dir():
        # The simulator interprets every GPU thread in Python: one pytest worker per core
        # (measured: ~6 min of CPU for the cuda kit, half the wall time on 2 cores).
        session.run(
            *pytest,
            "-n",
            str(min(os.cpu_count() or 1, 4)),
            str(cuda_tests.relative_to(ROOT)),
            env={"NUMBA_ENABLE_CUDASIM": "1"},
        )
        session.install("numba-cuda[cu13]")
        session.run(*pytest, str((cuda_tests / "test_ptx.py").relative_to(ROOT)))


@nox.session
def gpu(session: nox.Session) -> None:
    """The real-GPU check, on a machine with an NVIDIA GPU: the conformance kit on the device, then
    the GPT training step and 4096x4096 matmul benchmarks (PyTorch beside when installed), all
    figures in one JSON file; then the profile of the GPT step by backend method and of matmul
    shapes and tile sizes (``gpu_profile.json``). ``nox -s gpu -- --out gpu_check.json``; the CUDA
    wheels are ``numba-cuda[$TORCHLIGHT_CUDA_EXTRA]`` (``cu12`` by default, ``cu13`` for newer
    drivers)."""
    extra = os.environ.get("TORCHLIGHT_CUDA_EXTRA", "cu12")
    session.install("pytest", "hypothesis", f"numba-cuda[{extra}]")
    install_editable(session)
    session.run("python", "tests-integration/gpu_check.py", *session.posargs)
    session.run("python", "tests-integration/gpu_profile.py", "--out", "gpu_profile.json")


# --- documentation ---------------------------------------------------------------------------
DOCS = ROOT / "docs"
DOCS_TOOLS = ["sphinx>=7.2,<9", "myst-parser>=3", "furo>=2024.1", "sphinx-copybutton>=0.5"]
MATHJAX = "mathjax@3.2.2"  # 3.x: its es5/tex-mml-chtml.js is what Sphinx's mathjax_path loads
MATHJAX_CACHE = DOCS / "_build" / "_cache" / (MATHJAX.replace("@", "-") + "-local")
# combined MathJax bundles we do not load (only es5/tex-mml-chtml.js is), plus the CDN redirector
_MATHJAX_SKIP = {
    "latest.js",
    "node-main.js",
    "tex-chtml.js",
    "tex-chtml-full.js",
    "tex-svg.js",
    "tex-svg-full.js",
    "tex-mml-svg.js",
    "mml-chtml.js",
    "mml-svg.js",
    "tex-chtml-full-speech.js",
}


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
    session.install(
        *DOCS_TOOLS, "pytest", "hypothesis", "onnx", "onnxruntime"
    )  # interop.md runs an export
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
    session.run(
        "sphinx-build", "-b", "html", "-E", "-j", "auto", *common, str(DOCS), str(build / "html")
    )
    session.run("sphinx-build", "-b", "doctest", *common, str(DOCS), str(build / "doctest"))
    session.run(
        "pytest", "-m", "slow", "-p", "no:cacheprovider", "tests-integration/test_docs_site.py"
    )


@nox.session
def doctest(session: nox.Session) -> None:
    """Only run the docs' code blocks (``{doctest}``/``{testcode}``) against the installed code."""
    _docs_env(session)
    build = DOCS / "_build"
    session.run(
        "sphinx-build",
        "-b",
        "doctest",
        "-W",
        "--keep-going",
        "-q",
        "-d",
        str(build / "doctrees"),
        str(DOCS),
        str(build / "doctest"),
        *session.posargs,
    )
