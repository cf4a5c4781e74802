"""karpathy/nanoGPT's train.py (with its model.py and configurator.py) training a one-layer GPT on a
tiny synthetic token stream (data/tiny/train.bin, val.bin, meta.pkl written by setup), on the cpu,
float32, uncompiled, batches drawn at random: 7 iterations after an evaluation at step 0."""

import pickle

import numpy as np

SCRIPT = "train.py"
ARGS = [
    "--dataset=tiny",
    "--device=cpu",
    "--compile=False",
    "--dtype=float32",
    "--eval_iters=2",
    "--eval_interval=1000",
    "--log_interval=1",
    "--gradient_accumulation_steps=1",
    "--block_size=16",
    "--batch_size=8",
    "--n_layer=1",
    "--n_head=2",
    "--n_embd=16",
    "--max_iters=6",
    "--warmup_iters=1",
    "--lr_decay_iters=6",
    "--learning_rate=1e-2",
    "--min_lr=1e-3",
    "--dropout=0.0",
]
STEPS = ["--max_iters", "--lr_decay_iters"]
EXPECT = "decrease"
SLOW = False
ORACLE = True

VOCAB = 12


def setup(folder):
    """data/tiny/: uint16 token ids (a noisy counting pattern mod VOCAB) and meta.pkl's vocab_size,
    the files nanoGPT's prepare.py scripts write."""
    rng = np.random.default_rng(0)
    data = folder / "data" / "tiny"
    data.mkdir(parents=True)
    for split, n in (("train", 4000), ("val", 800)):
        ids = (np.arange(n) + (rng.random(n) < 0.1)) % VOCAB
        ids.astype(np.uint16).tofile(data / f"{split}.bin")
    with open(data / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": VOCAB}, f)


def losses(stdout):
    """The training losses, 'iter N: loss X' (the 'step 0: train loss ..., val loss ...' line is
    the evaluation)."""
    import re

    return [float(v) for v in re.findall(r"^iter \d+: loss ([-+\d.eE]+|nan|inf)", stdout, re.M)]
