"""Evaluate a trained mini-GPT: loss, perplexity, bits per character, accuracy, samples and a plot.

    python projects/mini-gpt/post.py                  # reads projects/mini-gpt/out/
    python projects/mini-gpt/post.py --out DIR --top-k 40 --sample-tokens 500

The validation metrics are computed on the *whole* validation split (the last 10% of tiny
Shakespeare), cut into non-overlapping windows of ``block_size`` tokens (the final partial window
is dropped): every token is predicted from the tokens before it in its window.

* loss: mean cross-entropy in nats per token; perplexity = exp(loss)
* bits per character: loss * tokens / characters / ln 2 (comparable across tokenizers)
* top-1 accuracy: how often the most likely next token is the right one

Writes ``<out>/eval.json``, ``<out>/samples.txt`` and ``<out>/gpt_eval.png`` (loss curves on the
left, the learning-rate schedule on the right).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import torchlight as tl

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from corpus import bits_per_char, load_corpus  # noqa: E402
from model import generate  # noqa: E402
from train import DEFAULT_OUT, load_model  # noqa: E402

TEMPERATURES = (0.8, 1.2)


def evaluate_split(
    model,
    ids: np.ndarray,
    block_size: int,
    batch_size: int = 32,
    max_windows: int | None = None,
    device=None,
) -> dict:
    """Loss and top-1 accuracy over non-overlapping windows of ``ids``."""
    n_windows = (len(ids) - 1) // block_size
    if max_windows is not None:
        n_windows = min(n_windows, max_windows)
    starts = np.arange(n_windows) * block_size
    total_loss, correct, count = 0.0, 0, 0
    model.eval()
    with tl.no_grad():
        for i in range(0, n_windows, batch_size):
            s = starts[i : i + batch_size]
            offsets = s[:, None] + np.arange(block_size + 1)
            w = ids[offsets]
            x = tl.tensor(np.ascontiguousarray(w[:, :-1]), device=device)
            y_np = np.ascontiguousarray(w[:, 1:])
            logits, loss = model(x, tl.tensor(y_np, device=device))
            n = y_np.size
            total_loss += loss.item() * n
            pred = logits.argmax(-1).to_numpy()
            correct += int((pred == y_np).sum())
            count += n
    loss = total_loss / count
    return {
        "loss": loss,
        "perplexity": math.exp(loss),
        "top1_accuracy": correct / count,
        "tokens": count,
        "windows": n_windows,
    }


def plot(history: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    steps = np.asarray(history["step"])
    tr = np.asarray(history["train_loss"])
    if len(tr):
        k = max(1, min(50, len(tr) // 20))
        smooth = np.convolve(tr, np.ones(k) / k, mode="valid")
        ax1.plot(steps, tr, color="0.8", lw=0.5, label="train batch loss")
        ax1.plot(steps[k - 1 :], smooth, color="C0", lw=1, label=f"train (mean of {k})")
    ev = history["eval"]
    if ev:
        es = [e["step"] for e in ev]
        ax1.plot(
            es, [e["train_loss"] for e in ev], "o-", color="C2", ms=3, label="train (fixed batches)"
        )
        ax1.plot(
            es,
            [e["val_loss"] for e in ev],
            "o-",
            color="C3",
            ms=3,
            label="validation (fixed batches)",
        )
        best = min(ev, key=lambda e: e["val_loss"])
        ax1.annotate(
            f"{best['val_loss']:.3f}",
            (best["step"], best["val_loss"]),
            textcoords="offset points",
            xytext=(0, -14),
            ha="center",
            color="C3",
        )
    ax1.set_xlabel("step")
    ax1.set_ylabel("cross-entropy (nats / token)")
    ax1.set_title(title)
    ax1.grid(alpha=0.3)
    ax1.legend()
    ax2.plot(steps, history["lr"], color="C1")
    ax2.set_xlabel("step")
    ax2.set_ylabel("learning rate")
    ax2.set_title("learning rate (linear warmup, cosine decay)")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--backend", default="cpu")
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--sample-tokens", type=int, default=500)
    p.add_argument("--prompt", default="\n")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--max-windows",
        type=int,
        default=None,
        help="evaluate only this many windows (quick checks)",
    )
    args = p.parse_args(argv)
    out = Path(args.out)
    tl.set_default_device(args.backend)

    model, ckpt = load_model(out, args.backend)
    tcfg = ckpt["train_config"]
    corpus = load_corpus(
        tcfg["tokenizer"], tcfg["bpe_vocab"], tokenizer_path=out / "tokenizer.json"
    )
    block = model.config.block_size

    t0 = time.perf_counter()
    val = evaluate_split(
        model, corpus.val_ids, block, max_windows=args.max_windows, device=args.backend
    )
    val["bpc"] = bits_per_char(val["loss"], corpus.val_tokens_per_char)
    val["eval_seconds"] = round(time.perf_counter() - t0, 2)

    prompt_ids = corpus.encode(args.prompt)
    samples = {}
    for temp in TEMPERATURES:
        t0 = time.perf_counter()
        ids = generate(
            model,
            prompt_ids,
            args.sample_tokens,
            temperature=temp,
            top_k=args.top_k,
            seed=args.seed,
        )
        dt = time.perf_counter() - t0
        samples[str(temp)] = {
            "text": corpus.decode(ids),
            "seconds": round(dt, 2),
            "tokens_per_s": round(len(ids) / dt, 1),
        }

    summary_path = out / "summary.json"
    result = {
        "step": int(ckpt["step"]),
        "train_minutes": round(float(ckpt["seconds"]) / 60, 2),
        "tokenizer": corpus.kind,
        "vocab_size": corpus.vocab_size,
        "validation": val,
        "val_tokens_per_char": corpus.val_tokens_per_char,
        "top_k": args.top_k,
        "samples": samples,
        "train_summary": json.loads(summary_path.read_text()) if summary_path.is_file() else None,
    }
    (out / "eval.json").write_text(json.dumps(result, indent=1))
    with open(out / "samples.txt", "w") as f:
        for temp, s in samples.items():
            f.write(f"=== temperature {temp}, top-k {args.top_k} ===\n{s['text']}\n\n")
    history = json.loads((out / "history.json").read_text())
    title = (
        f"mini-GPT, {corpus.kind}: val {val['loss']:.3f} nats/token, "
        f"{val['bpc']:.3f} bpc after {result['train_minutes']:.0f} min"
    )
    plot(history, out / "gpt_eval.png", title)

    print(f"validation ({val['windows']} windows x {block} tokens, {val['tokens']:,} tokens):")
    print(f"  loss        {val['loss']:.4f} nats/token")
    print(f"  perplexity  {val['perplexity']:.3f}")
    print(f"  bits/char   {val['bpc']:.4f}")
    print(f"  top-1 acc   {val['top1_accuracy']:.4f}")
    for temp, s in samples.items():
        print(
            f"\n--- sample, temperature {temp}, top-k {args.top_k} ({s['tokens_per_s']} tokens/s) ---"
        )
        print(s["text"])
    print(f"\nwrote {out / 'eval.json'}, {out / 'samples.txt'}, {out / 'gpt_eval.png'}")
    return result


if __name__ == "__main__":
    main()
