"""The mini-GPT project (projects/mini-gpt): target shift, KV-cache equivalence, and a training smoke test
on the real tiny Shakespeare text (``$TORCHLIGHT_DATA``, else ``../shared/data`` next to the repo)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import torchlight as tl

PROJECT = Path(__file__).resolve().parents[1] / "projects" / "mini-gpt"
MODULES = ("corpus", "model", "train", "post", "sample")


@pytest.fixture(scope="module")
def gpt(project_modules):
    with project_modules(PROJECT, MODULES) as modules:
        yield modules


@pytest.fixture(scope="module")
def corpus(gpt):
    return gpt.corpus.load_corpus("char")


def test_corpus_split_and_vocabulary(corpus):
    assert corpus.vocab_size == 65
    assert corpus.train_chars + corpus.val_chars == 1_115_394
    assert corpus.val_chars == round(0.1 * 1_115_394)
    assert corpus.decode(corpus.train_ids[:14]) == "First Citizen:"
    assert corpus.decode(corpus.val_ids[-8:]) == "waking.\n"


def test_targets_are_inputs_shifted_by_one(gpt, corpus):
    ids = corpus.train_ids
    T = 16
    starts = np.array([0, 5, 1000, len(ids) - T - 1])
    x, y = gpt.corpus.make_batch(ids, starts, T)
    x, y = x.to_numpy(), y.to_numpy()
    assert x.shape == y.shape == (4, T) and x.dtype == y.dtype == np.int64
    for b, s in enumerate(starts):
        np.testing.assert_array_equal(x[b], ids[s : s + T])
        np.testing.assert_array_equal(y[b], ids[s + 1 : s + T + 1])  # y[t] = x[t+1]
    np.testing.assert_array_equal(y[:, :-1], x[:, 1:])
    # the last window reaches the last token exactly, and random starts never overrun
    assert y[-1, -1] == ids[-1]
    rs = gpt.corpus.random_starts(len(ids), 1000, T, np.random.default_rng(0))
    assert rs.min() >= 0 and rs.max() + T + 1 <= len(ids)


def _tiny_model(gpt, block_size=16, dropout=0.1, tie=True):
    tl.manual_seed(0)
    cfg = gpt.model.GPTConfig(
        vocab_size=65,
        block_size=block_size,
        n_layer=2,
        n_head=2,
        n_embd=16,
        dropout=dropout,
        tie_weights=tie,
    )
    return gpt.model.GPT(cfg)


@pytest.mark.parametrize("tie", [True, False])
def test_incremental_forward_with_cache_matches_full_forward(gpt, tie):
    model = _tiny_model(gpt, tie=tie).eval()
    idx = np.random.default_rng(1).integers(0, 65, (2, 16))
    with tl.no_grad():
        full, _ = model(tl.tensor(idx))
        cache = gpt.model.KVCache(2)
        parts = [model(tl.tensor(idx[:, :5]), cache=cache)[0]]  # a prompt of 5, then one at a time
        for t in range(5, 16):
            parts.append(model(tl.tensor(idx[:, t : t + 1]), cache=cache)[0])
    assert cache.length == 16
    inc = np.concatenate([p.to_numpy() for p in parts], axis=1)
    np.testing.assert_allclose(inc, full.to_numpy(), rtol=1e-4, atol=1e-5)


def test_sampling_with_and_without_cache_gives_the_same_logits(gpt):
    model = _tiny_model(gpt, block_size=16)
    # 40 tokens with a 16-token context: the window slides (and the cache is rebuilt) several times
    new_c, logits_c = gpt.model.generate(
        model, [1, 2, 3], 40, temperature=1.0, top_k=10, seed=3, use_cache=True, return_logits=True
    )
    new_u, logits_u = gpt.model.generate(
        model, [1, 2, 3], 40, temperature=1.0, top_k=10, seed=3, use_cache=False, return_logits=True
    )
    assert new_c == new_u and len(new_c) == 40
    np.testing.assert_allclose(logits_c, logits_u, rtol=1e-4, atol=1e-5)
    assert model.training  # generate restores the mode


def test_causal_mask_hides_the_future(gpt):
    model = _tiny_model(gpt).eval()
    idx = np.random.default_rng(2).integers(0, 65, (1, 12))
    changed = idx.copy()
    changed[0, 8:] = (changed[0, 8:] + 7) % 65
    with tl.no_grad():
        a, _ = model(tl.tensor(idx))
        b, _ = model(tl.tensor(changed))
    np.testing.assert_allclose(a.to_numpy()[0, :8], b.to_numpy()[0, :8], rtol=1e-5, atol=1e-6)
    assert not np.allclose(a.to_numpy()[0, 8:], b.to_numpy()[0, 8:])


@pytest.mark.slow
def test_train_save_reload_resume_and_sample(gpt, corpus, tmp_path):
    """Train the tiny preset on the real text; loss falls; the checkpoint reloads to the same
    model; a run resumed halfway ends where an uninterrupted run does; cached sampling agrees."""
    T = gpt.train

    def cfg(**kw):
        args = T.build_parser().parse_args(
            [
                "--preset",
                "tiny",
                "--no-progress",
                "--max-iters",
                "24",
                "--eval-interval",
                "12",
                "--dropout",
                "0.1",
            ]
        )
        c = T.resolve_config(args)
        for k, v in kw.items():
            setattr(c, k, v)
        return c

    quiet = lambda *a, **k: None  # noqa: E731
    full = tmp_path / "full"
    summary = T.train(cfg(), full, corpus=corpus, log=quiet)
    hist = json.loads((full / "history.json").read_text())
    assert summary["steps"] == 24 and len(hist["train_loss"]) == 24
    assert hist["eval"][0]["step"] == 12 and hist["eval"][-1]["step"] == 24
    first, last = np.mean(hist["train_loss"][:3]), np.mean(hist["train_loss"][-3:])
    assert last < first - 0.3, (first, last)  # ~4.2 (uniform over 65) falls fast
    assert hist["eval"][-1]["val_loss"] < hist["eval"][0]["val_loss"]
    assert hist["lr"][0] < hist["lr"][4] and hist["lr"][-1] < hist["lr"][6]  # warmup, then decay
    assert (
        abs(summary["val_bpc"] - summary["val_loss"] / np.log(2)) < 1e-9
    )  # char level: 1 token = 1 char

    # reload: the saved model reproduces the recorded validation loss on the same batches
    model, ckpt = T.load_model(full)
    assert int(ckpt["step"]) == 24
    c = cfg()
    val_starts = T.fixed_starts(len(corpus.val_ids), c, c.seed + 2)
    again = T.estimate_loss(model, corpus.val_ids, val_starts, c.block_size)
    assert again == pytest.approx(summary["val_loss"], rel=1e-6)

    # interrupted at 12 steps, then resumed from the checkpoint to 24: the same weights
    half = tmp_path / "half"
    T.train(cfg(), half, corpus=corpus, log=quiet, stop_at=12)
    args = T.build_parser().parse_args(
        ["--resume", "--out", str(half), "--max-iters", "24", "--no-progress"]
    )
    resumed_cfg = T.resolve_config(args, T.load_checkpoint(half / T.CKPT_NAME)["train_config"])
    assert resumed_cfg.max_iters == 24 and resumed_cfg.n_embd == c.n_embd
    resumed = T.train(resumed_cfg, half, resume=True, corpus=corpus, log=quiet)
    assert resumed["steps"] == 24 and resumed["steps_this_run"] == 12
    m_half, _ = T.load_model(half)
    sd_full, sd_half = model.state_dict(), m_half.state_dict()
    assert sd_full.keys() == sd_half.keys()
    for k in sd_full:
        np.testing.assert_allclose(
            sd_half[k].to_numpy(), sd_full[k].to_numpy(), rtol=1e-5, atol=1e-6, err_msg=k
        )
    assert resumed["val_loss"] == pytest.approx(summary["val_loss"], rel=1e-5)
    h2 = json.loads((half / "history.json").read_text())
    np.testing.assert_allclose(h2["train_loss"], hist["train_loss"], rtol=1e-5)

    # sampling from the trained model: cache and no cache agree, and the text decodes
    prompt = corpus.encode("ROMEO:")
    a, la = gpt.model.generate(
        model, prompt, 60, temperature=0.8, top_k=20, seed=0, return_logits=True
    )
    b, lb = gpt.model.generate(
        model, prompt, 60, temperature=0.8, top_k=20, seed=0, use_cache=False, return_logits=True
    )
    assert a == b
    np.testing.assert_allclose(la, lb, rtol=1e-4, atol=1e-5)
    assert len(corpus.decode(a)) == 60

    # post.py end to end on the small run: metrics, samples and the plot
    result = gpt.post.main(["--out", str(full), "--sample-tokens", "40", "--max-windows", "64"])
    v = result["validation"]
    assert v["perplexity"] == pytest.approx(np.exp(v["loss"]))
    assert 0.0 < v["top1_accuracy"] < 1.0
    assert set(result["samples"]) == {"0.8", "1.2"}
    assert (full / "gpt_eval.png").stat().st_size > 10_000
