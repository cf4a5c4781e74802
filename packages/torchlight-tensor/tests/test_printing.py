"""tl.set_printoptions: PyTorch's options, with numpy's array2string as the oracle."""

import math

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.printing import get_printoptions


@pytest.fixture(autouse=True)
def _restore():
    before = get_printoptions()
    yield
    tl.set_printoptions(
        **{k: before[k] for k in ("precision", "threshold", "edgeitems", "linewidth")}
    )
    tl.set_printoptions(sci_mode=before["sci_mode"])


def _values(t):
    return repr(t)[len("tensor(") : -1]


def test_defaults_are_pytorchs():
    assert get_printoptions() == dict(
        precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None
    )


def test_precision_rounds_to_that_many_decimals():
    a = np.array([1.234567, -2.0, 3.5], dtype=np.float32)
    tl.set_printoptions(precision=2)
    assert _values(tl.tensor(a)) == np.array2string(a, separator=", ", precision=2)
    assert "1.23" in repr(tl.tensor(a)) and "1.2346" not in repr(tl.tensor(a))


def test_threshold_and_edgeitems_summarise():
    t = tl.arange(20.0)
    tl.set_printoptions(threshold=10, edgeitems=2)
    assert _values(t) == "[ 0.,  1., ..., 18., 19.]"
    tl.set_printoptions(threshold=math.inf)
    assert "..." not in repr(tl.zeros(5000))


def test_sci_mode_forces_or_forbids_exponents():
    t = tl.tensor([1.5, 2.0])
    tl.set_printoptions(sci_mode=True)
    assert _values(t) == "[1.5000e+00, 2.0000e+00]"
    tl.set_printoptions(sci_mode=False)
    assert _values(tl.tensor([1e-8, 1.0])) == "[0.0000, 1.0000]"
    tl.set_printoptions(precision=4)  # any call resets sci_mode to None, as in PyTorch
    assert get_printoptions()["sci_mode"] is None


def test_linewidth_wraps_rows_under_the_prefix():
    tl.set_printoptions(linewidth=30)
    lines = repr(tl.arange(20.0)).splitlines()
    assert len(lines) > 1 and all(len(line) <= 30 for line in lines)
    assert all(line.startswith(" " * len("tensor([")) for line in lines[1:])


def test_profiles_and_a_bad_profile():
    tl.set_printoptions(profile="short")
    assert get_printoptions()["precision"] == 2 and get_printoptions()["edgeitems"] == 2
    tl.set_printoptions(profile="full")
    assert get_printoptions()["threshold"] == math.inf
    with pytest.raises(ValueError, match="unknown profile 'long'"):
        tl.set_printoptions(profile="long")


def test_non_contiguous_tensors_print_their_logical_values():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert _values(tl.tensor(a).t()) == np.array2string(
        a.T, separator=", ", precision=4, prefix="tensor("
    )
