"""pytorch/examples time_sequence_prediction: two stacked ``LSTMCell`` layers learn sine waves in
float64 with ``LBFGS`` (one ``--steps`` step runs 20 closure evaluations), then predict 1000
steps past each test sequence and plot them with matplotlib.

``generate_sine_wave.py`` writes ``traindata.pt`` with ``torch.save`` of a numpy array, and
``train.py`` reads it back with ``torch.load``. :func:`setup` writes that file the same way (the
program's recipe and seed, through ``torchlight.save``) but with shorter and fewer sequences
(``LENGTH``, ``SEQUENCES``; the published script makes 100 of length 1000, which takes minutes
here), so the training runs over ``LENGTH - 1`` time steps. ``test_public_sine_wave_data.py`` runs
the verbatim generator and checks that this file is the corner of its data.

PyTorch cannot read a file written by ``torchlight.save``, and since 2.6 it reads a pickled
numpy array with ``torch.load`` only when told to trust the file, so for the PyTorch oracle
:func:`setup_for_torch` writes the same array with ``torch.save`` and ``ENV`` sets
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (torchlight ignores it): the published ``train.py``
predates 2.6 and calls ``torch.load`` without ``weights_only=False``.
"""

import re

import numpy as np

SCRIPT = "train.py"
ARGS = ["--steps", "1"]
STEPS = ["--steps"]
EXPECT = "decrease"
SLOW = False
ORACLE = True
ENV = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}

#: The published generator's period, and the reduced sequence length and count.
PERIOD = 20
LENGTH = 60
SEQUENCES = 12


def _data():
    """The array generate_sine_wave.py makes, with LENGTH and SEQUENCES."""
    np.random.seed(2)
    x = np.empty((SEQUENCES, LENGTH), "int64")
    x[:] = np.array(range(LENGTH)) + np.random.randint(-4 * PERIOD, 4 * PERIOD, SEQUENCES).reshape(
        SEQUENCES, 1
    )
    return np.sin(x / 1.0 / PERIOD).astype("float64")


def setup(folder):
    """``traindata.pt`` as generate_sine_wave.py writes it (``torch.save``: here torchlight's)."""
    import torchlight

    torchlight.save(_data(), str(folder / "traindata.pt"))


def setup_for_torch(folder):
    """The same ``traindata.pt`` written by PyTorch's ``torch.save``, for the oracle's PyTorch run."""
    import torch

    torch.save(_data(), str(folder / "traindata.pt"))


def losses(stdout: str) -> list:
    """The training losses (``loss: <value>`` lines; the ``test loss`` lines are left out)."""
    return [float(v) for v in re.findall(r"^loss: (\S+)$", stdout, re.MULTILINE)]
