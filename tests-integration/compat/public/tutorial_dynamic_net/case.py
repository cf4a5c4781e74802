"""pytorch/tutorials' dynamic control flow + weight sharing: a polynomial whose degree (4 or 5,
``random.randint`` each step) reuses one parameter, trained with SGD and momentum for 30000
steps on 2000 points.

It prints ``t, loss.item()`` every 2000 steps. The depth drawn each step comes from Python's
unseeded ``random``, so no two runs see the same graphs; the PyTorch oracle seeds ``random``
alike in both of its runs."""

import re

SCRIPT = "dynamic_net.py"
EXPECT = "decrease"
SLOW = True
ORACLE = True

STEP_LOSS = re.compile(r"^\d+ (\S+)$", re.MULTILINE)


def losses(stdout):
    """The loss of every ``<step> <loss>`` line, in order."""
    return [float(v) for v in STEP_LOSS.findall(stdout)]
