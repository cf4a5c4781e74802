"""One command per headline result (``projects/reproduce.py``, ``nox -s reproduce``): the presets
are defined by steps and follow the schedules the measured runs used, and the numbers the command
compares with are the ones in the committed result files.

The oracles are the histories and metrics that the measured runs wrote (``projects/*/results/``):
the learning rate the 60-minute runs actually used at each step, and the metrics their ``post.py``
wrote.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

PROJECTS = Path(__file__).resolve().parents[1] / "projects"
GPT = PROJECTS / "mini-gpt"
MT = PROJECTS / "machine-translation"


@pytest.fixture(scope="module")
def reproduce():
    spec = importlib.util.spec_from_file_location("tl_reproduce", PROJECTS / "reproduce.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def gpt(project_modules):
    with project_modules(GPT, ("corpus", "model", "train")) as modules:
        yield modules


@pytest.fixture(scope="module")
def mt(project_modules):
    with project_modules(MT, ("data", "model", "train")) as modules:
        yield modules


def test_gpt_headline_preset_is_steps_based_and_follows_the_measured_schedule(gpt):
    T = gpt.train
    cfg = T.resolve_config(T.build_parser().parse_args(["--preset", "headline"]))
    assert (cfg.n_embd, cfg.max_iters, cfg.max_minutes, cfg.threads) == (192, 4384, 0.0, 1)
    measured = json.loads((GPT / "results" / "char60" / "config.json").read_text())["train"]
    differ = {k for k, v in measured.items() if getattr(cfg, k) != v}
    # only how the run ends (steps, not minutes), the backend choice and the progress bar differ
    assert differ <= {"max_iters", "max_minutes", "backend", "progress"}
    history = json.loads((GPT / "results" / "char60" / "history.json").read_text())
    assert history["step"][-1] + 1 == cfg.max_iters
    worst = max(
        abs(T.lr_at(cfg, s, T.progress_of(cfg, s, 0.0)) - lr)
        for s, lr in zip(history["step"], history["lr"])
    )
    assert worst < 1.6e-5  # the wall-clock cosine of the measured run, to 0.8 % of the peak


def test_gpt_max_steps_stops_without_changing_the_schedule(gpt):
    args = gpt.train.build_parser().parse_args(["--preset", "headline", "--max-steps", "50"])
    assert args.max_steps == 50 and gpt.train.resolve_config(args).max_iters == 4384


def test_translation_headline_preset(mt):
    args = mt.train.parse_args(["--preset", "headline"])
    assert (args.steps, args.tf_end, args.eval_every, args.backend, args.epochs) == (
        9757,
        1.0,
        0.0,
        "numba",
        50,
    )
    assert (
        mt.train.parse_args(["--preset", "headline", "--tf-end", "0.8"]).tf_end == 0.8
    )  # flags win
    assert mt.train.parse_args([]).steps is None  # no preset: the epochs define the run
    evals = json.loads((MT / "results" / "run60b" / "history.json").read_text())["evals"]
    assert evals[-1]["step"] == 9757
    # the preset's linear decay over the last 30 % of 9,757 steps against the measured run's
    for e in evals:
        p = e["step"] / 9757
        lr = 1e-3 if p <= 0.7 else 1e-3 * (1 - 0.9 * (p - 0.7) / 0.3)
        assert abs(lr - e["lr"]) < 1e-5


def test_the_compared_numbers_are_those_of_the_result_files(reproduce):
    gpt = reproduce.PROJECTS["mini-gpt"]
    loss = gpt.metrics(GPT / "results" / "char60")["validation loss (nats/char, whole split)"]
    want, tol = gpt.expected["validation loss (nats/char, whole split)"]
    assert abs(loss - want) < 5e-5 and tol > 0
    mt = reproduce.PROJECTS["translation"]
    bleu = mt.metrics(MT / "results" / "headline")["test BLEU greedy"]  # the preset's own run
    assert abs(bleu - mt.expected["test BLEU greedy"][0]) < 5e-3
    history = json.loads((MT / "results" / "headline" / "history.json").read_text())
    assert history["evals"][-1]["step"] == 9757 and history["backend"] == "numba"
    sent = json.loads((PROJECTS / "sentiment-classifier" / "results" / "metrics.json").read_text())
    sentiment = reproduce.PROJECTS["sentiment"].expected
    assert round(sent["accuracy"], 4) == sentiment["test accuracy"][0]
    assert round(sent["f1"], 4) == sentiment["F1"][0]
    results = PROJECTS / "sklearn-examples" / "results"
    sk = reproduce.PROJECTS["sklearn"].expected
    for name, key, label in [
        ("breast_cancer", "test_accuracy", "breast_cancer test accuracy"),
        ("digits_cnn", "test_accuracy", "digits_cnn test accuracy"),
        ("digits_cae", "test_mse", "digits_cae test MSE"),
    ]:
        got = json.loads((results / f"{name}_metrics.json").read_text())[key]
        assert round(got, 4) == sk[label][0], label


def test_unknown_project_is_refused(reproduce, capsys):
    with pytest.raises(SystemExit):
        reproduce.main(["no-such-project"])
    assert "invalid choice" in capsys.readouterr().err
