"""pytorch/examples regression/main.py: a linear layer fits a random degree-4 polynomial with
hand-written SGD steps (``param.data.add_``) on a smooth-L1 loss until the loss is below 1e-3.

The program has no flags and stops by itself (about a thousand batches of 32). It prints one
loss, at the stop, and the learned and the actual polynomial; :func:`losses` turns that into the
suite's check: the stopping threshold, then the final loss (so "decrease" says the program
stopped by converging), after checking that the learned coefficients are those of the target.
Its data come from ``torch.randn`` at every step (replayed in the PyTorch oracle run).

Its training amplifies rounding: with the step size 0.1 on the fourth powers of normal draws,
PyTorch's own losses part from those of the same run with the initial weights nudged by one
float32 ulp by 1e-5 relative at step 67 and 1e-3 at step 259, and that run stops after 485
batches instead of 900 (``python oracle_sensitivity.py examples_regression``, in the folder
above). So the oracle compares the first ``ORACLE_STEPS`` losses, where torchlight and PyTorch
agree to better than 1e-4.
"""

import re

SCRIPT = "main.py"
ARGS = []
EXPECT = "decrease"
SLOW = False
ORACLE = True
ORACLE_STEPS = 100
TIMEOUT = 300

#: The program's stopping criterion (``if loss < 1e-3: break``).
STOP = 1e-3
#: Largest acceptable gap between a learned and an actual coefficient.
COEFFICIENT_TOLERANCE = 1.0

_NUMBER = r"[-+]?\d+\.\d+"


def _coefficients(stdout: str, which: str) -> list:
    line = re.search(rf"==> {which} function:\s*y = (.*)", stdout)
    assert line, f"no '{which} function' line in:\n{stdout[-2000:]}"
    return [float(v) for v in re.findall(_NUMBER, line.group(1))]


def losses(stdout: str) -> list:
    """[the stopping threshold, the final loss], once the learned polynomial matches the target."""
    found = re.search(rf"Loss: ({_NUMBER}) after (\d+) batches", stdout)
    if found is None:
        return []
    learned, actual = _coefficients(stdout, "Learned"), _coefficients(stdout, "Actual")
    assert len(learned) == len(actual) == 5, (learned, actual)
    gaps = [abs(a - b) for a, b in zip(learned, actual)]
    assert max(gaps) < COEFFICIENT_TOLERANCE, f"learned {learned}, actual {actual}"
    return [STOP, float(found.group(1))]
