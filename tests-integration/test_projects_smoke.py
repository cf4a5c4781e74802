"""Smoke test of the example projects: each ``train.py`` then ``post.py`` for a tiny budget.

Every project runs in a subprocess exactly as its README says, with ``--epochs 1 --max-batches 3``
and ``--out`` in a temporary directory; the test then checks that the artefacts exist and
reload (checkpoint through ``tl.load`` into a freshly built model, JSON files, the PNGs). Full
runs (and their metrics) are documented in each project's README, not run here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import torchlight as tl

ROOT = Path(__file__).resolve().parents[1]
SENTIMENT = ROOT / "projects" / "sentiment-classifier"
SKLEARN = ROOT / "projects" / "sklearn-examples"
TINY = ["--epochs", "1", "--max-batches", "3", "--no-progress"]


def _run(script: Path, *args: str, timeout: float = 120) -> str:
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (
        f"{script.name} {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


def _sentiment_data_available() -> bool:
    from torchlight.data.datasets import sentiment_sentences

    try:
        sentiment_sentences(download=False, progress=False)
    except Exception:
        return False
    return True


def _check_artefacts(out: Path) -> dict:
    """model.npz reloads (without pickle) into finite tensors; meta/history parse; one epoch logged.

    The full reload — rebuilding the model from meta.json and a strict ``load_state_dict`` — is
    what each ``post.py`` does first, so a passing ``post.py`` run covers it.
    """
    for name in ("model.npz", "meta.json", "history.json"):
        assert (out / name).is_file(), f"{out / name} missing"
    state = tl.load(str(out / "model.npz"))["model"]
    assert state and all(isinstance(v, tl.Tensor) for v in state.values())
    assert all(np.isfinite(v.to_numpy()).all() for v in state.values() if v.dtype.is_floating_point)
    assert json.loads((out / "history.json").read_text())["epoch"] == [1]
    return json.loads((out / "meta.json").read_text())


@pytest.mark.skipif(
    not _sentiment_data_available(),
    reason="UCI sentiment sentences not found (set TORCHLIGHT_DATA)",
)
@pytest.mark.parametrize("model", ["bag", "mean", "cnn"])
def test_sentiment_classifier_smoke(tmp_path, model):
    out = tmp_path / model
    log = _run(SENTIMENT / "train.py", "--model", model, "--out", str(out), *TINY)
    assert "best epoch 1" in log
    assert _check_artefacts(out)["config"]["model"] == model

    report = _run(SENTIMENT / "post.py", "--out", str(out), "--show", "2")
    assert "accuracy" in report and "F1" in report and "misclassified" in report
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_test"] == 600 and 0.0 <= metrics["accuracy"] <= 1.0
    assert sum(map(sum, metrics["confusion"])) == 600
    assert (out / "sentiment_eval.png").stat().st_size > 10_000


def test_sklearn_examples_smoke(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    out = tmp_path / "sk"
    _run(SKLEARN / "train.py", "--out", str(out), *TINY)
    report = _run(SKLEARN / "post.py", "--out", str(out))
    assert "test accuracy" in report and "reconstruction MSE" in report

    for name in ("breast_cancer", "digits_cnn", "digits_cae"):
        d = out / name
        assert _check_artefacts(d)["example"] == name
        assert (d / f"{name}.png").stat().st_size > 10_000
        assert json.loads((d / "metrics.json").read_text())["n_test"] > 100
