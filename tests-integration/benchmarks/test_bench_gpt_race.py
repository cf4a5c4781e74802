"""bench_gpt_race.py: its arithmetic on hand numbers, the recipe against train.py's own
functions, one real race of the tiny preset (the torchlight side; PyTorch's when importable), and
the torchlight side with its step captured against the same side eager."""

import dataclasses
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torchlight.nn")
pytest.importorskip("torchlight.data")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")
sys.path.insert(0, str(Path(__file__).parent))

import bench_gpt_race as race  # noqa: E402
import gpt_race_recipe  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None


def ev(seconds, step, val, tokens=None):
    return {"seconds": seconds, "step": step, "val_loss": val, "tokens": tokens or step * 100}


def test_crossing_interpolates_between_the_evaluations_around_it():
    evals = [ev(0, 0, 4.0), ev(60, 100, 2.0), ev(120, 200, 1.0), ev(180, 300, 1.2)]
    # 2.0 -> 1.0 between 60 s and 120 s: 1.5 is half way, at 90 s and step 150
    assert race.crossing(evals, 1.5) == {"seconds": pytest.approx(90.0), "step": 150.0}
    # 4.0 -> 2.0 between 0 and 60 s: 3.5 is a quarter of the way
    assert race.crossing(evals, 3.5)["seconds"] == pytest.approx(15.0)
    # reached exactly at an evaluation: that evaluation's time
    assert race.crossing(evals, 2.0)["seconds"] == pytest.approx(60.0)
    # the first evaluation already at the target: its own time, no interpolation
    assert race.crossing(evals, 5.0) == {"seconds": 0, "step": 0.0}
    # never reached (the later rise to 1.2 does not matter): None
    assert race.crossing(evals, 0.9) is None
    assert race.crossing([], 1.5) is None


def test_tokens_per_second_overall_and_after_the_first_interval():
    evals = [ev(0, 0, 4.0, 0), ev(30, 10, 3.0, 1000), ev(50, 30, 2.5, 3000), ev(90, 70, 2.0, 7000)]
    assert race.tokens_per_second(evals) == pytest.approx(7000 / 90)
    # from the evaluation at step 10 (30 s) to the last: 6000 tokens in 60 s
    assert race.steady_tokens_per_second(evals) == pytest.approx(100.0)
    assert race.steady_tokens_per_second(evals[:2]) is None  # one interval only
    assert race.tokens_per_second([ev(0, 0, 4.0, 0)]) is None


def test_time_ratio_and_the_bar():
    assert race.time_ratio({"seconds": 66.0}, {"seconds": 60.0}) == pytest.approx(1.1)
    assert race.time_ratio(None, {"seconds": 60.0}) is None
    assert race.time_ratio({"seconds": 60.0}, None) is None
    runs = {
        "torchlight": {
            "evals": [ev(0, 0, 4.0, 0), ev(100, 10, 2.0, 5000), ev(200, 20, 1.0, 10000)]
        },
        "torch": {"evals": [ev(0, 0, 4.0, 0), ev(50, 10, 2.0, 5000), ev(100, 20, 1.0, 10000)]},
    }
    s = race.summarize(runs, 1.5)
    assert s["sides"]["torchlight"]["crossing"]["seconds"] == pytest.approx(150.0)
    assert s["sides"]["torch"]["crossing"]["seconds"] == pytest.approx(75.0)
    assert s["time_ratio"] == pytest.approx(2.0) and s["meets_bar"] is False
    assert s["throughput_ratio"] == pytest.approx(2.0)  # 100 vs 50 tokens/s
    text = race.table(s)
    assert "| torchlight | 2.50 | 15 | 50 | 50 | 1.0000 | 20 | — |" in text
    assert "torchlight / PyTorch: 2.000 (misses the bar 1.1)" in text
    alone = race.summarize({"torchlight": runs["torchlight"]}, 1.5)
    assert alone["time_ratio"] is None and alone["throughput_ratio"] is None
    assert "a side did not reach it" in race.table(alone)


def test_cores_are_the_allowed_ones_or_none():
    import os

    allowed = sorted(os.sched_getaffinity(0))
    assert race.pick_cores([allowed[0]], 1) == [allowed[0]]
    assert race.pick_cores([allowed[-1]], 2) == [allowed[-1], allowed[-1]]  # taken in turn
    assert race.pick_cores(None, len(allowed) + 1) == allowed + allowed[:1]
    with pytest.raises(SystemExit, match="may only use"):
        race.pick_cores([max(allowed) + 1], 1)


@pytest.fixture(scope="module")
def tiny_recipe(tmp_path_factory):
    cfg = gpt_race_recipe.preset_config("tiny")
    path = tmp_path_factory.mktemp("recipe") / "recipe"
    recipe = gpt_race_recipe.write_recipe(path, cfg, seconds=60.0, eval_every=10)
    with np.load(str(path) + ".npz") as arrays:
        data = {k: arrays[k] for k in arrays.files}
    return cfg, recipe, data


