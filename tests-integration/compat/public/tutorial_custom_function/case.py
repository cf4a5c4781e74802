"""pytorch/tutorials' custom autograd ``Function`` (a Legendre polynomial P3 with a hand-written
backward) fitting sin(x) with manual gradient-descent updates under ``torch.no_grad()``.

It prints ``t, loss.item()`` every 100 steps; the data (``linspace``) and the initial weights
(``torch.full``) are fixed, so PyTorch's losses must match step for step."""

import re

SCRIPT = "polynomial_custom_function.py"
EXPECT = "decrease"
ORACLE = True

STEP_LOSS = re.compile(r"^\d+ (\S+)$", re.MULTILINE)


def losses(stdout):
    """The loss of every ``<step> <loss>`` line, in order."""
    return [float(v) for v in STEP_LOSS.findall(stdout)]
