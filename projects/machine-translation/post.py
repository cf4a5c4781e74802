"""Evaluate a trained translator on the held-out test set.

    python projects/machine-translation/post.py                     # out/best.npz, greedy + beam 4
    python projects/machine-translation/post.py --ckpt out/last.npz --no-beam

Reloads the checkpoint written by ``train.py`` (weights, config, vocabularies, the split
arguments), rebuilds exactly the same split, decodes the test pairs (never seen in training nor
used for any choice) with greedy decoding and with beam search, and reports:

- corpus BLEU with ``sacrebleu`` (its default 13a tokenizer) against the normalised, tokenised
  references (the real words; the model's ``<unk>`` never matches),
- the exact-match rate (hypothesis == reference, token for token),
- how many hypotheses are EOS-terminated (the rest hit ``--max-len``),
- sample translations next to their references.

Writes ``<out>/test_results.json`` and ``<out>/mt_eval.png``: the training / validation loss
curves, the validation BLEU, and the attention weights of one test sentence.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see train.py
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import torchlight as tl  # noqa: E402
from torchlight.data.text import WordVocab  # noqa: E402

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from data import EOS, bucketed_batches, encode, load_pairs, make_batch, reference_text, split_pairs  # noqa: E402
from model import ModelConfig, Seq2Seq  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(HERE / "out"))
    p.add_argument("--ckpt", default=None, help="default: <out>/best.npz")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--no-beam", dest="use_beam", action="store_false")
    p.add_argument("--alpha", type=float, default=1.0, help="beam length normalisation exponent")
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--max-len", type=int, default=30)
    p.add_argument("--n-samples", type=int, default=12)
    return p.parse_args(argv)


def current_names(state):
    """``state`` with the names of today's model: checkpoints written before the decoder's GRU
    became an ``nn.GRU`` call its parameters ``decoder.cell.weight_ih`` (an ``nn.GRUCell``'s),
    now ``decoder.rnn.weight_ih_l0`` (the same tensors)."""
    old = "decoder.cell."
    return {
        (f"decoder.rnn.{k[len(old) :]}_l0" if k.startswith(old) else k): v for k, v in state.items()
    }


def load_checkpoint(path):
    ck = tl.load(str(path))
    cfg = ModelConfig(**json.loads(ck["config"]))
    model = Seq2Seq(cfg)
    model.load_state_dict(current_names(ck["model"]))
    model.eval()
    src_vocab = WordVocab.from_dict(json.loads(ck["src_vocab"]))
    tgt_vocab = WordVocab.from_dict(json.loads(ck["tgt_vocab"]))
    return model, src_vocab, tgt_vocab, json.loads(ck["args"]), json.loads(ck["history"])


def decode_all(model, data, batch, decode):
    hyps = [None] * len(data)
    for idx in bucketed_batches(data, batch, None):
        b = make_batch(data, idx)
        for i, seq in zip(idx, decode(b.src)):
            hyps[i] = seq
    return hyps


def score(hyps, pairs, tgt_vocab):
    import sacrebleu

    text = [tgt_vocab.decode(h) for h in hyps]
    refs = [reference_text(f) for _, f in pairs]
    bleu = sacrebleu.corpus_bleu(text, [refs], force=True)
    exact = float(np.mean([h == r for h, r in zip(text, refs)]))
    eos = float(np.mean([len(h) > 0 and h[-1] == EOS for h in hyps]))
    return {
        "bleu": bleu.score,
        "bleu_signature": str(bleu),
        "exact_match": exact,
        "eos_terminated": eos,
    }, text


def plot(path, history, attn, src_tokens, out_tokens, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    ax = axes[0]
    curve = np.array(history.get("train_curve", []), dtype=float).reshape(-1, 3)
    evals = history.get("evals", [])
    if len(curve):  # single-batch losses (every 50th batch), in the background
        ax.plot(
            curve[:, 1],
            curve[:, 2],
            ".",
            color="tab:blue",
            alpha=0.25,
            markersize=3,
            label="train, single batches",
        )
    if evals:
        ax.plot(
            [e["train_minutes"] for e in evals],
            [e["train_loss"] for e in evals],
            "s-",
            color="tab:blue",
            label="train, mean since previous evaluation",
        )
        ax.plot(
            [e["train_minutes"] for e in evals],
            [e["val_loss"] for e in evals],
            "o-",
            color="tab:orange",
            label="validation (no dropout, teacher forced)",
        )
    ax.set_xlabel("training minutes")
    ax.set_ylabel("cross-entropy per token")
    ax.set_title("loss")
    ax.legend()
    ax = axes[1]
    if evals:
        ax.plot(
            [e["train_minutes"] for e in evals],
            [e["val_bleu"] for e in evals],
            "o-",
            color="tab:green",
        )
    ax.set_xlabel("training minutes")
    ax.set_ylabel("BLEU (sacrebleu, greedy)")
    ax.set_title("validation BLEU")
    ax.grid(alpha=0.3)
    ax = axes[2]
    ax.imshow(attn, cmap="viridis", aspect="auto", vmin=0, vmax=1)
    ax.set_xticks(range(len(src_tokens)))
    ax.set_xticklabels(src_tokens, rotation=60, ha="right")
    ax.set_yticks(range(len(out_tokens)))
    ax.set_yticklabels(out_tokens)
    ax.set_xlabel("source (English)")
    ax.set_ylabel("output (French)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out)
    tl.set_default_device(args.backend)
    ckpt = Path(args.ckpt) if args.ckpt else out / "best.npz"
    model, src_vocab, tgt_vocab, targs, history = load_checkpoint(ckpt)
    pairs = load_pairs(targs["max_words"])
    splits = split_pairs(
        pairs,
        seed=targs["seed"],
        n_val=targs["n_val"],
        n_test=targs["n_test"],
        max_train=targs["max_pairs"],
    )
    test = encode(splits.test, src_vocab, tgt_vocab)
    last = history["evals"][-1] if history.get("evals") else {}
    print(
        f"checkpoint {ckpt}: step {last.get('step')}, {last.get('train_minutes')} training minutes, "
        f"val BLEU {last.get('val_bleu')}; test pairs {len(test):,}",
        flush=True,
    )

    results = {
        "checkpoint": str(ckpt),
        "n_test": len(test),
        "train_minutes": last.get("train_minutes"),
        "step": last.get("step"),
        "val_bleu": last.get("val_bleu"),
    }
    with tl.no_grad():
        t0 = time.time()
        greedy = decode_all(
            model, test, args.batch, lambda s: model.greedy(s, max_len=args.max_len)
        )
        results["greedy"], greedy_text = score(greedy, splits.test, tgt_vocab)
        results["greedy"]["seconds"] = round(time.time() - t0, 1)
        print(
            f"greedy: BLEU {results['greedy']['bleu']:.2f}, exact match {results['greedy']['exact_match']:.1%}, "
            f"EOS-terminated {results['greedy']['eos_terminated']:.1%} ({results['greedy']['seconds']} s)",
            flush=True,
        )
        beam_text = None
        if args.use_beam:
            t0 = time.time()
            beam = decode_all(
                model,
                test,
                args.batch // 2 or 1,
                lambda s: model.beam_search(
                    s, beam=args.beam, max_len=args.max_len, alpha=args.alpha
                ),
            )
            key = f"beam{args.beam}"
            results[key], beam_text = score(beam, splits.test, tgt_vocab)
            results[key]["seconds"] = round(time.time() - t0, 1)
            results[key]["alpha"] = args.alpha
            print(
                f"beam {args.beam}: BLEU {results[key]['bleu']:.2f}, exact match {results[key]['exact_match']:.1%}, "
                f"EOS-terminated {results[key]['eos_terminated']:.1%} ({results[key]['seconds']} s)",
                flush=True,
            )
        print(results["greedy"]["bleu_signature"])

        samples = []
        for i in range(min(args.n_samples, len(splits.test))):
            en, fr = splits.test[i]
            s = {"en": en, "ref": reference_text(fr), "greedy": greedy_text[i]}
            if beam_text is not None:
                s["beam"] = beam_text[i]
            samples.append(s)
            print(
                f"\nEN    {en}\nREF   {s['ref']}\nGREEDY {s['greedy']}"
                + (f"\nBEAM  {s['beam']}" if beam_text else "")
            )
        results["samples"] = samples

        # attention heat map of one test sentence: the first one of 5 to 8 source tokens that
        # greedy decoding translates exactly (else the first one of that length)
        refs = [reference_text(f) for _, f in splits.test]
        sized = [i for i in range(len(test)) if 6 <= len(test.src[i]) <= 9] or [0]
        pick = next((i for i in sized if greedy_text[i] == refs[i]), sized[0])
        src = test.src[pick][:, None]
        seqs, attn = model.greedy(src, max_len=args.max_len, return_attention=True)
        out_ids = seqs[0]
        attn = attn[0, : len(out_ids)]
        src_tokens = src_vocab.lookup_tokens(test.src[pick])
        out_tokens = tgt_vocab.lookup_tokens(out_ids)
    title = f"attention: {splits.test[pick][0]!r}\nref: {reference_text(splits.test[pick][1])!r}"
    plot(out / "mt_eval.png", history, attn, src_tokens, out_tokens, title)
    (out / "test_results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print(f"\nwrote {out / 'mt_eval.png'} and {out / 'test_results.json'}")
    return results


if __name__ == "__main__":
    main()
