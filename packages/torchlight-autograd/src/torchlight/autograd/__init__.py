"""torchlight.autograd: the reverse-mode engine, generic over a small variable protocol.

A variable needs ``requires_grad``, ``_history`` (``None`` for leaves), ``accumulate_grad(g)``,
support for weak references (the graph links computed variables through their ``History``,
which remembers the variable weakly), and gradients that support ``+`` (and ``+=``, which may
update in place; see :mod:`~torchlight.autograd.accumulation`). ``torchlight.Tensor``
and the micrograd-style :class:`Scalar` both implement it; the engine never imports numpy.
"""

from .accumulation import PartialGradient
from .engine import backward, topological_order
from .errors import AutogradError, TorchlightError
from .function import Context, Function, History
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck
from .scalar import Scalar
from .variable import Variable

__all__ = [
    "AutogradError",
    "Context",
    "Function",
    "GradcheckError",
    "History",
    "PartialGradient",
    "Scalar",
    "TorchlightError",
    "backward",
    "enable_grad",
    "gradcheck",
    "is_grad_enabled",
    "no_grad",
    "inference_mode",
    "is_inference_mode_enabled",
    "set_grad_enabled",
    "topological_order",
    "Variable",
]
