"""The constants and small formulas that several backends and oracles share, written once.

Every implementation of an op — the numpy backend, the scalar op tables compiled by JIT
backends, the float32 SIMD loops, generated fused kernels, the ONNX exporter, the conformance
catalog and the example plugin — takes its constants from here, so a constant or a clamp
cannot drift between them. The functions are plain arithmetic on their arguments: they work on
Python floats, numpy arrays and (compiled by a backend's JIT) machine scalars alike.

GELU, tanh approximation (PyTorch's ``approximate='tanh'``)::

    gelu_tanh(x) = ½ x (1 + tanh u),   u = √(2/π) (x + 0.044715 x³)
    d/dx         = ½ (1 + t) + ½ x (1 - t²) √(2/π) (1 + 3 · 0.044715 x²),   t = tanh u

GELU, exact: ``x Φ(x) = ½ x (1 + erf(x / √2))``, ``Φ'(x) = e^(-x²/2) / √(2π)``.

float32 erf and Φ without libm, for loops that must vectorise (``ERFC32_*``, ``ERF32_*``)::

    erfc(z) ≈ e^(-z²) · t · P(t),   t = 1 / (1 + z/2),   z ≥ 0      (P of degree 10)
    erf(x)  ≈ x · S(x²)                                   |x| < ½   (S of degree 4)
    Φ(-y)   = ½ erfc(y/√2),  Φ(y) = 1 - Φ(-y)                      y ≥ 0

``t·P(t)`` is the scaled complementary error function ``e^(z²) erfc(z)``, smooth on the whole
half-line (``t`` runs over (0, 1]); ``P`` and ``S`` were fitted to ``math.erfc`` / ``math.erf``
by least squares reweighted toward the largest relative error (Lawson's method; the script is in
``docs/developer/numba-backend.md``): relative error at most 1.1e-8 for ``t·P(t)`` and 1.4e-9 for
``S`` in exact arithmetic, far below float32's 6e-8. Because ``erfc`` is computed directly, the
left tail of Φ keeps its relative accuracy (``½ (1 + erf(x/√2))`` in float32 cancels to 0 below
x ≈ -5.5); ``test_formulas.py`` checks both fits against ``math``.

float32 tanh as a rational function (Eigen's coefficients, max relative error ~3e-7)::

    tanh(x) ≈ x · P(x²) / Q(x²)   for |x| ≤ TANH32_CLAMP, the input clamped beyond

>>> from torchlight.tensor.formulas import gelu_tanh_arg, gelu_tanh_slope
>>> import math
>>> round(0.5 * 1.0 * (1 + math.tanh(gelu_tanh_arg(1.0))), 6)
0.841192
>>> round(gelu_tanh_slope(0.0, math.tanh(gelu_tanh_arg(0.0))), 6)
0.5
"""

import math

__all__ = [
    "GELU_TANH_C",
    "GELU_TANH_K",
    "SQRT1_2",
    "INV_SQRT_2PI",
    "TWO_OVER_SQRT_PI",
    "EXP_MAX",
    "TANH32_P",
    "TANH32_Q",
    "TANH32_CLAMP",
    "TANH32_TINY",
    "ERFC32_T",
    "ERFC32_P",
    "ERF32_SMALL",
    "ERF32_S",
    "erfc32_form",
    "erf32_small_form",
    "gelu_tanh_arg",
    "gelu_tanh_slope",
]

GELU_TANH_C = math.sqrt(2.0 / math.pi)
"""√(2/π), the scale inside the tanh of GELU's tanh approximation."""
GELU_TANH_K = 0.044715
"""The cubic coefficient of GELU's tanh approximation (Hendrycks & Gimpel; PyTorch's value)."""
SQRT1_2 = 1.0 / math.sqrt(2.0)
"""1/√2: Φ(x) = ½ (1 + erf(x/√2))."""
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
"""1/√(2π): the standard normal density at 0."""
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
"""2/√π: d/dx erf(x) = 2/√π · e^(-x²)."""
EXP_MAX = 709.782712893384
"""log of the largest float64: above it e^x is inf (Python's ``math.exp`` raises there)."""

