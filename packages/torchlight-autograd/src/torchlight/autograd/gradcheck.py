"""``gradcheck``: compare autograd's gradients with central finite differences.

For a function :math:`f` and a fixed random weighting :math:`w` of its outputs, the scalar
:math:`L(x) = \\sum_j w_j f_j(x)` has the gradient autograd computes by backpropagating ``w``.
Each input element is then perturbed by :math:`\\pm\\epsilon` and

.. math:: \\frac{\\partial L}{\\partial x_i} \\approx \\frac{L(x + \\epsilon e_i) - L(x - \\epsilon e_i)}{2\\epsilon}

whose error is :math:`O(\\epsilon^2)`; in float64 with :math:`\\epsilon = 10^{-6}` the two agree to
about ``1e-7`` relative, so the tolerances can be tight. Random weights (rather than summing the
outputs) make sure a gradient that is wrong only for some outputs cannot cancel out.

Variables take part through a three-method protocol, implemented by ``Scalar`` and ``Tensor``:
``_fd_flat()`` (values as a list of floats, in logical order), ``_fd_like(values)`` (a new variable
of the same shape) and ``_fd_set(i, value)`` (write element ``i`` in place).
"""

import random

from .errors import AutogradError
from .grad_mode import no_grad

__all__ = ["gradcheck", "GradcheckError"]


class GradcheckError(AutogradError, AssertionError):
    """Analytic and numeric gradients disagree."""


def _weighted(out, weights):
    return sum(w * v for w, v in zip(weights, out._fd_flat()))


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4, seed=0, raise_exception=True) -> bool:
    """Check ``fn(*inputs)``'s backward against finite differences; raise naming the first mismatch.

    ``inputs`` may mix variables and constants; only variables with ``requires_grad=True`` are
    checked. Use float64 inputs: float32 rounding swamps the finite-difference signal.

    >>> x = tl.randn(3, dtype=tl.float64, requires_grad=True)
    >>> tl.gradcheck(lambda t: (t * t.sin()).sum(), (x,))
    True
    """
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    variables = [(k, x) for k, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    if not variables:
        raise GradcheckError("gradcheck: no input has requires_grad=True, nothing to check")
    rng = random.Random(seed)
    for _, x in variables:
        x.grad = None
    out = fn(*inputs)
    n_out = len(out._fd_flat())
    weights = [rng.uniform(-1.0, 1.0) for _ in range(n_out)]
    if getattr(out, "requires_grad", False):
        out.backward(out._fd_like(weights))
    for k, x in variables:
        analytic = [0.0] * len(x._fd_flat()) if x.grad is None else list(_flat(x.grad))
        values = x._fd_flat()
        for i, v in enumerate(values):
            with no_grad():
                x._fd_set(i, v + eps)
                up = _weighted(fn(*inputs), weights)
                x._fd_set(i, v - eps)
                down = _weighted(fn(*inputs), weights)
                x._fd_set(i, v)
            numeric = (up - down) / (2 * eps)
            # written so that a NaN on either side fails (every comparison with NaN is False)
            if not abs(numeric - analytic[i]) <= atol + rtol * abs(numeric):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"gradcheck failed for input #{k} (shape {getattr(x, 'shape', '()')}), flat "
                    f"element {i}: analytic {analytic[i]:.10g} vs numeric {numeric:.10g} "
                    f"(|diff| {abs(numeric - analytic[i]):.3g} > atol {atol} + rtol {rtol}*|numeric|)"
                )
    return True


def _flat(g):
    return g._fd_flat() if hasattr(g, "_fd_flat") else [float(g)]
