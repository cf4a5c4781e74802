"""bench_compat.py: its arithmetic on hand numbers, its rows and JSON with a stand-in for the child
runs, and one real run of a tiny program on the numpy backend (PyTorch's column left out)."""

import json
import math
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("torchlight.nn")
pytest.importorskip("torchlight.data")
pytest.importorskip("tqdm")
sys.path.insert(0, str(Path(__file__).parent))

import bench_compat as bc  # noqa: E402


def test_step_time_is_the_extra_time_of_the_extra_steps():
    # N = 10 steps took 2.0 s, 2N = 20 took 3.5 s: the 10 extra steps cost 1.5 s, 0.15 s each
    assert bc.step_time(2.0, 3.5, 10) == pytest.approx(0.15)


def test_median_and_geomean_on_hand_numbers():
    assert bc.median([3.0, 1.0, 2.0]) == 2.0
    assert bc.median([4.0, None, 1.0]) == 2.5  # a failed repetition is left out
    assert bc.median([None]) is None
    assert bc.geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert bc.geomean([1.0, 4.0, 16.0]) == pytest.approx(4.0)
    assert bc.geomean([]) is None


def test_steps_are_read_and_set_in_either_spelling():
    args = ["--max_iters=6", "--lr_decay_iters=6", "--n_layer=1"]
    flags = ["--max_iters", "--lr_decay_iters"]
    assert bc.base_steps(args, flags) == 6
    assert bc.with_steps(args, flags, 24) == [
        "--max_iters=24",
        "--lr_decay_iters=24",
        "--n_layer=1",
    ]
    args = ["-i", "names.txt", "--max-steps", "21"]
    assert bc.base_steps(args, ["--max-steps"]) == 21
    assert bc.with_steps(args, ["--max-steps"], 84) == ["-i", "names.txt", "--max-steps", "84"]
    with pytest.raises(ValueError, match="--epochs"):
        bc.with_steps(args, ["--epochs"], 3)


def test_every_program_with_a_steps_flag_names_one_it_has():
    found = bc.programs()
    assert {"nanogpt_train", "makemore_mlp", "custom_function"} <= set(found)
    stepped = [p for p in found.values() if p.steps]
    assert len(stepped) >= 20
    for prog in stepped:
        assert bc.base_steps(prog.args, prog.steps) > 0, prog.name


def _fake_runs(calls):
    """A stand-in for run_once: a run of n steps takes 0.5 s + n x 20 ms on numpy,
    0.8 s + n x 10 ms on numba and, with ``--capture`` on numba, 1.0 s + n x 5 ms (a whole run:
    1.5 s), peak RSS 100 MiB + n MiB."""
    per_step = {"numpy": 0.020, "numba": 0.010, "captured": 0.005}
    start = {"numpy": 0.5, "numba": 0.8, "captured": 1.0}

    def run_once(framework, script, args, folder, env, timeout, core=None):
        calls.append((framework, list(args), env["OMP_NUM_THREADS"], env.get("TORCHLIGHT_DEVICE")))
        assert ("--capture" in args) == (framework == "captured")
        if "--steps" not in args:
            return 1.5, 100.0
        n = int(args[args.index("--steps") + 1])
        return start[framework] + n * per_step[framework], 100.0 + n

    return run_once