TANH32_P = (
    4.89352455891786e-03,
    6.37261928875436e-04,
    1.48572235717979e-05,
    5.12229709037114e-08,
    -8.60467152213735e-11,
    2.00018790482477e-13,
    -2.76076847742355e-16,
)
"""Numerator coefficients of x², lowest first: tanh(x) ≈ x (p0 + p1 x² + ... + p6 x¹²) / Q(x²)."""
TANH32_Q = (4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06)
"""Denominator coefficients of x², lowest first: Q(x²) = q0 + q1 x² + q2 x⁴ + q3 x⁶."""
TANH32_CLAMP = 7.99881172180175781
"""Inputs are clamped to ±TANH32_CLAMP before the rational function, so large inputs give ±1.
The right clamp depends on how P and Q are evaluated: it is the point where the float32 ratio
reaches 1.0. With fused multiply-adds (Horner steps ``madd(p, x², c)``, how every float32 loop
of this project evaluates it) that is 7.99881172180175781, Eigen's current bound; with separate
multiplies and adds it would be 7.90531110763549805 (Eigen's older bound), and the ratio at
7.9988 would be 1 - 2 ulp. One evaluation, one clamp: tested against ``np.tanh`` in float32 on
both sides of the clamp (``test_flat32_*.py`` of the backend that runs it)."""
TANH32_TINY = 0.0004
"""Below this magnitude float32 tanh(x) rounds to x itself; loops that can afford a select use it."""

ERFC32_T = 0.5
"""The scale in ``t = 1 / (1 + ERFC32_T · z)`` of the float32 erfc form."""
ERFC32_P = (
    0.2820947947957003,
    0.2820938527918162,
    0.24688058299537918,
    0.1753768745108106,
    0.09300026420765074,
    -0.05723110909690832,
    0.1270858848056565,
    -0.4469716895681258,
    0.48617330265787606,
    -0.23085470315961298,
    0.04235193432800622,
)
"""Coefficients of ``P(t)``, lowest first: ``erfc(z) ≈ e^(-z²) t P(t)`` (``P(0) = 1/(2√π)``,
``P(1) = 1``)."""
ERF32_SMALL = 0.5
"""Below this magnitude erf(x) is ``x S(x²)`` (``1 - erfc`` would lose its relative accuracy)."""
ERF32_S = (
    1.1283791655674689,
    -0.3761260857462741,
    0.11282822849936741,
    -0.026757187108058016,
    0.004717996282373551,
)
"""Coefficients of ``S(u)``, lowest first: ``erf(x) ≈ x S(x²)`` for ``|x| < ERF32_SMALL``
(``S(0) = 2/√π``)."""


def erfc32_form(z, exp=math.exp):
    """erfc(z) for z ≥ 0 by the float32 form ``e^(-z²) t P(t)`` (``exp``: the exponential to use;
    numpy's for arrays). The reference the compiled loops are checked against.

    >>> import math
    >>> from torchlight.tensor.formulas import erfc32_form
    >>> abs(erfc32_form(1.0) / math.erfc(1.0) - 1) < 2e-8
    True
    """
    t = 1.0 / (1.0 + ERFC32_T * z)
    return exp(-z * z) * t * _horner(ERFC32_P, t)


def erf32_small_form(x):
    """erf(x) for ``|x| < ERF32_SMALL`` by the float32 form ``x S(x²)``.

    >>> import math
    >>> from torchlight.tensor.formulas import erf32_small_form
    >>> abs(erf32_small_form(0.25) / math.erf(0.25) - 1) < 2e-9
    True
    """
    return x * _horner(ERF32_S, x * x)


def _horner(coefficients, x):
    """Σ c_k x^k for ``coefficients`` lowest first, by Horner's rule."""
    p = 0.0
    for c in reversed(coefficients):
        p = p * x + c
    return p


def gelu_tanh_arg(x):
    """u = √(2/π) (x + 0.044715 x³), the argument of the tanh in ``gelu_tanh``.

    >>> round(gelu_tanh_arg(1.0), 6)
    0.833562
    """
    return GELU_TANH_C * (x + GELU_TANH_K * x * x * x)


def gelu_tanh_slope(x, t):
    """d/dx gelu_tanh(x) given ``t = tanh(gelu_tanh_arg(x))``.

    >>> import math
    >>> round(gelu_tanh_slope(1.0, math.tanh(gelu_tanh_arg(1.0))), 6)
    1.082964
    """
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_TANH_C * (
        1.0 + 3.0 * GELU_TANH_K * x * x
    )
