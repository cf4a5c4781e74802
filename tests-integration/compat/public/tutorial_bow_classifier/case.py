"""pytorch/tutorials' bag-of-words logistic regression (English vs Spanish): ``nn.Linear`` and
``log_softmax`` trained with ``NLLLoss`` and SGD, 100 epochs over four sentences.

The tutorial prints no loss: it prints the log-probabilities of its two test sentences before
and after training (the last six tensors it prints are test 1, test 2 and the weights of "creo",
before and then after). The losses here are the test negative log-likelihood from those prints,
before and after training. Data and steps are fixed, so PyTorch's training losses (recorded at
each ``backward``) must match from the same initial weights."""

from compat_helpers import printed_tensors

SCRIPT = "deep_learning_tutorial.py"
EXPECT = "decrease"
ORACLE = True

SPANISH, ENGLISH = 0, 1  # label_to_ix of the tutorial; its test sentences are Spanish, English


def losses(stdout):
    """Mean test NLL before and after training, from the printed log-probabilities."""
    tensors = printed_tensors(stdout)[-6:]
    before, after = tensors[0:2], tensors[3:5]
    return [-(first[SPANISH] + second[ENGLISH]) / 2 for first, second in (before, after)]
