"""pytorch/tutorials' LSTM part-of-speech tagger: embeddings, ``nn.LSTM`` and ``log_softmax``
trained with ``NLLLoss`` and SGD, 300 epochs over two sentences, the hidden state reset to zeros
for each.

The tutorial prints no loss: it prints the tag scores (log-probabilities, 5 words x 3 tags) of
its first sentence before and after training, the last two tensors it prints. The losses here
are that sentence's NLL against its tags from those prints. Data, initial state and steps are
fixed, so PyTorch's training losses (recorded at each ``backward``) must match from the same
initial weights."""

from compat_helpers import printed_tensors

SCRIPT = "sequence_models_tutorial.py"
EXPECT = "decrease"
ORACLE = True

TAGS = [0, 1, 2, 0, 1]  # DET NN V DET NN: "The dog ate the apple" under the tutorial's tag_to_ix
N_TAGS = 3


def losses(stdout):
    """Mean NLL of the first sentence's tags before and after training."""
    scores = printed_tensors(stdout)[-2:]
    return [
        -sum(flat[i * N_TAGS + tag] for i, tag in enumerate(TAGS)) / len(TAGS) for flat in scores
    ]
