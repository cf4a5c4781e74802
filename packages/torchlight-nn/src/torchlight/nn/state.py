"""Loading a state dict into a module, with every problem reported by name.

A state dict maps dotted names (``encoder.0.weight``, ``bn.running_mean``) to values. Values
may be torchlight tensors or anything ``numpy.asarray`` accepts, so a PyTorch state dict
exported as ``{k: v.numpy() for k, v in sd.items()}`` loads unchanged.

Loading is two-phase: first every entry is checked (names, shapes, dtype kinds) and all
problems are collected into one :class:`StateDictError`; only if there are none is anything
copied. A failed load therefore never leaves a module half-updated.
"""

from collections import namedtuple

import numpy as np

import torchlight as tl
from torchlight import Tensor, TorchlightError

__all__ = ["StateDictError", "IncompatibleKeys", "load_checked"]


class StateDictError(TorchlightError, RuntimeError):
    """``load_state_dict`` found missing/unexpected keys or shapes that do not match."""


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def load_checked(module, state_dict, strict=True):
    """Check ``state_dict`` against ``module.state_dict()``, then copy it in (see module docstring).

    Shape mismatches always raise; with ``strict`` missing and unexpected keys raise too.
    Returns ``IncompatibleKeys(missing_keys, unexpected_keys)``.
    """
    own = module.state_dict(keep_vars=True)
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    problems = []
    staged = []
    for key, target in own.items():
        if key not in state_dict:
            continue
        value = state_dict[key]
        arr = value.to_numpy() if isinstance(value, Tensor) else np.asarray(value)
        if tuple(arr.shape) != tuple(target.shape):
            problems.append(
                f"size mismatch for {key}: copying a param with shape {tuple(arr.shape)} from "
                f"checkpoint, the shape in current model is {tuple(target.shape)}."
            )
            continue
        if arr.dtype.kind not in "biuf":
            problems.append(
                f"bad value for {key}: numpy dtype {arr.dtype} cannot be loaded into a {target.dtype} tensor."
            )
            continue
        staged.append((target, arr))
    if strict:
        if unexpected:
            problems.insert(
                0,
                "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".",
            )
        if missing:
            problems.insert(
                0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + "."
            )
    if problems:
        raise StateDictError(
            f"Error(s) in loading state_dict for {type(module).__name__}:\n\t"
            + "\n\t".join(problems)
        )
    with tl.no_grad():
        for target, arr in staged:
            target.copy_(tl.tensor(arr, dtype=target.dtype, device=target.device))
    return IncompatibleKeys(missing, unexpected)
