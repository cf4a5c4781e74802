"""``tl.finfo`` / ``tl.iinfo`` against IEEE 754 figures derived by hand and numpy's."""

import numpy as np
import pytest

import torchlight as tl
from torchlight import DTypeError


def test_finfo_float32_is_ieee_single():
    f = tl.finfo(tl.float32)
    assert f.bits == 32
    assert f.eps == 2.0**-23  # 23 fraction bits
    assert f.tiny == f.smallest_normal == 2.0**-126
    assert f.max == (2 - 2.0**-23) * 2.0**127
    assert f.min == -f.max
    assert f.resolution == 1e-06
    assert f.dtype == "float32"
    # eps is the gap above 1.0: 1 + eps is representable and distinct, 1 + eps/2 rounds back to 1
    assert np.float32(1) + np.float32(f.eps) != np.float32(1)
    assert np.float32(1) + np.float32(f.eps / 2) == np.float32(1)


def test_finfo_float64_and_default():
    f = tl.finfo(tl.float64)
    assert (f.bits, f.eps, f.tiny, f.resolution) == (64, 2.0**-52, 2.0**-1022, 1e-15)
    assert tl.finfo().dtype == "float32"  # the default dtype
    tl.set_default_dtype(tl.float64)
    try:
        assert tl.finfo().dtype == "float64"
    finally:
        tl.set_default_dtype(tl.float32)
    assert tl.finfo(tl.double).eps == f.eps  # PyTorch's aliases are the same dtype


def test_iinfo_int64():
    i = tl.iinfo(tl.int64)
    assert (i.bits, i.min, i.max, i.dtype) == (64, -(2**63), 2**63 - 1, "int64")
    assert tl.iinfo(tl.long).max == i.max


@pytest.mark.parametrize(
    "make", [lambda: tl.finfo(tl.int64), lambda: tl.iinfo(tl.float32), lambda: tl.iinfo(tl.bool)]
)
def test_wrong_kind_of_dtype_is_a_dtype_error(make):
    with pytest.raises(DTypeError, match="use (i|f)info"):
        make()