def test_rows_json_and_table_from_stand_in_runs(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(bc, "run_once", _fake_runs(calls))
    monkeypatch.setattr(bc, "torch_available", lambda: False)
    monkeypatch.setattr(bc, "numba_available", lambda: True)
    out = tmp_path / "result.json"
    bc.main(
        [
            "--only",
            "custom_function",
            "tutorial_bow_classifier",
            "--threads",
            "2",
            "--repeat",
            "2",
            "--scale",
            "2",
            "--min-seconds",
            "0",
            "--json",
            str(out),
        ]
    )
    result = json.loads(out.read_text())
    assert result["settings"]["frameworks"] == ["numpy", "numba", "captured"]
    assert any("PyTorch is not importable" in n for n in result["notes"])
    stepped, whole = result["rows"]
    # custom_function's suite setting is --steps 40; --scale 2 runs N = 80 and 2N = 160
    assert stepped["mode"] == "per --steps" and stepped["threads"] == 2
    assert stepped["ms"]["numpy"] == pytest.approx(20.0)
    assert stepped["ms"]["numba"] == pytest.approx(10.0)
    assert stepped["ms"]["captured"] == pytest.approx(5.0)  # custom_function takes --capture
    assert whole["ms"]["captured"] is None  # tutorial_bow_classifier does not
    assert not any(c[0] == "captured" and "--steps" not in c[1] for c in calls)
    assert stepped["ms"]["torch"] is None and stepped["ratio"] is None
    assert stepped["rss_mib"]["numpy"] == pytest.approx(260.0)  # the 2N run's
    assert whole["mode"] == "whole run" and whole["ms"]["numpy"] == pytest.approx(1500.0)
    assert result["summary"]["geomean_ratio"] is None
    step_args = sorted({a[a.index("--steps") + 1] for _, a, _, _ in calls if "--steps" in a})
    assert step_args == ["160", "40", "80"]  # the warm-up runs the suite setting
    assert {c[2] for c in calls} == {"2"}
    assert {c[3] for c in calls} == {"cpu", "numba"}
    # the order of the frameworks rotates from one repetition to the next
    measured = [
        c[0] for c in calls if "--steps" in c[1] and c[1][c[1].index("--steps") + 1] == "80"
    ]
    assert measured == ["numpy", "numba", "captured", "numba", "captured", "numpy"]
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("| program | mode | threads | ms torchlight-numpy")
    assert len(lines[0].split("|")) == len(lines[1].split("|")) == len(lines[2].split("|"))
    assert lines[2].startswith(
        "| custom_function | per --steps | 2 | 20.00 | 10.00 | 5.00 | — | — |"
    )
    assert "PyTorch is not importable" in text


def test_calibration_grows_n_until_the_fastest_framework_fills_min_seconds(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(bc, "run_once", _fake_runs(calls))
    monkeypatch.setattr(bc, "torch_available", lambda: False)
    monkeypatch.setattr(bc, "numba_available", lambda: True)
    prog = bc.programs()["custom_function"]
    # N = 40 extra steps: numpy 0.8 s, numba 0.4 s; 2 s needs 4x on numpy (3.2 s), then numba's
    # 1.6 s needs 2x more: N = 320, which every measured run then uses
    row = bc.bench_program(prog, ["numpy", "numba"], 1, 1, 1, tmp_path, min_seconds=2.0)
    assert row["steps"] == 320 and row["errors"] == {}
    assert row["ms"]["numpy"] == pytest.approx(20.0) and row["ms"]["numba"] == pytest.approx(10.0)
    measured = [c for c in calls if "--steps" in c[1] and c[1][c[1].index("--steps") + 1] == "640"]
    assert len(measured) == 3  # numba's last calibration round, then one repetition each
    # N never grows past half the timeout's worth of a 2N run
    prog.timeout = 10.0
    row = bc.bench_program(prog, ["numpy"], 1, 1, 1, tmp_path, min_seconds=100.0)
    assert row["steps"] == 40  # 8x would make the 2N run 16.8 s


def test_summary_takes_the_per_step_rows_only():
    def row(name, mode, ratio):
        return {"program": name, "mode": mode, "threads": 1, "ratio": ratio}

    rows = [
        row("a", "per --steps", 0.5),
        row("b", "per --epochs", 2.0),
        row("c", "per --steps", None),
        row("d", "whole run", 9.0),
    ]
    summary = bc.summarize(rows)
    assert summary["geomean_ratio"] == pytest.approx(1.0)
    assert summary["worst_ratio"] == 2.0 and summary["worst_program"].startswith("b ")
    assert summary["rows_in_summary"] == 2


def test_a_real_run_of_a_tiny_program_on_the_numpy_backend(monkeypatch):
    monkeypatch.setattr(bc, "torch_available", lambda: False)
    result = bc.run(["custom_function"], [1], repeat=1, scale=1, wanted=("numpy", "torch"))
    (row,) = result["rows"]
    assert row["errors"] == {}
    assert math.isfinite(row["ms"]["numpy"]) and row["rss_mib"]["numpy"] > 10
    assert row["ms"]["numba"] is None and row["ms"]["torch"] is None
    assert result["notes"] == ["PyTorch is not importable: its column is left out"]
    text = bc.table(result["rows"], result["summary"], result["notes"])
    assert "| custom_function | per --steps | 1 |" in text


def test_ratio_takes_the_faster_torchlight_backend_and_skips_noise():
    assert bc.ratio({"numpy": 30.0, "numba": 20.0, "captured": 5.0, "torch": 10.0}) == 0.5
    assert bc.ratio({"numpy": 30.0, "numba": 20.0, "captured": None, "torch": 10.0}) == 2.0
    assert bc.ratio({"numpy": 30.0, "numba": 20.0, "torch": 10.0}) == pytest.approx(2.0)
    assert bc.ratio({"numpy": 5.0, "numba": None, "torch": 10.0}) == pytest.approx(0.5)
    # a negative step time (t(2N) < t(N)) is noise, never the "faster" backend
    assert bc.ratio({"numpy": 30.0, "numba": -1.0, "torch": 10.0}) == pytest.approx(3.0)
    assert bc.ratio({"numpy": 30.0, "numba": 20.0, "torch": -4.0}) is None
    assert bc.ratio({"numpy": 30.0, "numba": 20.0, "torch": None}) is None


def test_paired_runs_cancel_a_slower_core(monkeypatch, tmp_path):
    """--paired: each torchlight backend beside PyTorch, on both core orders per repetition. Core
    1 is 1.5x slower here, so every single pair is off by 1.5x one way or the other; the
    geometric mean of a repetition's two pairs gives the true ratio back."""
    calls, lock = [], threading.Lock()
    per_step = {"numpy": 0.020, "numba": 0.010, "torch": 0.008}

    def run_once(framework, script, args, folder, env, timeout, core=None):
        with lock:
            calls.append((framework, core))
        n = int(args[args.index("--steps") + 1])
        return 0.5 + n * per_step[framework] * (1.5 if core == 1 else 1.0), 100.0

    monkeypatch.setattr(bc, "run_once", run_once)
    prog = bc.programs()["custom_function"]
    row = bc.bench_program(
        prog, ["numpy", "numba", "torch"], 1, 3, 1, tmp_path, min_seconds=0, paired=(0, 1)
    )
    assert row["errors"] == {}
    for fw, want in (("numpy", 2.5), ("numba", 1.25)):
        assert row["pair_ratios"][fw] == pytest.approx([want] * 3)
    assert row["ratio"] == pytest.approx(1.25)
    measured = [c for c in calls if c[1] is not None]
    # 3 repetitions x 2 backends x 2 core orders x (N and 2N runs) on each side
    assert len(measured) == 3 * 2 * 2 * 2 * 2
    for fw in ("numpy", "numba"):
        assert sorted(core for f, core in measured if f == fw) == [0] * 6 + [1] * 6
    assert sorted(core for f, core in measured if f == "torch") == [0] * 12 + [1] * 12


def test_paired_needs_one_thread_and_pytorch(monkeypatch):
    monkeypatch.setattr(bc, "torch_available", lambda: True)
    with pytest.raises(SystemExit, match="--threads 1"):
        bc.run(["custom_function"], [1, 2], repeat=1, scale=1, paired=True)
    monkeypatch.setattr(bc, "torch_available", lambda: False)
    with pytest.raises(SystemExit, match="beside PyTorch"):
        bc.run(["custom_function"], [1], repeat=1, scale=1, paired=True)


def test_frameworks_chooses_the_columns(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(bc, "run_once", _fake_runs(calls))
    monkeypatch.setattr(bc, "numba_available", lambda: True)
    out = tmp_path / "result.json"
    argv = ["--only", "custom_function", "--threads", "1", "--repeat", "1"]
    bc.main([*argv, "--min-seconds", "0", "--frameworks", "numpy", "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["settings"]["frameworks"] == ["numpy"]
    assert {c[0] for c in calls} == {"numpy"}
