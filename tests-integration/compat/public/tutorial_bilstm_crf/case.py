"""The PyTorch tutorials' BiLSTM-CRF named-entity tagger: a bidirectional ``nn.LSTM`` giving the
emission scores of a CRF whose transition matrix is an ``nn.Parameter``; the forward algorithm
(log-sum-exp, one tag at a time) gives the negative log-likelihood, Viterbi decodes; SGD with
weight decay, 300 epochs over two sentences.

The copy is the English file of pytorch/tutorials as PyTorchKorea/tutorials-kr holds it at its
fork commit (pytorch/tutorials' own stored version of this file predates PyTorch 0.4 and no
longer runs under PyTorch: it concatenates 0-d tensors).

The tutorial prints no loss: it prints ``(path score, decoded tags)`` of its first sentence
before and after training. The losses here are the decoded tags' errors against the gold tags
(a 0-1 loss per word) before and after. ``init_hidden`` draws a random LSTM state for every
sentence (``torch.randn``), which the PyTorch oracle run replays. The loss the tutorial calls
``backward`` on has shape ``(1,)``, not ``()``; the oracle records it all the same."""

import re

SCRIPT = "advanced_tutorial.py"
EXPECT = "decrease"
SLOW = True
ORACLE = True

# "B I I I O O O B I O O" under the tutorial's tag_to_ix {"B": 0, "I": 1, "O": 2}
GOLD = [0, 1, 1, 1, 2, 2, 2, 0, 1, 2, 2]
DECODED = re.compile(r"^\(tensor\([^()]*\), \[([0-9, ]+)\]\)$", re.MULTILINE)


def losses(stdout):
    """Tagging errors of the first sentence before and after training."""
    return [
        float(sum(int(t) != g for t, g in zip(path.split(","), GOLD, strict=True)))
        for path in DECODED.findall(stdout)
    ]
