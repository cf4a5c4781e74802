"""The shared formulas of ``torchlight.tensor.formulas`` against Python's ``math``: the float32
erf/erfc forms (``ERFC32_P``, ``ERF32_S``) that compiled loops evaluate, in float64 here, so
what is checked is the fit itself; the loops' float32 rounding is checked where they run."""

import math

import numpy as np
import pytest

from torchlight.tensor.formulas import (
    ERF32_S,
    ERF32_SMALL,
    ERFC32_P,
    ERFC32_T,
    erf32_small_form,
    erfc32_form,
)


def test_the_erfc_form_is_within_2e8_relative_over_the_half_line():
    z = np.concatenate([np.linspace(0.0, 26.0, 100001), np.geomspace(1e-9, 1.0, 400)])
    want = np.array([math.erfc(v) for v in z])
    got = erfc32_form(z, np.exp)
    assert np.all(want > 1e-300)  # normal float64s (subnormals keep fewer digits)
    np.testing.assert_allclose(got, want, rtol=2e-8, atol=0)


def test_the_small_erf_form_is_within_2e9_relative_below_its_bound():
    x = np.concatenate([np.linspace(-ERF32_SMALL, ERF32_SMALL, 20001), [1e-30, -1e-30, 1e-8]])
    x = x[x != 0]
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf32_small_form(x), want, rtol=2e-9, atol=0)
    assert erf32_small_form(0.0) == 0.0


def test_the_erf_forms_meet_at_the_bound_and_have_their_limits():
    # erf from either side of ERF32_SMALL: x S(x²) and 1 - erfc(x) agree there
    b = ERF32_SMALL
    assert erf32_small_form(b) == pytest.approx(1.0 - erfc32_form(b), rel=1e-8)
    # as z → ∞, t ≈ 1/(ERFC32_T z) and t P(t) → e^(z²) erfc(z) ≈ 1/(z√π): P(0) = ERFC32_T/√π
    assert ERFC32_P[0] == pytest.approx(ERFC32_T / math.sqrt(math.pi), rel=1e-6)
    assert sum(ERFC32_P) == pytest.approx(1.0, rel=1e-7)  # t = 1 at z = 0: erfc(0) = 1
    assert ERF32_S[0] == pytest.approx(2.0 / math.sqrt(math.pi), rel=2e-9)  # erf(x) ≈ 2x/√π
