"""The English→French translation project (projects/machine-translation): targets, padding masks in
the encoder and the attention, the loss, and a train + post smoke test on a few hundred real
Tatoeba pairs (``$TORCHLIGHT_DATA``, else ``../shared/data`` next to the repo)."""

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
PROJECT = ROOT / "projects" / "machine-translation"
MODULES = ("data", "model", "train", "post")


@pytest.fixture(scope="module")
def mt(project_modules):
    with project_modules(PROJECT, MODULES) as modules:
        yield modules


def _toy(mt, src_lens=(3, 5, 2), tgt_lens=(4, 2, 6), seed=0):
    rng = np.random.default_rng(seed)
    src = [np.r_[rng.integers(4, 40, size=k), mt.data.EOS] for k in src_lens]
    tgt = [np.r_[rng.integers(4, 30, size=k), mt.data.EOS] for k in tgt_lens]
    return mt.data.Encoded(src, tgt)


def _model(mt, **kw):
    tl.manual_seed(0)
    cfg = mt.model.ModelConfig(40, 30, emb=12, hidden=8, dropout=0.0, **kw)
    m = mt.model.Seq2Seq(cfg)
    m.eval()
    return m


def test_decoder_input_starts_with_sos_and_target_ends_with_eos(mt):
    d = mt.data
    b = d.make_batch(_toy(mt), [0, 1, 2])
    assert b.src.shape == (6, 3) and b.tgt.shape == b.dec_in.shape == (7, 3)
    for j, n in enumerate((5, 3, 7)):  # target lengths with EOS
        assert b.dec_in[0, j] == d.SOS
        assert b.tgt[n - 1, j] == d.EOS and (b.tgt[n:, j] == d.PAD).all()
        np.testing.assert_array_equal(b.dec_in[1:n, j], b.tgt[: n - 1, j])  # shifted by one
        assert (b.dec_in[n:, j] == d.PAD).all()


@pytest.mark.parametrize("bidirectional", [True, False])
def test_encoder_ignores_padding(mt, bidirectional):
    """A padded sentence gets the outputs and final states it has alone (both directions)."""
    m = _model(mt, bidirectional=bidirectional)
    src = mt.data.make_batch(_toy(mt), [0, 1, 2]).src  # lengths 4, 6, 3
    with tl.no_grad():
        out, h = m.encoder(tl.tensor(src))
        for j, n in enumerate((4, 6, 3)):
            out1, h1 = m.encoder(tl.tensor(src[:n, j : j + 1]))
            np.testing.assert_allclose(out.numpy()[:n, j], out1.numpy()[:, 0], atol=1e-5)
            np.testing.assert_allclose(h.numpy()[:, j], h1.numpy()[:, 0], atol=1e-5)
        if bidirectional:  # the forward half agrees with nn.GRU on the unpadded longest sentence
            ref, _ = m.encoder.rnn(m.encoder.embedding(tl.tensor(src[:, 1:2])))
            np.testing.assert_allclose(out.numpy()[:, 1], ref.numpy()[:, 0], atol=1e-5)


@pytest.mark.parametrize("attention", ["general", "dot"])
def test_decoding_in_a_padded_batch_matches_decoding_alone(mt, attention):
    m = _model(mt, attention=attention)
    data = _toy(mt)
    b = mt.data.make_batch(data, [0, 1, 2])
    together = m.greedy(b.src, max_len=8)
    beams = m.beam_search(b.src, beam=3, max_len=8)
    for j, n in enumerate((4, 6, 3)):
        assert m.greedy(b.src[:n, j : j + 1], max_len=8)[0] == together[j]
        assert m.beam_search(b.src[:n, j : j + 1], beam=3, max_len=8)[0] == beams[j]
    # the loss of a batch is the token-weighted mean of its sentences' losses
    with tl.no_grad():
        total = m.loss(b).item() * b.n_tokens
        parts = sum(
            m.loss(mt.data.make_batch(data, [j])).item() * (n + 1) for j, n in enumerate((4, 2, 6))
        )
    assert total == pytest.approx(parts, rel=1e-4)


