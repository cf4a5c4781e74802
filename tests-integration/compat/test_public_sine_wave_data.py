"""The data of ``public/examples_time_sequence_prediction``: its verbatim
``generate_sine_wave.py`` runs through ``python -m torchlight.compat`` and writes, with
``torch.save`` of a numpy array, a file that ``torch.load`` reads back as that array; the case's
``setup`` writes the corner of the same data that the suite trains on."""

import subprocess
import sys

import numpy as np
from public_cases import load_cases

import torchlight as tl

CASE = load_cases()["examples_time_sequence_prediction"]


def _published_recipe():
    """What generate_sine_wave.py computes (T=20, L=1000, N=100, seed 2), in numpy."""
    rng = np.random.RandomState(2)
    offsets = rng.randint(-80, 80, 100).reshape(100, 1)
    return np.sin((np.arange(1000) + offsets) / 20.0)


def test_the_published_generator_writes_a_numpy_array_that_loads_back(tmp_path):
    (tmp_path / "generate_sine_wave.py").write_bytes(
        (CASE.folder / "generate_sine_wave.py").read_bytes()
    )
    result = subprocess.run(
        [sys.executable, "-m", "torchlight.compat", "generate_sine_wave.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = tl.load(tmp_path / "traindata.pt")
    assert isinstance(data, np.ndarray) and data.dtype == np.float64 and data.shape == (100, 1000)
    np.testing.assert_array_equal(data, _published_recipe())

    small = tmp_path / "small"
    small.mkdir()
    CASE.setup(small)
    corner = tl.load(small / "traindata.pt")
    rows, cols = corner.shape
    assert corner.dtype == np.float64 and rows < 100 and cols < 1000
    np.testing.assert_array_equal(corner, data[:rows, :cols])
