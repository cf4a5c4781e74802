"""karpathy/makemore's makemore.py training four of its character-level models (``--type``
transformer, gru, mlp, bow: the cases makemore_<type>) on a few hundred made-up names (written by
setup), batches drawn at random: 21 steps, losses printed every 10."""

import random

SCRIPT = "makemore.py"
ARGS = [
    "-i",
    "names.txt",
    "-o",
    "out",
    "--max-steps",
    "21",
    "--num-workers",
    "0",
    "--n-layer",
    "1",
    "--n-head",
    "2",
    "--n-embd",
    "16",
    "--n-embd2",
    "16",
    "--batch-size",
    "16",
    "--learning-rate",
    "1e-2",
]
VARIANTS = {kind: ["--type", kind] for kind in ("transformer", "gru", "mlp", "bow")}
STEPS = ["--max-steps"]
EXPECT = "decrease"
SLOW = False
ORACLE = True

SYLLABLES = ["an", "el", "ia", "jo", "ka", "li", "ma", "na", "or", "ra", "sa", "th", "yn"]


def setup(folder):
    """names.txt: 300 names of 2-4 syllables, one a line (the format makemore reads)."""
    rng = random.Random(0)
    names = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(300)]
    (folder / "names.txt").write_text("\n".join(names) + "\n")
