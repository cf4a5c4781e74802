"""The headline demo (``nox -s demo``): train a small mini-GPT for ~3 minutes, then let it write.

    python projects/mini-gpt/demo.py                  # 3 minutes, output in projects/mini-gpt/out/demo/
    python projects/mini-gpt/demo.py --minutes 1      # shorter (the text gets worse)

It trains the ``demo`` preset of ``train.py`` (3 layers, width 128, context 64, character level)
with the cosine schedule stretched over the time budget, then prints the validation loss and a
500-character sample drawn with the KV cache.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def main(argv=None) -> str:
    p = argparse.ArgumentParser(
        description="Train a small mini-GPT for a few minutes and sample from it."
    )
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--out", default=str(HERE / "out" / "demo"))
    p.add_argument("--tokens", type=int, default=500)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=20)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=sys.stderr.isatty())
    args = p.parse_args(argv)

    import train  # imported here so that --help stays instant
    from corpus import load_corpus
    from model import generate

    train_args = [
        "--preset",
        "demo",
        "--max-minutes",
        str(args.minutes),
        "--out",
        args.out,
        "--backend",
        args.backend,
        "--progress" if args.progress else "--no-progress",
    ]
    t0 = time.perf_counter()
    summary = train.main(train_args)
    model, ckpt = train.load_model(args.out, args.backend)
    corpus = load_corpus("char", tokenizer_path=os.path.join(args.out, "tokenizer.json"))
    prompt = corpus.encode("\n")
    t1 = time.perf_counter()
    ids = generate(
        model, prompt, args.tokens, temperature=args.temperature, top_k=args.top_k, seed=0
    )
    text = corpus.decode(ids)
    print(
        f"\nmini-GPT demo: {summary['parameters']:,} parameters, {summary['steps']} steps in "
        f"{summary['minutes']:.1f} min ({summary['tokens_per_s']:.0f} tokens/s), validation loss "
        f"{summary['val_loss']:.3f} nats/char ({summary['val_bpc']:.2f} bits/char)"
    )
    print(
        f"sample ({args.tokens} characters, temperature {args.temperature}, top-k {args.top_k}, "
        f"KV cache, {len(ids) / (time.perf_counter() - t1):.0f} chars/s):\n"
    )
    print(text)
    print(f"\n[total {time.perf_counter() - t0:.0f} s]")
    return text


if __name__ == "__main__":
    main()
