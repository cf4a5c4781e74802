"""Collation: turning a list of samples into one batch, as PyTorch's ``default_collate`` does.

The rules, applied recursively to the structure of the first sample:

==========================  =====================================================================
sample element              batch
==========================  =====================================================================
``tl.Tensor`` of shape S    ``tl.stack`` -> shape ``(B, *S)`` (all shapes must be equal)
numpy array                 converted, then stacked like a tensor (dtype kept: int32 -> int64)
numpy scalar                1-D tensor of its dtype
``bool``                    bool tensor of shape ``(B,)``
``int``                     int64 tensor of shape ``(B,)`` (class labels)
``float``                   **float64** tensor of shape ``(B,)`` (PyTorch does the same; cast
                            with ``.float()`` where float32 is wanted)
``str`` / ``bytes``         the list of them, unchanged
mapping                     same keys, each value collated
namedtuple                  same namedtuple, each field collated
tuple                       a **list** of the collated fields (PyTorch's behaviour; ``x, y = batch``
                            works either way)
list / other sequence       same type, each position collated; all samples must be equally long
==========================  =====================================================================

Anything else raises :class:`~torchlight.data.CollateError` saying what was found. Sequences of
different lengths are not padded here: use :class:`~torchlight.data.PadCollate` or
:func:`~torchlight.data.pad_sequence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

import torchlight as tl

from .errors import CollateError

__all__ = ["default_collate", "default_convert"]

_BAD_NP_KINDS = "USOVM"  # strings, objects, void, datetimes: no tensor dtype for them


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _numbers(batch: Sequence):
    """The batch of Python numbers as a tensor; the dtype follows all elements, not only the first."""
    if all(isinstance(b, bool) for b in batch):
        return tl.tensor(list(batch), dtype=tl.bool)
    if all(isinstance(b, int) for b in batch):
        return tl.tensor(list(batch), dtype=tl.int64)
    if all(isinstance(b, (int, float)) for b in batch):
        return tl.tensor([float(b) for b in batch], dtype=tl.float64)
    kinds = sorted({type(b).__name__ for b in batch})
    raise CollateError(f"default_collate: a batch position mixes numbers with other types: {kinds}")


def _stack_tensors(batch: Sequence):
    try:  # stack checks the shapes itself: only a refusal needs them looked at again here
        return tl.stack(list(batch), 0)
    except tl.ShapeError:
        shapes = [tuple(t.shape) for t in batch]
        for k, s in enumerate(shapes):
            if s != shapes[0]:
                raise CollateError(
                    f"default_collate: cannot stack samples of shape {shapes[0]} (batch position "
                    f"0) and {s} (batch position {k}). Variable-length samples need padding: pass "
                    "collate_fn=torchlight.data.PadCollate() or use torchlight.data.pad_sequence."
                ) from None
        raise


def _is_sequence(x) -> bool:
    # lists and tuples first: the abstract-class check costs ~0.3 µs, a batch makes one per sample
    return type(x) is list or type(x) is tuple or isinstance(x, Sequence)


def default_collate(batch: Sequence):
    """Collate a list of samples into a batch (see the module docstring for the rules).

    >>> from torchlight.data import default_collate
    >>> default_collate([(tl.tensor([1.0]), 0), (tl.tensor([2.0]), 1)])
    [tensor([[1.],
            [2.]]), tensor([0, 1])]
    """
    if not _is_sequence(batch) or isinstance(batch, (str, bytes)):
        raise CollateError(f"default_collate expects a list of samples, got {type(batch).__name__}")
    if len(batch) == 0:
        raise CollateError("default_collate: cannot collate an empty batch")
    elem = batch[0]
    if isinstance(elem, tl.Tensor):
        if not all(isinstance(b, tl.Tensor) for b in batch):
            raise CollateError("default_collate: a batch position mixes tensors and non-tensors")
        return _stack_tensors(batch)
    if isinstance(elem, (str, bytes)):  # before np.generic: np.str_ is a str
        return list(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in _BAD_NP_KINDS:
            raise CollateError(
                f"default_collate: numpy arrays of dtype {elem.dtype} have no tensor equivalent"
            )
        shapes = {np.shape(b) for b in batch}
        if len(shapes) != 1:
            raise CollateError(
                f"default_collate: cannot stack numpy arrays of different shapes {sorted(shapes)}; "
                "pad them first (torchlight.data.PadCollate / pad_sequence)"
            )
        # One numpy stack and one tensor construction instead of B conversions plus a stack.
        return tl.from_numpy(np.ascontiguousarray(np.stack(batch)))
    if isinstance(elem, np.generic):
        if elem.dtype.kind in _BAD_NP_KINDS:
            raise CollateError(
                f"default_collate: numpy scalars of dtype {elem.dtype} are not supported"
            )
        return tl.from_numpy(np.asarray(batch))
    if isinstance(elem, (bool, int, float)):
        return _numbers(batch)
    if isinstance(elem, Mapping):
        keys = list(elem)
        for k, d in enumerate(batch):
            if not isinstance(d, Mapping) or set(d) != set(keys):
                found = sorted(map(str, d)) if isinstance(d, Mapping) else type(d).__name__
                raise CollateError(
                    f"default_collate: sample {k} has keys {found}, sample 0 has "
                    f"{sorted(map(str, keys))}; every sample needs the same keys"
                )
        collated = {key: default_collate([d[key] for d in batch]) for key in keys}
        try:
            return cast(Any, type(elem))(collated)  # the sample's own mapping class
        except TypeError:  # a mapping type that cannot be built from a dict
            return collated
    if _is_sequence(elem):
        size = len(elem)
        for k, s in enumerate(batch):
            if not _is_sequence(s) or len(s) != size:
                raise CollateError(
                    f"default_collate: each element in the batch should be of equal size; sample 0 "
                    f"has {size} fields, sample {k} has "
                    f"{len(s) if isinstance(s, Sequence) else type(s).__name__}"
                )
        transposed = [default_collate(list(samples)) for samples in zip(*batch)]
        if _is_namedtuple(elem):
            return type(elem)(*transposed)
        if isinstance(elem, tuple):
            return transposed  # PyTorch returns a list here too
        try:
            return cast(Any, type(elem))(transposed)  # the sample's own sequence class
        except TypeError:
            return transposed
    raise CollateError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, strings, dicts or "
        f"lists; found {type(elem).__module__}.{type(elem).__qualname__}. Pass a collate_fn "
        "that handles it."
    )


def default_convert(data):
    """What a loader with ``batch_size=None`` applies to each sample: numpy arrays (and numpy
    scalars) become tensors, containers are walked, everything else is returned unchanged."""
    if isinstance(data, tl.Tensor) or isinstance(data, (str, bytes)):
        return data
    if isinstance(data, (np.ndarray, np.generic)):
        if data.dtype.kind in _BAD_NP_KINDS:
            return data
        return tl.from_numpy(np.ascontiguousarray(data))
    if isinstance(data, Mapping):
        converted = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # PyTorch's choice, kept for consistency
    if isinstance(data, Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
