"""Sphinx configuration of the torchlight documentation site.

Build it with ``nox -s docs`` (that session fetches MathJax, checks for Graphviz and installs every
distribution editable). Three things here are unusual:

* the API reference under ``reference/api/`` is *generated* on every build from the torchlight
  distributions that are installed (see ``_ext/torchlight_docs.py``), so a distribution that is not
  installed is listed as such instead of breaking the build;
* MathJax is served from the built site (``_static/mathjax``), never from a CDN;
* Python code in the tutorials must be ``{doctest}`` or ``{testcode}`` blocks: ``sphinx-build -b
  doctest`` runs them, so the tutorials cannot drift from the code. The ``>>>`` examples of the
  docstrings in the API reference run in the same build.
"""

import doctest as _doctest
import os
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "torchlight"
author = "the torchlight authors"
copyright = "torchlight authors, MIT licence"
try:
    release = _dist_version("torchlight-tensor")
except PackageNotFoundError:  # building without the code installed: the reference will say so
    release = "0.1.0"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.graphviz",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "torchlight_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/README.md"]
templates_path = []
pygments_style = "friendly"
pygments_dark_style = "monokai"

# --- MyST ------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# --- maths: MathJax 3 from the built site -----------------------------------------------------
# `nox -s docs` downloads the npm package mathjax@3.2.2 and passes its location here; the files
# are copied into _static/mathjax and mathjax_path (relative to _static) points at them.
_mathjax_static = os.environ.get("TORCHLIGHT_MATHJAX_STATIC") or str(
    DOCS / "_build" / "_cache" / "mathjax-3.2.2-local" / "static"
)
mathjax_path = "mathjax/es5/tex-mml-chtml.js"
html_static_path = ["_static", _mathjax_static]
torchlight_mathjax_static = _mathjax_static  # checked by the extension (a clear error if missing)

# --- diagrams ----------------------------------------------------------------------------------
graphviz_output_format = "svg"
graphviz_dot_args = [
    "-Gfontname=Helvetica",
    "-Nfontname=Helvetica",
    "-Efontname=Helvetica",
    "-Gbgcolor=transparent",
]

# --- copy buttons: copy the code, not the prompts or the printed output ------------------------
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True

# --- API reference -------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
add_module_names = False

# --- doctest: the tutorials' code blocks -------------------------------------------------------
doctest_global_setup = f"""
import importlib.util
import pathlib
import numpy as np
import torchlight as tl
from importlib.metadata import distributions as _dists
_installed = {{(d.metadata["Name"] or "").lower() for d in _dists()}}
REPO = pathlib.Path(r"{ROOT}")  # the repository root, for blocks that run project code
# blocks about optional pieces carry `:skipif: not HAVE[...]`; everything else always runs
HAVE = {{
    "nn": "torchlight-nn" in _installed,
    "data": "torchlight-data" in _installed,
    "testing": "torchlight-testing" in _installed,
    "jit": importlib.util.find_spec("torchlight.jit") is not None,
    "numba": "numba" in tl.available_backends(),
    "cuda": "cuda" in tl.available_backends(),
    "onnx": all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime")),
}}
try:  # MPI data parallelism (one process is enough for the docs)
    import torchlight.distributed as _dist
    HAVE["mpi"] = _dist.is_available()
except ImportError:
    HAVE["mpi"] = False
# the real corpora: present locally ($TORCHLIGHT_DATA, ~/.cache/torchlight)? never downloaded here
try:
    from torchlight.data.datasets import RESOURCES as _R, fetch as _fetch
    for _k in _R:
        _fetch(_R[_k], download=False)
    HAVE["corpora"] = True
except Exception:
    HAVE["corpora"] = False
if HAVE["nn"]:
    import torchlight.nn as nn
    import torchlight.nn.functional as F
    import torchlight.optim
tl.manual_seed(0)
np.set_printoptions(precision=4, suppress=True)
"""
# exception messages are compared too (Sphinx's default would add IGNORE_EXCEPTION_DETAIL)
doctest_default_flags = (
    _doctest.ELLIPSIS | _doctest.NORMALIZE_WHITESPACE | _doctest.DONT_ACCEPT_TRUE_FOR_1
)
# ``>>>`` examples in the API reference (docstrings) run too: a docstring example that stops
# working fails the build. They may use ``tl``, ``np``, and ``nn`` / ``F`` when torchlight-nn is
# installed, as PyTorch's docs use ``torch`` and ``nn``.
doctest_test_doctest_blocks = "default"

# --- HTML ------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"torchlight {release}"
html_css_files = ["torchlight.css"]
html_theme_options = {"navigation_with_keys": True}
html_show_sourcelink = False
html_last_updated_fmt = None