def test_the_recipe_is_train_pys_run(tiny_recipe):
    cfg, recipe, data = tiny_recipe
    sys.path.insert(0, str(gpt_race_recipe.MINI_GPT))
    import train
    from corpus import random_starts
    from model import GPT

    import torchlight as tl

    assert data["lr"].shape == (cfg.max_iters,)
    for s in (0, 3, 4, 17, cfg.max_iters - 1):
        assert data["lr"][s] == pytest.approx(train.lr_at(cfg, s, s / cfg.max_iters))
        rng = np.random.default_rng([cfg.seed, s])
        expected = random_starts(len(data["train_ids"]), cfg.batch_size, cfg.block_size, rng)
        np.testing.assert_array_equal(data["train_starts"][s], expected)
    assert data["val_starts"].shape == (cfg.eval_batches, cfg.batch_size)
    tl.manual_seed(cfg.seed)
    model = GPT(cfg.model_config(recipe["model"]["vocab_size"]))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(data[f"w/{name}"], value.numpy())
    assert recipe["optim"] == {"weight_decay": 0.1, "beta1": 0.9, "beta2": 0.99, "grad_clip": 1.0}


def project_val_loss(cfg, recipe, data) -> float:
    """The validation loss of the recipe's initial weights by the project's own code."""
    sys.path.insert(0, str(gpt_race_recipe.MINI_GPT))
    import train
    from model import GPT

    import torchlight as tl

    model = GPT(cfg.model_config(recipe["model"]["vocab_size"]))
    model.load_state_dict({k[2:]: tl.tensor(v) for k, v in data.items() if k.startswith("w/")})
    return train.estimate_loss(model, data["val_ids"], data["val_starts"], cfg.block_size)


def test_a_real_race_of_the_tiny_preset(tiny_recipe, tmp_path, capsys):
    cfg, recipe, data = tiny_recipe
    out = tmp_path / "race"
    argv = ["--preset", "tiny", "--minutes", "1", "--eval-every", "10", "--target", "3.5"]
    argv += ["--backend", "numpy", "--out", str(out), "--max-iters", "20"]
    result = race.main(argv)
    saved = json.loads((out / "race.json").read_text())
    assert (out / "race.png").stat().st_size > 1000
    assert saved["summary"] == json.loads(json.dumps(result["summary"]))
    sides = ["torchlight", "torch"] if HAS_TORCH else ["torchlight"]
    assert list(result["runs"]) == sides
    # the program's model is model.py's: at step 0 both give the project's validation loss
    expected = project_val_loss(cfg, recipe, data)
    for side in sides:
        run = result["runs"][side]
        assert run["error"] is None, run["error"]
        assert [e["step"] for e in run["evals"]] == [0, 10, 20]
        assert run["evals"][0]["val_loss"] == pytest.approx(expected, rel=1e-5)
        assert run["evals"][-1]["val_loss"] < expected - 0.3  # it trained
        assert run["evals"][-1]["tokens"] == 20 * cfg.batch_size * cfg.block_size
        assert math.isfinite(run["peak_rss_mib"]) and run["peak_rss_mib"] > 20
    s = result["summary"]
    assert s["sides"]["torchlight"]["crossing"] is not None  # 3.5 is reached within 20 steps
    assert result["settings"]["cores"] == race.pick_cores(None, len(sides))
    text = capsys.readouterr().out
    assert "| torchlight (cpu) |" in text
    if HAS_TORCH:
        assert s["time_ratio"] is not None
    else:
        assert "PyTorch is not importable" in text


def test_only_the_torchlight_side_is_given_capture():
    recipe = Path("r")
    assert "--capture" not in race.command("torch", recipe, capture=True)
    assert race.command("torchlight", recipe, capture=True)[-1] == "--capture"
    assert "--capture" not in race.command("torchlight", recipe)
    assert race.label("numba", True) == "torchlight (numba, captured step)"
    assert race.label("cpu", False) == "torchlight (cpu)"


def test_a_captured_side_trains_exactly_as_the_eager_side(tmp_path):
    """``gpt_race_program.py --capture`` replays its training step (clipping and AdamW with a
    new learning rate every step, dropout 0.1 seeded per step): its validation losses equal
    the eager run's, since each replay draws the masks the eager step draws."""
    cfg = dataclasses.replace(gpt_race_recipe.preset_config("tiny", 12), dropout=0.1)
    recipe = tmp_path / "recipe"
    gpt_race_recipe.write_recipe(recipe, cfg, seconds=120.0, eval_every=4)
    runs = []
    for capture in (False, True):
        proc = subprocess.run(
            race.command("torchlight", recipe, capture),
            env=race.child_env("torchlight", "cpu"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        runs.append(([e["val_loss"] for e in events if e["event"] == "eval"], events[-1]))
    (eager, _), (captured, done) = runs
    assert done["capture"] == "captured" and done["kernel_calls"] > 0
    assert len(eager) == 4 and captured == eager
    assert eager[-1] < eager[0] - 0.1  # it trained
