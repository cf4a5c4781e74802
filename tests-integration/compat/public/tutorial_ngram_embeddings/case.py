"""pytorch/tutorials' n-gram language model: word embeddings, two linear layers and
``log_softmax`` trained with ``NLLLoss`` and SGD on the trigrams of a sonnet, 10 epochs.

It prints the list of the 10 epoch losses (``print(losses)``). The vocabulary is numbered by
iterating over ``set(test_sentence)``, whose order depends on Python's string hashing, so the
runs fix ``PYTHONHASHSEED``: then torchlight and PyTorch number the words alike and, from the same
initial weights, their losses must agree."""

import re

SCRIPT = "word_embeddings_tutorial.py"
EXPECT = "decrease"
ORACLE = True
ENV = {"PYTHONHASHSEED": "0"}

FLOAT_LIST = re.compile(r"^\[([-+0-9.eE, ]+)\]$", re.MULTILINE)


def losses(stdout):
    """The epoch losses: the one printed line that is a list of numbers."""
    (line,) = FLOAT_LIST.findall(stdout)
    return [float(v) for v in line.split(",")]