def test_checkpoints_from_before_the_decoder_was_an_nn_gru_still_load(mt):
    """A state dict naming the decoder's GRU ``decoder.cell.*`` (an ``nn.GRUCell``, as train.py
    wrote them before) loads into today's model as the same tensors."""
    m = _model(mt)
    state = m.state_dict()
    old = {
        (k.replace("decoder.rnn.", "decoder.cell.")[: -len("_l0")] if "decoder.rnn." in k else k): v
        for k, v in state.items()
    }
    assert "decoder.cell.weight_hh" in old and "decoder.rnn.weight_hh_l0" not in old
    fresh = _model(mt)
    for p in fresh.parameters():
        p.data.zero_()
    fresh.load_state_dict(mt.post.current_names(old))
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), state[k].numpy(), err_msg=k)


def test_scheduled_sampling_batch_runs(mt):
    m = _model(mt)
    m.train()
    b = mt.data.make_batch(_toy(mt), [0, 1, 2])
    loss = m.loss(b, teacher_forcing=False)
    loss.backward()
    assert np.isfinite(loss.item())
    assert m.decoder.rnn.weight_hh_l0.grad is not None


@pytest.mark.slow
def test_train_and_post_smoke(mt, tmp_path):
    """train.py then post.py on 300 real pairs, a tiny model, a few dozen batches."""
    env = dict(os.environ)
    env.setdefault("TORCHLIGHT_DATA", str(ROOT.parent / "shared" / "data"))
    if not (Path(env["TORCHLIGHT_DATA"]) / "eng-fra" / "fra.txt").exists():
        pytest.skip("the Tatoeba eng-fra file is not available")
    out = tmp_path / "out"
    common = ["--out", str(out)]
    train = [
        sys.executable,
        str(PROJECT / "train.py"),
        *common,
        "--max-pairs",
        "300",
        "--n-val",
        "100",
        "--n-test",
        "100",
        "--epochs",
        "5",
        "--batch-size",
        "32",
        "--emb",
        "32",
        "--hidden",
        "32",
        "--lr",
        "1e-2",
        "--src-min-freq",
        "1",
        "--tgt-min-freq",
        "1",
        "--eval-batch",
        "100",
        "--tf-end",
        "0.5",
        "--no-tqdm",
    ]
    r = subprocess.run(train, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "val BLEU" in r.stdout
    for name in ("best.npz", "last.npz", "history.json"):
        assert (out / name).exists(), name
    history = json.loads((out / "history.json").read_text())
    assert len(history["evals"]) == 5 and history["evals"][-1]["step"] == 50

    post = [sys.executable, str(PROJECT / "post.py"), *common, "--batch", "100", "--n-samples", "3"]
    r = subprocess.run(post, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "mt_eval.png").stat().st_size > 10_000
    res = json.loads((out / "test_results.json").read_text())
    assert res["n_test"] == 100 and len(res["samples"]) == 3
    for key in ("greedy", "beam4"):
        assert 0.0 <= res[key]["bleu"] <= 100.0
        assert res[key]["eos_terminated"] > 0.5, res[key]

    # decoding from the reloaded checkpoint: every hypothesis stops at its first EOS, or at max_len
    model, src_vocab, tgt_vocab, targs, _ = mt.post.load_checkpoint(out / "best.npz")
    pairs = mt.data.split_pairs(
        mt.data.load_pairs(), seed=targs["seed"], n_val=100, n_test=100, max_train=300
    ).test[:20]
    enc = mt.data.encode(pairs, src_vocab, tgt_vocab)
    src = mt.data.make_batch(enc, range(20)).src
    for hyps in (model.greedy(src, max_len=12), model.beam_search(src, beam=4, max_len=12)):
        ended = 0
        for h in hyps:
            assert mt.data.EOS not in h[:-1]
            assert h[-1] == mt.data.EOS or len(h) == 12
            ended += h[-1] == mt.data.EOS
        assert ended > 0
