"""bench_memory.py and profile_gpt_memory.py: the arithmetic on hand numbers, the table, a real
child on the numpy backend, and the graph accounting on a graph whose saved tensors are known."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torchlight.nn")
sys.path.insert(0, str(Path(__file__).parent))

import bench_memory as bm  # noqa: E402
import profile_gpt_memory as pm  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_median_step_only_and_ratio_on_hand_numbers():
    assert bm.median([300.0, 100.0, 200.0]) == 200.0
    assert bm.median([4.0, None, 2.0]) == 3.0
    assert bm.median([None]) is None
    # per repetition: peak minus that repetition's baseline
    assert bm.step_only([250.0, 260.0, None], [50.0, 40.0, 45.0]) == [200.0, 220.0, None]
    assert bm.ratio(180.0, 150.0) == pytest.approx(1.2)
    assert bm.ratio(180.0, None) is None and bm.ratio(None, 150.0) is None
    assert bm.ratio(1.0, 0.0) is None


def test_rows_and_table_from_hand_samples():
    def sample(peak, baseline, steady):
        return {"peak": peak, "baseline": baseline, "steady": steady}

    rows = bm.add_ratios(
        [
            bm.row("numpy", [sample(240, 40, 195), sample(230, 50, 180), sample(236, 46, 190)]),
            bm.row("torch", [sample(470, 320, 150), sample(480, 330, 150), sample(475, 325, 140)]),
        ]
    )
    numpy_row, torch_row = rows
    assert numpy_row["peak_mib"] == 236 and numpy_row["baseline_mib"] == 46
    # step-only is the median of the per-repetition differences 200, 180, 190
    assert numpy_row["step_only_mib"] == 190 and numpy_row["steady_mib"] == 190
    assert torch_row["step_only_mib"] == 150 and torch_row["steady_mib"] == 150
    assert numpy_row["step_only_ratio"] == pytest.approx(190 / 150)
    assert numpy_row["peak_ratio"] == pytest.approx(236 / 475)
    assert torch_row["step_only_ratio"] == 1.0
    lines = bm.table(rows).splitlines()
    assert len({len(line.split("|")) for line in lines}) == 1
    assert lines[2] == ("| torchlight-numpy | 236.0 | 46.0 | 190.0 | 190.0 | 0.50 | 1.27 | 1.27 |")
    alone = bm.add_ratios([bm.row("numpy", [sample(240, 40, 195)])])
    assert alone[0]["step_only_ratio"] is None
    assert bm.table(alone).splitlines()[2].endswith("| — | — | — |")


def test_a_real_child_on_the_numpy_backend():
    base = bm.run_child("numpy", 0)
    run = bm.run_child("numpy", 2)
    # the graph of one step of this model holds > 100 MiB of activations (see the profile test)
    assert run["peak_mib"] > base["peak_mib"] + 50
    assert base["peak_mib"] > 20 and base["later_peak_kib"] is None
    if bm.reset_peak():  # /proc/self/clear_refs works here
        assert run["later_peak_kib"] / 1024 > base["peak_mib"] + 50
        assert run["later_peak_kib"] <= run["peak_kib"]


def test_run_leaves_out_what_is_missing(monkeypatch):
    monkeypatch.setattr(bm, "torch_available", lambda: False)
    monkeypatch.setattr(bm, "numba_available", lambda: False)
    calls = []
    monkeypatch.setattr(
        bm, "measure", lambda fw, steps: calls.append(fw) or {"peak": 1, "baseline": 0, "steady": 1}
    )
    result = bm.run(["numpy", "numba", "torch"], repeat=2, steps=3, progress=False)
    assert calls == ["numpy", "numpy"]
    assert [r["framework"] for r in result["rows"]] == ["numpy"]
    assert any("PyTorch is not importable" in n for n in result["notes"])
    assert any("numba backend is not available" in n for n in result["notes"])


def test_graph_accounting_on_a_graph_with_known_saved_tensors():
    import torchlight as tl

    class Keep(tl.autograd.Function):
        """y = 2x, saving its input (as an op whose backward reads it would)."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Pass(tl.autograd.Function):
        """y = 2x, saving nothing."""

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    p = tl.zeros(1000, requires_grad=True)  # 4000 bytes, a parameter: not counted
    h1 = Pass.apply(p)
    h2 = Keep.apply(h1)  # saves h1
    h3 = Pass.apply(h2)
    h4 = Pass.apply(h3[:500])
    x = tl.ones(10)  # data: (x * 2).sum() needs no gradient, so it has no node
    loss = h4.sum() + (x * 2).sum()
    buffers = pm.graph_buffers(loss, [p])
    s = pm.summary(buffers)
    assert s["saved"] == 4000  # h1, saved by Keep
    # h2, h3 and h4 are alive (this test holds them) but the graph does not hold them: it links
    # their nodes, and the ops that used them saved nothing
    assert s["held_only"] == 4  # the 0-d (x * 2).sum(), held as an input of the last add
    assert s["saved_by"] == {("Pass", (1000,)): 4000}
    assert sum(s["held_only_by"].values()) == s["held_only"]
    # a view's buffer is its base's: the slice of h3 adds no bytes of its own
    assert pm.owner(np.arange(10)[2:5][::2]).shape == (10,)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (it is optional)")
def test_torch_saved_bytes_counts_each_storage_once():
    import torch

    w = torch.ones(10, requires_grad=True)
    x = torch.arange(100.0).reshape(10, 10)

    def forward():
        y = x * w  # saves x (400 bytes) and w (a parameter: left out)
        return (y.exp() * 1.0).sum()  # exp saves its output (400 bytes)

    total, by_shape = pm.torch_saved_bytes(forward, [w])
    assert total == 800 and by_shape == {(10, 10): 800}
