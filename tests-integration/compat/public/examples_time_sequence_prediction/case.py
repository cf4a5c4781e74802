"""pytorch/examples time_sequence_prediction: two stacked ``LSTMCell`` layers learn sine waves in
float64 with ``LBFGS`` (one ``--steps`` step runs 20 closure evaluations), then predict 1000
steps past each test sequence and plot them with matplotlib.

``generate_sine_wave.py`` writes ``traindata.pt`` with ``torch.save`` of a numpy array, and
``train.py`` reads it back with ``torch.load``. :func:`setup` writes that file the same way (the
program's recipe and seed, through ``torchlight.save``) but with shorter and fewer sequences
(``LENGTH``, ``SEQUENCES``; the published script makes 100 of length 1000, which takes minutes
here), so the training runs over ``LENGTH - 1`` time steps. ``test_public_sine_wave_data.py`` runs
the verbatim generator and checks that this file is the corner of its data.

No PyTorch oracle: the data file is written by torchlight, and PyTorch 2.6 and later cannot read
a pickled numpy array with ``torch.load``'s default ``weights_only=True`` (``train.py`` runs
under PyTorch only with ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` or before 2.6).
"""

import re

import numpy as np

SCRIPT = "train.py"
ARGS = ["--steps", "1"]
STEPS = ["--steps"]
EXPECT = "decrease"
SLOW = False
ORACLE = False

#: The published generator's period, and the reduced sequence length and count.
PERIOD = 20
LENGTH = 60
SEQUENCES = 12


def setup(folder):
    """``traindata.pt`` as generate_sine_wave.py writes it, with LENGTH and SEQUENCES."""
    import torchlight

    np.random.seed(2)
    x = np.empty((SEQUENCES, LENGTH), "int64")
    x[:] = np.array(range(LENGTH)) + np.random.randint(-4 * PERIOD, 4 * PERIOD, SEQUENCES).reshape(
        SEQUENCES, 1
    )
    data = np.sin(x / 1.0 / PERIOD).astype("float64")
    torchlight.save(data, str(folder / "traindata.pt"))


def losses(stdout: str) -> list:
    """The training losses (``loss: <value>`` lines; the ``test loss`` lines are left out)."""
    return [float(v) for v in re.findall(r"^loss: (\S+)$", stdout, re.MULTILINE)]
