"""Generate text from a trained mini-GPT, with the KV cache (default) or without it.

    python projects/mini-gpt/sample.py --tokens 500 --temperature 0.8 --top-k 40
    python projects/mini-gpt/sample.py --prompt "ROMEO:" --no-cache     # recompute every step

With the cache each new token runs the model on one position (its keys and values are appended to
every layer's cache); without it every step runs the whole context window. Both give the same
logits, so with the same seed they print the same text; the cache is only faster.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torchlight as tl

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from corpus import load_corpus  # noqa: E402
from model import generate  # noqa: E402
from train import DEFAULT_OUT, load_model  # noqa: E402


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description="Sample from a trained mini-GPT.")
    p.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        help="training output directory (ckpt.npz, tokenizer.json)",
    )
    p.add_argument("--prompt", default="\n")
    p.add_argument("--tokens", type=int, default=500)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="cpu")
    p.add_argument(
        "--cache", action=argparse.BooleanOptionalAction, default=True, help="use the KV cache"
    )
    args = p.parse_args(argv)
    tl.set_default_device(args.backend)
    out = Path(args.out)
    model, ckpt = load_model(out, args.backend)
    tcfg = ckpt["train_config"]
    corpus = load_corpus(
        tcfg["tokenizer"], tcfg["bpe_vocab"], tokenizer_path=out / "tokenizer.json"
    )
    t0 = time.perf_counter()
    ids = generate(
        model,
        corpus.encode(args.prompt),
        args.tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        use_cache=args.cache,
        seed=args.seed,
    )
    dt = time.perf_counter() - t0
    text = corpus.decode(ids)
    print(args.prompt + text if args.prompt != "\n" else text)
    print(
        f"\n[{len(ids)} tokens in {dt:.2f} s, {len(ids) / dt:.0f} tokens/s, "
        f"{'with' if args.cache else 'without'} KV cache]",
        file=sys.stderr,
    )
    return text


if __name__ == "__main__":
    main()
